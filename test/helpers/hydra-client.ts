import type { TrackingTestApi, TrackingTestUser } from './tracking.ts';

/** Shared by the test/tracking-hydra-*.test.ts files (not a test file itself). */

// biome-ignore lint/suspicious/noExplicitAny: JSON-LD documents are checked member by member
export type Doc = any;

/** The IRIs of the API documentation of `api`, and reads of its /v2 resources as a Hydra client makes them. */
export function hydraClient(api: TrackingTestApi) {
  const DOCS = `${api.config.PUBLIC_URL}/v2/docs.jsonld`;
  const VOCAB = `${DOCS}#`;
  const HYDRA = 'http://www.w3.org/ns/hydra/core#';
  const LINK = `<${DOCS}>; rel="http://www.w3.org/ns/hydra/core#apiDocumentation"`;

  /** GET /v2<path> with the key and the user's token (or neither), as JSON-LD. */
  async function get(path: string, user: TrackingTestUser | null, headers: Record<string, string> = {}) {
    const res = await api.call('GET', path, user, { headers: { accept: 'application/ld+json', ...headers } });
    return res as { status: number; body: Doc; headers: Headers };
  }

  /** The collections the entrypoint links to, with the class name the docs give each. */
  async function entrypointCollections(): Promise<{ name: string; path: string }[]> {
    const entry = await get('/', null);
    return Object.entries(entry.body)
      .filter(([k]) => !k.startsWith('@'))
      .map(([name, iri]) => ({ name, path: String(iri).replace(/^\/v2/, '') }));
  }

  /** The filters /openapi.json documents for a list (its query parameters, paging aside). */
  async function documentedFilters(path: string): Promise<string[]> {
    const res = await api.fetch('/openapi.json');
    if (res.status !== 200) throw new Error(`/openapi.json answered ${res.status}: the filters cannot be compared`);
    const doc = (await res.json()) as {
      paths: Record<string, { get?: { parameters?: { in: string; name: string }[] } }>;
    };
    const parameters = doc.paths[`/v2${path}`]?.get?.parameters ?? [];
    return parameters.filter((p) => p.in === 'query' && p.name !== 'page' && p.name !== 'limit').map((p) => p.name);
  }

  return { DOCS, VOCAB, HYDRA, LINK, get, entrypointCollections, documentedFilters };
}
