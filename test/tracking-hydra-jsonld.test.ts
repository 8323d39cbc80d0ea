import test from 'ava';
import jsonld from 'jsonld';
import { SERVICES } from '../api/services.ts';
import { type Doc, hydraClient } from './helpers/hydra-client.ts';
import { trackingWithDemoSports } from './helpers/hydra-demo-sports.ts';
import { startTrackingApi, type TrackingTestUser } from './helpers/tracking.ts';

// The real /v2 service, whatever resources it has when the test runs (the walks below find them
// through the entrypoint), plus one throwaway Hydra resource over the seeded sports. Every
// response is expanded with the `jsonld` package, contexts loaded from this server only.
const api = await startTrackingApi({
  publicUrl: true,
  services: SERVICES.map((s) => (s.name === 'tracking' ? trackingWithDemoSports : s)),
});
test.after.always(() => api.close());

const { VOCAB, HYDRA, get, entrypointCollections } = hydraClient(api);

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
