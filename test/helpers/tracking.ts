import { issueApiKey } from '../../shared/accounts/api-keys.ts';
import type { Role } from '../../shared/db/schema/accounts.ts';
import { startTestApi, type TestApi, type TestApiOptions } from './app.ts';
import type { Res } from './places.ts';
import { type TestAccount, testClientId } from './tokens.ts';

/** A tracking user for tests: their account, bearer token and ldid (the tracking user id). */
export type TrackingTestUser = TestAccount & { token: string };

export interface TrackingTestApi extends TestApi {
  /** A live x-api-key (of a registered OAuth client). */
  apiKey: string;
  /** A new account with a bearer token. */
  user: (roles?: Role[], fields?: Partial<TestAccount>) => Promise<TrackingTestUser>;
  /**
   * Calls `/v2<path>` with the API key, the user's token (unless `user` is null) and a JSON body;
   * the body is parsed when it is JSON.
   */
  call: (
    method: string,
    path: string,
    user: TrackingTestUser | null,
    options?: { body?: unknown; headers?: Record<string, string>; raw?: RequestInit['body'] },
  ) => Promise<Res>;
}

/**
 * The whole API on its own database, with an API key, for the tracking tests (`services` and
 * `publicUrl`, `logger` as for startTestApi).
 */
export async function startTrackingApi(options: TestApiOptions = {}): Promise<TrackingTestApi> {
  const api = await startTestApi(null, options);
  // The key of the client the tests' tokens are issued to (an x-api-key is bound to its client).
  const { api_key: apiKey } = await issueApiKey(api.database.db, await testClientId(api.database.db), 'tests');
  return {
    ...api,
    apiKey,
    user: (roles, fields) => api.account(roles, fields),
    call: async (method, path, user, opts = {}) => {
      const headers: Record<string, string> = { 'x-api-key': apiKey, ...opts.headers };
      if (user) headers.authorization = `Bearer ${user.token}`;
      let body: RequestInit['body'] | undefined = opts.raw;
      if (opts.body !== undefined) {
        headers['content-type'] ??= 'application/ld+json';
        body = JSON.stringify(opts.body);
      }
      const res = await api.fetch(`/v2${path}`, { method, headers, ...(body !== undefined ? { body } : {}) });
      const text = await res.text();
      const type = res.headers.get('content-type') ?? '';
      const parsed = text && /json/.test(type) ? JSON.parse(text) : text || undefined;
      return { status: res.status, body: parsed, headers: res.headers };
    },
  };
}
