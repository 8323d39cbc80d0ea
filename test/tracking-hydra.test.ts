import { parseHydraDocumentation } from '@api-platform/api-doc-parser';
import test from 'ava';
import jsonld from 'jsonld';
import { z } from 'zod';
import type { AppContext } from '../api/context.ts';
import type { HydraView } from '../api/http/formats/format.ts';
import type { HydraClass } from '../api/http/formats/hydra-classes.ts';
import { classNamedIn, classOfIriIn, classProperties } from '../api/http/formats/hydra-properties.ts';
import { Resource } from '../api/http/resource.ts';
import { ApiRouter } from '../api/http/route.ts';
import type { ServiceModule } from '../api/service-module.ts';
import { SERVICES } from '../api/services.ts';
import { trackingService } from '../api/tracking/index.ts';
import { listFilterOf, listFilterShape, orderOf, orderShape, pagingShape } from '../api/tracking/schemas.ts';
import type { Db } from '../shared/db/database.ts';
import { notFoundError } from '../shared/errors.ts';
import { startTrackingApi, type TrackingTestUser } from './helpers/tracking.ts';

// The real /v2 service, whatever resources it has when the test runs (the walks below find them
// through the entrypoint), plus one throwaway Hydra resource over the seeded sports for paging
// and filters. Every response is expanded with the `jsonld` package, contexts loaded from this
// server only, and the documentation is parsed by API Platform's own api-doc-parser.

interface DemoSport {
  id: number;
  slug: string;
  active: boolean;
  parent_id: number | null;
}

const demoView: HydraView<DemoSport, typeof demoItem> = {
  type: 'DemoSport',
  path: '/v2/demo_sports',
  id: (s) => String(s.id),
  fields: (s) => ({
    id: s.id,
    slug: s.slug,
    active: s.active,
    parent: s.parent_id === null ? null : `/v2/demo_sports/${s.parent_id}`,
  }),
};

const demoItem = z.object({
  id: z.number().int(),
  slug: z.string().meta({ description: 'the English name, slugified' }),
  active: z.boolean(),
  parent: z.string().nullable().meta({ format: 'iri-reference', example: '/v2/demo_sports/121' }),
});

const demoQuery = z.object({
  ...pagingShape,
  ...listFilterShape('id', z.coerce.number().int()),
  active: z.enum(['0', '1']).optional(),
  ...orderShape(['id', 'slug']),
});

async function demoPage(db: Db, query: z.output<typeof demoQuery>, querystring: string) {
  let q = db.selectFrom('sports').select(['id', 'slug', 'active', 'parent_id']);
  const ids = listFilterOf<number>(query, 'id');
  if (ids) q = q.where('id', 'in', ids.length ? ids : [-1]);
  if (query.active) q = q.where('active', '=', query.active === '1');
  const [items, total] = await Promise.all([
    orderOf(query, querystring, ['id', 'slug'])
      .reduce((acc, o) => acc.orderBy(o.prop, o.direction), q)
      .orderBy('id')
      .limit(query.limit)
      .offset((query.page - 1) * query.limit)
      .execute(),
    q
      .clearSelect()
      .select((eb) => eb.fn.countAll<string>().as('n'))
      .executeTakeFirstOrThrow(),
  ]);
  return { items, page: query.page, limit: query.limit, total: Number(total.n) };
}

function demoRouter(app: AppContext) {
  const router = new ApiRouter({
    prefix: '/v2',
    errorFormat: 'hydra',
    registry: app.registry,
    bodyLimitBytes: app.config.bodyLimitBytes,
    tag: 'demo',
  });
  new Resource(router, app, {
    path: '/demo_sports',
    itemPath: '/:id',
    itemParams: z.object({ id: z.coerce.number().int().positive() }),
    format: 'hydra',
    item: demoItem,
    hydra: demoView,
    access: { read: 'bearer+key', write: 'bearer+key' },
  })
    .list({
      summary: 'Demo sports',
      query: demoQuery,
      handler: ({ query, ctx }) => demoPage(app.db, query, ctx.querystring),
    })
    .get({
      summary: 'One demo sport',
      handler: async ({ params }) => {
        const sport = await app.db
          .selectFrom('sports')
          .select(['id', 'slug', 'active', 'parent_id'])
          .where('id', '=', params.id)
          .executeTakeFirst();
        if (!sport) throw notFoundError(`No demo sport ${params.id}`);
        return sport;
      },
    });
  return router.router;
}

