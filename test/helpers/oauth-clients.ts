import type { TestApi } from './app.ts';

/** Shared by the test/accounts-*.test.ts files: OAuth clients registered over HTTP (not a test file itself). */

/** A fetch init that POSTs `body` as JSON. */
export const json = (body: unknown, headers: Record<string, string> = {}) => ({
  method: 'POST',
  headers: { 'content-type': 'application/json', ...headers },
  body: JSON.stringify(body),
});

/** POST /api/v1/clients as anyone may (dynamic registration); the raw answer. */
export async function registerClient(api: Pick<TestApi, 'fetch'>, body: unknown): Promise<Response> {
  return api.fetch('/api/v1/clients', json(body));
}

export interface TestClient {
  client_id: string;
  client_secret: string;
  /** The client's credentials as an HTTP Basic authorization header. */
  basic: string;
}

/** A freshly registered third-party client with these redirect URIs. */
export async function createClient(
  api: Pick<TestApi, 'fetch'>,
  clientName = `App ${Math.random()}`,
  redirectUris: string[] = ['https://app.example.test/cb'],
): Promise<TestClient> {
  const res = await registerClient(api, { client_name: clientName, redirect_uris: redirectUris });
  const c = (await res.json()) as { client_id: string; client_secret: string };
  return { ...c, basic: `Basic ${Buffer.from(`${c.client_id}:${c.client_secret}`).toString('base64')}` };
}
