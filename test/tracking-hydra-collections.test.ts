import test from 'ava';
import { SERVICES } from '../api/services.ts';
import { type Doc, hydraClient } from './helpers/hydra-client.ts';
import { trackingWithDemoSports } from './helpers/hydra-demo-sports.ts';
import { startTrackingApi } from './helpers/tracking.ts';

// The real /v2 service, whatever resources it has when the test runs (the walks below find them
// through the entrypoint), plus one throwaway Hydra resource over the seeded sports for paging
// and filters.
const api = await startTrackingApi({
  publicUrl: true,
  services: SERVICES.map((s) => (s.name === 'tracking' ? trackingWithDemoSports : s)),
});
test.after.always(() => api.close());

const { LINK, get, entrypointCollections, documentedFilters } = hydraClient(api);

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