const tracking: ServiceModule = {
  ...trackingService,
  routers: async (app) => [...(await trackingService.routers(app)), demoRouter(app)],
};
const api = await startTrackingApi({
  publicUrl: true,
  services: SERVICES.map((s) => (s.name === 'tracking' ? tracking : s)),
});
test.after.always(() => api.close());

const DOCS = `${api.config.PUBLIC_URL}/v2/docs.jsonld`;
const VOCAB = `${DOCS}#`;
const HYDRA = 'http://www.w3.org/ns/hydra/core#';
const LINK = `<${DOCS}>; rel="http://www.w3.org/ns/hydra/core#apiDocumentation"`;

// biome-ignore lint/suspicious/noExplicitAny: JSON-LD documents are checked member by member
type Doc = any;

/** GET /v2<path> with the key and the user's token (or neither), as JSON-LD. */
async function get(path: string, user: TrackingTestUser | null, headers: Record<string, string> = {}) {
  const res = await api.call('GET', path, user, { headers: { accept: 'application/ld+json', ...headers } });
  return res as { status: number; body: Doc; headers: Headers };
}

const contextsLoaded = new Set<string>();

/** Contexts come from this server only (a test never reaches the internet). */
async function documentLoader(url: string) {
  if (!url.startsWith(`${api.url}/`)) throw new Error(`refusing to load ${url}: not this server`);
  const res = await fetch(url, { headers: { accept: 'application/ld+json' } });
  if (res.status !== 200) throw new Error(`${url} answered ${res.status}`);
  contextsLoaded.add(new URL(url).pathname);
  return { contextUrl: undefined, documentUrl: url, document: await res.json() };
}

/**
 * Expands a document fetched from `path` the way a JSON-LD client does. Safe mode fails on
 * anything dropped, except for a context document, which holds no data (it expands to nothing).
 */
