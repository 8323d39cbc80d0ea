import type { TestApi } from './app.ts';

/** Shared by the test/places-*.test.ts files (not a test file itself). */
export interface Res {
  status: number;
  // biome-ignore lint/suspicious/noExplicitAny: test responses are checked field by field
  body: any;
  headers: Headers;
}

export async function call(
  api: TestApi,
  method: string,
  path: string,
  options: { token?: string; body?: unknown; headers?: Record<string, string> } = {},
): Promise<Res> {
  const headers: Record<string, string> = { ...options.headers };
  if (options.token) headers.authorization = `Bearer ${options.token}`;
  if (options.body !== undefined) headers['content-type'] = 'application/json';
  const res = await api.fetch(`/api/v1${path}`, {
    method,
    headers,
    ...(options.body !== undefined ? { body: JSON.stringify(options.body) } : {}),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined, headers: res.headers };
}

/** A valid variant-B body: a tennis place in Lille unless overridden. */
export function placeBody(overrides: Record<string, unknown> = {}) {
  return {
    geometry: { type: 'Point', coordinates: [3.0573, 50.6292] },
    name: `Court ${Math.random().toString(36).slice(2, 8)}`,
    country: 'FR',
    activities: [{ sport_id: 357, tags: ['floodlight'], surface: 'clay', courts: 4 }],
    ...overrides,
  };
}

/** Creates a place as staff (approved at once); returns its properties. */
export async function createPlace(api: TestApi, token: string, overrides: Record<string, unknown> = {}) {
  const res = await call(api, 'POST', '/places', { token, body: placeBody(overrides) });
  if (res.status !== 201) throw new Error(`create failed ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.properties;
}

/** The paths named in a problem+json 422. */
export const paths = (res: Res): string[] => (res.body?.errors ?? []).map((e: { path: string }) => e.path);

/** A partner of the partners service with this slug, which places may then name as their `partner`. */
export async function createPartner(api: TestApi, slug: string): Promise<void> {
  await api.database.db
    .insertInto('partners')
    .values({ slug, title: slug, source: 'test', link: `https://${slug}.test`, lat: 0, lng: 0, user_id: 1 })
    .execute();
}