function expand(body: Doc, path: string): Promise<Doc[]> {
  const options = { base: `${api.url}/v2${path}`, documentLoader, safe: !path.startsWith('/contexts/') };
  return jsonld.expand(body, options as jsonld.Options.Expand) as Promise<Doc[]>;
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

test('the Link header announces the API documentation on every /v2 response, errors included', async (t) => {
  const u = await api.user();
  const responses = [
    await api.call('GET', '/', null),
    await api.call('GET', '/docs.jsonld', null),
    await api.call('GET', '/contexts/Entrypoint', null),
    await api.call('GET', '/demo_sports', u),
    await api.call('GET', '/demo_sports/121', u),
    await api.call('GET', '/demo_sports', null), // 401
    await api.call('GET', '/demo_sports/999999', u), // 404
    await api.call('GET', '/demo_sports?limit=500', u), // 422
    await api.call('GET', '/demo_sports', u, { headers: { accept: 'text/html' } }), // 406
    await api.call('GET', '/no/such/route', u), // 404 of an unknown route
    await api.call('DELETE', '/demo_sports', u), // 405
    // 400: a body is read by the operation that takes it (the demo takes none).
    await api.call('POST', '/user_devices', u, { raw: '{', headers: { 'content-type': 'application/json' } }),
  ];
  t.deepEqual(
    responses.map((r) => r.status),
    [200, 200, 200, 200, 200, 401, 404, 422, 406, 404, 405, 400],
  );
  for (const r of responses) t.is(r.headers.get('link'), LINK, String(r.status));
  // Only under /v2: other services do not announce it.
  t.is((await api.fetch('/api/v1/partners')).headers.get('link'), null);
  t.is((await api.fetch('/health')).headers.get('link'), null);
  // Browsers may read it (API Platform Admin runs in one).
  const cors = await api.fetch('/v2/', { headers: { origin: 'https://admin.example' } });
  t.regex(cors.headers.get('access-control-expose-headers') ?? '', /\bLink\b/);
});

test('the entrypoint (/v2/ and /v2) links every collection; public like the docs and contexts', async (t) => {
  const slash = await api.fetch('/v2/');
  const bare = await api.fetch('/v2');
  t.is(slash.status, 200);
  t.regex(slash.headers.get('content-type') ?? '', /^application\/ld\+json/);
  const body = (await slash.json()) as Doc;
  t.deepEqual(await bare.json(), body);
  t.like(body, { '@context': '/v2/contexts/Entrypoint', '@id': '/v2/', '@type': 'Entrypoint' });
  t.is(body.demoSport, '/v2/demo_sports');
  for (const { path } of await entrypointCollections()) t.regex(path, /^\/[a-z_]+$/);
  // No credentials at all (no key, no token): they hold no user data.
  for (const path of ['/v2/', '/v2/docs.jsonld', '/v2/contexts/DemoSport'])
    t.is((await api.fetch(path)).status, 200, path);
});

test('every collection of the entrypoint is a hydra:Collection with members, totalItems, view and search', async (t) => {
  const u = await api.user();
  const collections = await entrypointCollections();
  t.true(collections.length >= 1);
  for (const { name, path } of collections) {
    const res = await get(path, u);
    t.is(res.status, 200, path);
    const body = res.body;
    const type = (name.charAt(0).toUpperCase() + name.slice(1)) as string;
    t.like(body, { '@context': `/v2/contexts/${type}`, '@id': `/v2${path}`, '@type': 'hydra:Collection' }, path);
    t.true(Array.isArray(body['hydra:member']), path);
    for (const member of body['hydra:member']) {
      t.is(member['@type'], type, path);
      t.regex(member['@id'], new RegExp(`^/v2${path}/[^/]+$`), path);
    }
    t.true(Number.isInteger(body['hydra:totalItems']) && body['hydra:totalItems'] >= body['hydra:member'].length);
    const view = body['hydra:view'];
    t.like(view, { '@id': `/v2${path}`, '@type': 'hydra:PartialCollectionView' }, path);
    t.regex(view['hydra:first'], new RegExp(`^/v2${path}\\?(.*&)?page=1(&|$)`), path);
    t.regex(view['hydra:last'], new RegExp(`^/v2${path}\\?(.*&)?page=\\d+(&|$)`), path);
    t.false('hydra:previous' in view, path);
    const filters = await documentedFilters(path);
    if (filters.length === 0) t.false('hydra:search' in body, path);
    else {
      const search = body['hydra:search'];
      t.like(search, { '@type': 'hydra:IriTemplate', 'hydra:variableRepresentation': 'BasicRepresentation' }, path);
      t.is(search['hydra:template'], `/v2${path}{?${filters.join(',')}}`, path);
      t.deepEqual(
        search['hydra:mapping'].map((m: Doc) => m.variable),
        filters,
        path,
      );
      for (const m of search['hydra:mapping']) {
        t.is(m['@type'], 'IriTemplateMapping', path);
        t.true(typeof m.property === 'string' && m.property.length > 0 && !/[[\]]/.test(m.property), path);
        t.is(m.required, false, path);
      }
    }
    // Paged one item at a time, a collection of several items links its neighbours.
    if (body['hydra:totalItems'] >= 3) {
      const second = (await get(`${path}?limit=1&page=2`, u)).body;
      t.is(second['hydra:member'].length, 1, path);
      const v = second['hydra:view'];
      t.is(v['@id'], `/v2${path}?limit=1&page=2`, path);
      t.is(v['hydra:first'], `/v2${path}?limit=1&page=1`, path);
      t.is(v['hydra:previous'], `/v2${path}?limit=1&page=1`, path);
      t.is(v['hydra:next'], `/v2${path}?limit=1&page=3`, path);
      t.is(v['hydra:last'], `/v2${path}?limit=1&page=${body['hydra:totalItems']}`, path);
    }
  }
});

test('paging links: first, last, previous and next from the first page to past the last', async (t) => {
  const u = await api.user();
  const page = async (n: number) => (await get(`/demo_sports?active=1&limit=7&page=${n}`, u)).body;
  const first = await page(1);
  const total = first['hydra:totalItems'];
  const last = Math.ceil(total / 7);
  t.true(last >= 3);
  const at = (n: number) => `/v2/demo_sports?active=1&limit=7&page=${n}`;
  t.deepEqual(first['hydra:view'], {
    '@id': at(1),
    '@type': 'hydra:PartialCollectionView',
    'hydra:first': at(1),
    'hydra:last': at(last),
    'hydra:next': at(2),
  });
  t.deepEqual((await page(2))['hydra:view'], {
    '@id': at(2),
    '@type': 'hydra:PartialCollectionView',
    'hydra:first': at(1),
    'hydra:last': at(last),
    'hydra:previous': at(1),
    'hydra:next': at(3),
  });
  const end = await page(last);
  t.is(end['hydra:member'].length, total - (last - 1) * 7);
  t.false('hydra:next' in end['hydra:view']);
  t.is(end['hydra:view']['hydra:previous'], at(last - 1));
  const beyond = await page(last + 1);
  t.deepEqual(beyond['hydra:member'], []);
  t.is(beyond['hydra:totalItems'], total);
  // Without a limit the default one is written into the links.
  t.is((await get('/demo_sports', u)).body['hydra:view']['hydra:next'], '/v2/demo_sports?page=2&limit=30');
});

test('hydra:search names each filter with the property it is about; the filters work', async (t) => {
  const u = await api.user();
  const res = await get('/demo_sports?id[]=121&id[]=388&order[id]=desc', u);
  t.deepEqual(
    res.body['hydra:member'].map((m: Doc) => m.id),
    [388, 121],
  );
  const search = res.body['hydra:search'];
  t.is(search['hydra:template'], '/v2/demo_sports{?id,id[],active,order[id],order[slug]}');
  t.deepEqual(
    search['hydra:mapping'].map((m: Doc) => [m.variable, m.property]),
    [
      ['id', 'id'],
      ['id[]', 'id'],
      ['active', 'active'],
      ['order[id]', 'id'],
      ['order[slug]', 'slug'],
    ],
  );
});

test('errors: ConstraintViolationList for 422, hydra:Error otherwise, as API Platform 3 writes them', async (t) => {
  const u = await api.user();
  const invalid = await get('/demo_sports?limit=500&page=0', u);
  t.is(invalid.status, 422);
  t.like(invalid.body, {
    '@context': '/v2/contexts/ConstraintViolationList',
    '@id': '/v2/errors/422',
    '@type': 'ConstraintViolationList',
    'hydra:title': 'An error occurred',
    status: 422,
    title: 'An error occurred',
  });
  t.deepEqual(
    invalid.body.violations.map((v: Doc) => v.propertyPath),
    ['page', 'limit'],
  );
  for (const v of invalid.body.violations) t.is(typeof v.message, 'string');
  t.is(invalid.body['hydra:description'], invalid.body.detail);
  t.regex(invalid.body.detail, /^page: .+\nlimit: .+$/);
  const missing = await get('/demo_sports/999999', u);
  t.is(missing.status, 404);
  t.like(missing.body, {
    '@context': '/v2/contexts/Error',
    '@id': '/v2/errors/404',
    '@type': 'hydra:Error',
    'hydra:title': 'An error occurred',
    'hydra:description': 'No demo sport 999999',
    detail: 'No demo sport 999999',
    status: 404,
  });
  const unknownType = await get('/contexts/Nothing', null);
  t.is(unknownType.status, 404);
  t.is(unknownType.body['@type'], 'hydra:Error');
  t.is((await get('/contexts/..%2Fdocs', null)).status, 404);
});

test('contexts: every @type served has one, mapping each property to Type/property and links to @id', async (t) => {
  const u = await api.user();
  const types = new Map<string, Set<string>>();
  const note = (node: Doc) => {
    const type = node['@type'];
    if (typeof type !== 'string' || type.startsWith('hydra:')) return;
    const props = types.get(type) ?? new Set<string>();
    for (const k of Object.keys(node)) if (!k.startsWith('@')) props.add(k);
    types.set(type, props);
  };
  note((await get('/', null)).body);
  for (const { path } of await entrypointCollections()) {
    const list = (await get(`${path}?limit=5`, u)).body;
    for (const member of list['hydra:member']) {
      note(member);
      note((await get(member['@id'].replace(/^\/v2/, ''), u)).body);
    }
  }
  note((await get('/demo_sports?limit=500', u)).body); // ConstraintViolationList
  t.true(types.has('DemoSport') && types.has('Entrypoint') && types.has('ConstraintViolationList'));
  for (const [type, props] of types) {
    const res = await get(`/contexts/${type}`, null);
    t.is(res.status, 200, type);
    const context = res.body['@context'];
    t.is(context['@vocab'], VOCAB, type);
    t.is(context.hydra, HYDRA, type);
    // Resources map every member; errors keep API Platform's RFC 7807 members on the @vocab.
    if (type !== 'ConstraintViolationList')
      for (const prop of props) if (!prop.includes(':')) t.truthy(context[prop], `${type}.${prop} is mapped`);
  }
  t.deepEqual((await get('/contexts/DemoSport', null)).body['@context'], {
    '@vocab': VOCAB,
    hydra: HYDRA,
    id: 'DemoSport/id',
    slug: 'DemoSport/slug',
    active: 'DemoSport/active',
    parent: { '@id': 'DemoSport/parent', '@type': '@id' },
  });
  t.is((await get('/contexts/Error', null)).status, 200);
});

test('every /v2 response expands with the jsonld package (safe mode), contexts loaded from the server', async (t) => {
  const u = await api.user();
  const documents: { path: string; body: Doc }[] = [];
  const keep = async (path: string, user: TrackingTestUser | null, headers: Record<string, string> = {}) => {
    const res = await get(path, user, headers);
    t.regex(res.headers.get('content-type') ?? '', /^application\/ld\+json/, path);
    documents.push({ path, body: res.body });
    return res.body;
  };
  // The caller's own collections get one object each, from the spec's bodies, so their items
  // (an activity with its datastream and locations, a share embedding it) are expanded too.
  const me = `/v2/users/${u.ldid}`;
  const writes = [
    await api.call('POST', '/activities', u, {
      body: {
        name: 'Morning run',
        user: me,
        sport: '/v2/sports/121',
        startdate: '2024-05-01T08:30:00+02:00',
        duration: 20,
        dataSummaries: { '5': 60, '24': 20 },
        datastream: { '0': { '5': 0, '1': 120 }, '10': { '5': 30, '1': 130, '20': 1 }, '20': { '5': 60 } },
        locations: {
          '0': { latitude: 50.63, longitude: 3.06, elevation: 20 },
          '20': { latitude: 50.6305, longitude: 3.0605, elevation: 21 },
        },
      },
    }),
    await api.call('POST', '/user_measures', u, {
      body: { user: me, datatype: '/v2/datatypes/181', value: 72500, date: '2024-05-01T08:30:00+02:00' },
    }),
  ];
  for (const w of writes) {
    t.is(w.status, 201, JSON.stringify(w.body));
    documents.push({ path: '/activities', body: w.body });
  }
  const share = await api.call('POST', '/share_activities', u, {
    body: { user: me, activity: writes[0]?.body['@id'] },
  });
  t.is(share.status, 201, JSON.stringify(share.body));
  documents.push({ path: '/share_activities', body: share.body });
  await keep('/', null);
  await keep('/docs.jsonld', null);
  for (const type of ['Entrypoint', 'DemoSport', 'ConstraintViolationList', 'Error'])
    await keep(`/contexts/${type}`, null);
  for (const { path } of await entrypointCollections()) {
    const list = await keep(`${path}?limit=3&page=1`, u);
    const first = list['hydra:member'][0];
    if (first) await keep(first['@id'].replace(/^\/v2/, ''), u);
  }
  await keep('/demo_sports?limit=500', u); // 422
  await keep('/demo_sports/999999', u); // 404
  await keep('/demo_sports', null); // 401
  await keep('/demo_sports', u, { accept: 'text/csv' }); // 406
  await keep('/nowhere', u); // unknown route
  const expanded = new Map<string, Doc[]>();
  for (const { path, body } of documents) {
    try {
      expanded.set(path, await expand(body, path));
    } catch (error) {
      t.fail(`${path}: ${(error as Error).message} ${JSON.stringify((error as { details?: unknown }).details ?? {})}`);
    }
  }
  t.true(contextsLoaded.has('/v2/contexts/DemoSport') && contextsLoaded.has('/v2/contexts/Error'));
  // What the expansion means: the collection, its members and their links, in absolute IRIs.
  const [collection] = expanded.get('/demo_sports?limit=3&page=1') ?? [];
  t.deepEqual(collection['@type'], [`${HYDRA}Collection`]);
  t.is(collection['@id'], `${api.url}/v2/demo_sports`);
  const [member] = collection[`${HYDRA}member`];
  t.deepEqual(member['@type'], [`${VOCAB}DemoSport`]);
  t.is(typeof member[`${VOCAB}DemoSport/slug`][0]['@value'], 'string');
  t.is(typeof collection[`${HYDRA}totalItems`][0]['@value'], 'number');
  // A link expands to the absolute IRI of the linked node.
  const child = await api.database.db
    .selectFrom('sports')
    .select('id')
    .where('parent_id', '=', 121)
    .executeTakeFirstOrThrow();
  const [node] = await expand((await get(`/demo_sports/${child.id}`, u)).body, `/demo_sports/${child.id}`);
  t.deepEqual(node[`${VOCAB}DemoSport/parent`], [{ '@id': `${api.url}/v2/demo_sports/121` }]);
  t.is(node['@id'], `${api.url}/v2/demo_sports/${child.id}`);
  const [violations] = expanded.get('/demo_sports?limit=500') ?? [];
  t.deepEqual(violations['@type'], [`${VOCAB}ConstraintViolationList`]);
  t.truthy(violations[`${VOCAB}ConstraintViolationList/violations`][0][`${VOCAB}ConstraintViolation/propertyPath`]);
  const [entry] = expanded.get('/') ?? [];
  t.deepEqual(entry[`${VOCAB}Entrypoint/demoSport`], [{ '@id': `${api.url}/v2/demo_sports` }]);
});

test("API Platform's api-doc-parser builds a client: every collection a resource with fields, operations and filters", async (t) => {
  const u = await api.user();
  const headers = { authorization: `Bearer ${u.token}`, 'x-api-key': api.apiKey };
  let parsed: Awaited<ReturnType<typeof parseHydraDocumentation>>;
  try {
    parsed = await parseHydraDocumentation(`${api.url}/v2/`, { headers });
  } catch (failure) {
    // The parser throws a plain object {error, response, status}.
    t.fail(`parseHydraDocumentation: ${String((failure as { error?: unknown }).error ?? failure)}`);
    return;
  }
  t.is(parsed.status, 200);
  t.is(parsed.api.title, 'Sports tracking data');
  const resources = parsed.api.resources ?? [];
  const collections = await entrypointCollections();
  t.deepEqual(resources.map((r) => r.url).sort(), collections.map((c) => `${api.url}/v2${c.path}`).sort());
  for (const resource of resources) {
    t.regex(resource.id ?? '', new RegExp(`^${VOCAB}[A-Z]\\w*$`), resource.name);
    t.true((resource.readableFields ?? []).length > 0, resource.name);
    const types = (resource.operations ?? []).map((o) => o.type);
    t.true(types.includes('list'), resource.name);
    if (types.includes('create') || types.includes('edit'))
      t.true((resource.writableFields ?? []).length > 0, `${resource.name} has writable fields`);
    for (const field of resource.fields ?? [])
      t.true(field.name.length > 0 && !field.name.includes('/'), resource.name);
  }
  const demo = resources.find((r) => r.name === 'demo_sports');
  t.truthy(demo);
  const field = (name: string) => demo?.fields?.find((f) => f.name === name);
  t.like(field('id'), { type: 'integer', range: 'http://www.w3.org/2001/XMLSchema#integer' });
  t.like(field('slug'), { type: 'string', description: 'the English name, slugified' });
  t.like(field('active'), { type: 'boolean' });
  t.is(field('parent')?.maxCardinality, 1);
  t.is((field('parent')?.reference as { name?: string } | null)?.name, 'demo_sports');
  t.deepEqual(
    demo?.operations?.map((o) => [o.type, o.method]),
    [
      ['list', 'GET'],
      ['show', 'GET'],
    ],
  );
  const parameters = (await demo?.getParameters?.()) ?? [];
  t.deepEqual(
    parameters.map((p) => [p.variable, p.range]),
    [
      ['id', 'http://www.w3.org/2001/XMLSchema#integer'],
      ['id[]', 'http://www.w3.org/2001/XMLSchema#integer'],
      ['active', 'http://www.w3.org/2001/XMLSchema#boolean'],
      ['order[id]', 'http://www.w3.org/2001/XMLSchema#integer'],
      ['order[slug]', 'http://www.w3.org/2001/XMLSchema#string'],
    ],
  );
});

test('docs.jsonld: each class with its properties and operations, the entrypoint class, the violations', async (t) => {
  const res = await get('/docs.jsonld', null);
  t.is(res.status, 200);
  const docs = res.body;
  t.like(docs, { '@id': '/v2/docs.jsonld', 'hydra:entrypoint': '/v2/', 'hydra:title': 'Sports tracking data' });
  t.is(docs['@context']['@vocab'], VOCAB);
  t.is(docs['@context']['@base'], DOCS);
  const classes = new Map<string, Doc>(docs['hydra:supportedClass'].map((c: Doc) => [c['@id'], c]));
  for (const id of ['#Entrypoint', '#ConstraintViolation', '#ConstraintViolationList', '#DemoSport'])
    t.true(classes.has(id), id);
  t.is(classes.get('#ConstraintViolationList').subClassOf, 'hydra:Error');
  const entrypointClass = classes.get('#Entrypoint');
  const collections = await entrypointCollections();
  t.deepEqual(
    entrypointClass['hydra:supportedProperty'].map((p: Doc) => p['hydra:property']['@id']),
    collections.map((c) => `#Entrypoint/${c.name}`),
  );
  for (const p of entrypointClass['hydra:supportedProperty']) {
    const property = p['hydra:property'];
    const [collection, members] = property['rdfs:range'];
    t.deepEqual(collection, { '@id': 'hydra:Collection' });
    const type = members['owl:equivalentClass']['owl:allValuesFrom']['@id'];
    t.true(classes.has(type), type);
    t.like(property['hydra:supportedOperation'][0], { 'hydra:method': 'GET', returns: 'hydra:Collection' });
  }
  for (const [id, cls] of classes) {
    if (id === '#Entrypoint') continue;
    t.is(cls['@type'], 'hydra:Class', id);
    t.truthy(cls['hydra:title'], id);
    const type = id.slice(1);
    const properties = cls['hydra:supportedProperty'] as Doc[];
    for (const p of properties) {
      t.is(p['@type'], 'hydra:SupportedProperty', id);
      t.regex(p['hydra:property']['@id'], new RegExp(`^#${type}/\\w+$`), id);
      t.is(p['hydra:property'].domain, id);
      t.is(p['hydra:title'], p['hydra:property']['rdfs:label'], id);
      for (const flag of ['hydra:readable', 'hydra:writeable', 'hydra:required'])
        t.is(typeof p[flag], 'boolean', `${id} ${flag}`);
      t.true(p['hydra:readable'] || p['hydra:writeable'], id);
      if (p['hydra:property']['@type'] === 'hydra:Link' && p['hydra:property'].range)
        t.regex(p['hydra:property'].range, /^#[A-Z]\w*$/, id);
    }
    for (const op of cls['hydra:supportedOperation'] ?? []) {
      t.true(['GET', 'POST', 'PUT', 'PATCH', 'DELETE'].includes(op['hydra:method']), id);
      t.truthy(op['hydra:title'], id);
      t.truthy(op.returns, id);
      if (op['hydra:method'] === 'POST' || op['hydra:method'] === 'PUT') t.is(op.expects, id);
      if (op['hydra:method'] === 'DELETE') t.is(op.returns, 'owl:Nothing');
    }
    // The class's properties are the members its context maps.
    if (!id.startsWith('#ConstraintViolation')) {
      const context = (await get(`/contexts/${type}`, null)).body['@context'];
      t.deepEqual(
        properties.map((p) => p['hydra:title']).sort(),
        Object.keys(context)
          .filter((k) => k !== '@vocab' && k !== 'hydra')
          .sort(),
        id,
      );
    }
  }
  const demo = classes.get('#DemoSport');
  t.deepEqual(
    demo['hydra:supportedProperty'].map((p: Doc) => [
      p['hydra:title'],
      p['hydra:property']['@type'],
      p['hydra:property'].range,
      p['hydra:readable'],
      p['hydra:writeable'],
    ]),
    [
      ['id', 'rdf:Property', 'xmls:integer', true, false],
      ['slug', 'rdf:Property', 'xmls:string', true, false],
      ['active', 'rdf:Property', 'xmls:boolean', true, false],
      ['parent', 'hydra:Link', '#DemoSport', true, false],
    ],
  );
  t.deepEqual(
    demo['hydra:supportedOperation'].map((o: Doc) => [o['@type'], o['hydra:method'], o.returns]),
    [[['hydra:Operation', 'schema:FindAction'], 'GET', '#DemoSport']],
  );
});

test('class properties from the declarations: readable, writeable, required, links and their classes', (t) => {
  const user = z.string().meta({ format: 'iri-reference', example: '/v2/people/ab12' });
  const cls: HydraClass = {
    type: 'Thing',
    path: '/v2/things',
    items: [
      z.object({
        id: z.string(),
        owner: user,
        sport: z.string().meta({ format: 'iri-reference' }),
        tags: z.array(z.string()).nullable(),
        friends: z.array(user),
        when: z.string().meta({ format: 'date-time' }).nullable(),
        born: z.string().regex(/^\d{4}-\d{2}-\d{2}$/),
        size: z.number(),
      }),
    ],
    operations: [
      {
        kind: 'create',
        method: 'post',
        path: '/v2/things',
        summary: 'Create',
        body: z.looseObject({
          owner: z
            .string()
            .transform((v) => v)
            .meta({ format: 'iri-reference', example: '/v2/people/x' }),
          size: z.number().optional(),
          secret: z.string(),
          '@context': z.unknown().optional(),
          id: z.unknown().optional().meta({ description: 'read-only: ignored' }),
        }),
      },
      {
        kind: 'update',
        method: 'put',
        path: '/v2/things/:id',
        summary: 'Replace',
        body: z.object({ when: z.string() }),
      },
      { kind: 'action', method: 'post', path: '/v2/things/:id/x', summary: 'X', body: z.object({ other: z.string() }) },
    ],
  };
  const classes: HydraClass[] = [
    cls,
    { type: 'Person', path: '/v2/people', items: [], operations: [] },
    { type: 'Sport', path: '/v2/sports', items: [], operations: [] },
  ];
  const props = classProperties(cls, classOfIriIn(classes), classNamedIn(classes));
  const by = Object.fromEntries(props.map((p) => [p.name, p]));
  t.deepEqual(Object.keys(by), ['id', 'owner', 'sport', 'tags', 'friends', 'when', 'born', 'size', 'secret']);
  t.like(by.id, { readable: true, writeable: false, required: false, link: false, range: { datatype: 'xmls:string' } });
  t.like(by.owner, {
    readable: true,
    writeable: true,
    required: true,
    link: true,
    many: false,
    range: { class: 'Person' },
  });
  t.like(by.sport, { link: true, range: { class: 'Sport' } }); // from its name: no example IRI
  t.like(by.tags, { link: false, many: true });
  t.is(by.tags?.range, undefined);
  t.like(by.friends, { link: true, many: true, range: { class: 'Person' } });
  t.like(by.when, { range: { datatype: 'xmls:dateTime' }, writeable: true, required: false });
  t.like(by.born, { range: { datatype: 'xmls:date' } });
  t.like(by.size, { range: { datatype: 'xmls:decimal' }, writeable: true, required: false });
  t.like(by.secret, { readable: false, writeable: true, required: true });
});
