import test from 'ava';
import { sql } from 'kysely';
import { PREVIEW_SIZE } from '../shared/tracking/streams/preview.ts';
import { fillStreamPreviews } from '../shared/tracking/streams/preview-store.ts';
import { startTrackingApi, type TrackingTestUser } from './helpers/tracking.ts';
import { activity } from './helpers/tracking-activities.ts';

// GET /v2/activities/{id}/streams: channels by datatype, at a resolution, as columns.

const api = await startTrackingApi();
test.after.always(() => api.close());

// biome-ignore lint/suspicious/noExplicitAny: parsed JSON answers, read member by member.
type Json = Record<string, any>;

const N = 5000;
/** 5000 samples a second apart: heart rate (1) with one spike, distance (5), and cadence (10) on every other sample. */
function samples() {
  const datastream: Record<string, Record<string, number>> = {};
  for (let s = 0; s < N; s++) {
    const sample: Record<string, number> = { '1': s === 3217 ? 197 : 140 + Math.round(Math.sin(s / 400) * 8) };
    sample['5'] = Math.round(s * 2.8 * 10) / 10;
    if (s % 2 === 0) sample['10'] = 80 + (s % 5);
    datastream[String(s)] = sample;
  }
  return datastream;
}

let owner: TrackingTestUser;
let id: string;
const stored = samples();
test.before(async () => {
  owner = await api.user();
  const res = await api.call('POST', '/activities', owner, {
    body: activity(owner, { duration: N - 1, dataSummaries: { '24': N - 1 }, datastream: stored }),
  });
  if (res.status !== 201) throw new Error(JSON.stringify(res.body));
  id = res.body.id;
});

const streams = (query = '', u: TrackingTestUser | null = owner, headers: Record<string, string> = {}) =>
  api.call('GET', `/activities/${id}/streams${query}`, u, { headers });

/** Every answered value is the stored sample's at that elapsed second (null where it has none). */
function matchesStored(t: { true: (v: boolean, m?: string) => void }, body: Json) {
  for (const [datatype, values] of Object.entries(body.values as Record<string, (number | null)[]>))
    values.forEach((v, i) => {
      const second = body.elapsed[i] as number;
      t.true(v === (stored[String(second)]?.[datatype] ?? null), `${datatype} at ${second}`);
    });
}

test('full (the default): every sample of every channel, in JSON-LD', async (t) => {
  const res = await streams();
  t.is(res.status, 200, JSON.stringify(res.body));
  t.regex(res.headers.get('content-type') ?? '', /^application\/ld\+json/);
  t.like(res.body, {
    '@context': '/v2/contexts/ActivityStreams',
    '@id': `/v2/activities/${id}/streams`,
    '@type': 'ActivityStreams',
    activity: `/v2/activities/${id}`,
    resolution: 'full',
    originalSize: N,
    size: N,
  });
  t.deepEqual(Object.keys(res.body.values), ['1', '5', '10']);
  t.deepEqual(
    res.body.elapsed,
    Array.from({ length: N }, (_, i) => i),
  );
  t.is(res.body.values['10'][1], null);
  matchesStored(t, res.body);
});

test('low, medium, high: at most 100, 1000, 10,000 samples, at the same seconds for every channel, peaks kept', async (t) => {
  for (const [resolution, most] of [
    ['low', 100],
    ['medium', 1000],
    ['high', N],
  ] as const) {
    const res = await streams(`?resolution=${resolution}`);
    t.is(res.status, 200, resolution);
    t.like(res.body, { resolution, originalSize: N });
    const size = res.body.size as number;
    // Each channel a third of it: positions two channels share count once.
    t.true(size <= most && size > most * 0.8, `${resolution}: ${size}`);
    t.is(res.body.elapsed.length, size);
    for (const values of Object.values(res.body.values as Record<string, unknown[]>)) t.is(values.length, size);
    t.is(res.body.elapsed[0], 0);
    t.is(res.body.elapsed.at(-1), N - 1);
    t.true(
      res.body.elapsed.every((s: number, i: number) => i === 0 || s > res.body.elapsed[i - 1]),
      resolution,
    );
    matchesStored(t, res.body);
    // The heart rate spike at 3217 s is still there.
    t.true(res.body.elapsed.includes(3217), resolution);
  }
  // A low answer is small.
  const low = await streams('?resolution=low', owner, { accept: 'application/json' });
  t.true(JSON.stringify(low.body).length < 4000);
});

test('datatypes[] or datatypes: the channels asked, by ascending id; an absent one is left out; plain JSON on request', async (t) => {
  const res = await streams('?datatypes[]=/v2/datatypes/5&datatypes[]=1&resolution=low', owner, {
    accept: 'application/json',
  });
  t.is(res.status, 200);
  t.regex(res.headers.get('content-type') ?? '', /^application\/json/);
  t.is(res.body['@context'], undefined);
  t.deepEqual(Object.keys(res.body), ['activity', 'resolution', 'originalSize', 'size', 'elapsed', 'values']);
  t.deepEqual(Object.keys(res.body.values), ['1', '5']);
  matchesStored(t, res.body);
  // Cadence alone: positions chosen on its samples (null where a sample has none).
  const cadence = await streams('?datatypes=10&resolution=low');
  t.deepEqual(Object.keys(cadence.body.values), ['10']);
  t.is(cadence.body.size, 100);
  t.true(cadence.body.values['10'].every((v: number | null) => v !== null));
  matchesStored(t, cadence.body);
  // Power (178) exists but this activity has none: left out.
  const none = await streams('?datatypes=178&datatypes=1');
  t.deepEqual(Object.keys(none.body.values), ['1']);
  const nothing = await streams('?datatypes=178&resolution=low');
  t.deepEqual(nothing.body.values, {});
  t.is(nothing.body.size, 100);
});

test('bad input: 422 in the Hydra format naming the parameter', async (t) => {
  for (const [query, parameter] of [
    ['?resolution=ultra', 'resolution'],
    ['?resolution=', 'resolution'],
    ['?datatypes=heart', 'datatypes'],
    ['?datatypes[]=/v2/sports/1', 'datatypes[]'],
    ['?datatypes=999999', 'datatypes'],
    ['?datatypes[]=1&datatypes[]=999999', 'datatypes[]'],
  ]) {
    const res = await streams(query);
    t.is(res.status, 422, query);
    t.like(res.body, { '@type': 'ConstraintViolationList' }, query);
    const paths = (res.body.violations as { propertyPath: string; message: string }[]).map((v) => v.propertyPath);
    t.true(
      paths.some((p) => p === parameter || p.startsWith(`${parameter}.`)),
      `${query}: ${JSON.stringify(res.body.violations)}`,
    );
  }
  const unknown = await streams('?datatypes=999999');
  t.regex(unknown.body.violations[0].message, /\/v2\/datatypes\/999999 does not exist/);
});

test("another user's activity is a 404, no token a 401, a missing one a 404", async (t) => {
  const other = await api.user();
  const res = await streams('?resolution=low', other);
  t.is(res.status, 404);
  t.like(res.body, { '@type': 'hydra:Error' });
  t.is((await streams('?resolution=low', null)).status, 401);
  t.is((await api.call('GET', '/activities/0123456789abcdef0123456789abcdef/streams', owner)).status, 404);
});

test('an activity without a datastream: empty columns', async (t) => {
  const u = await api.user();
  const created = await api.call('POST', '/activities', u, { body: activity(u) });
  const res = await api.call('GET', `/activities/${created.body.id}/streams?resolution=low`, u);
  t.is(res.status, 200);
  t.like(res.body, { originalSize: 0, size: 0, elapsed: [], values: {} });
});

test('a long activity has a preview (every channel at 1,000 positions); low reads it, and the streams when it is missing', async (t) => {
  const { db } = api.database;
  const previews = () =>
    sql<{ datatype_id: number; samples: number; bytes: number }>`
      select datatype_id, samples, length("values") as bytes from activity_stream_previews
      where activity_id = ${id} order by datatype_id`.execute(db);
  const rows = (await previews()).rows;
  t.deepEqual(
    rows.map((r) => r.datatype_id),
    [0, 1, 5, 10],
  );
  t.true(rows.every((r) => r.samples === N && r.bytes <= PREVIEW_SIZE * 8 && r.bytes > PREVIEW_SIZE * 8 * 0.8));
  const fromPreview = (await streams('?resolution=low&datatypes=1&datatypes=5')).body;
  t.is(fromPreview.originalSize, N);
  matchesStored(t, fromPreview);
  t.true(fromPreview.elapsed.includes(3217));
  // Without its preview (stored before migration 0062, say): the same kind of answer, from the streams.
  await sql`delete from activity_stream_previews where activity_id = ${id}`.execute(db);
  const fromStreams = (await streams('?resolution=low&datatypes=1&datatypes=5')).body;
  t.like(fromStreams, { originalSize: N, resolution: 'low' });
  matchesStored(t, fromStreams);
  t.true(fromStreams.elapsed.includes(3217));
  // The migration's backfill writes it again; a short activity gets none.
  t.true((await fillStreamPreviews(db)) >= 1);
  t.deepEqual((await previews()).rows, rows);
  const u = await api.user();
  const short = await api.call('POST', '/activities', u, {
    body: activity(u, { duration: 100, datastream: { '0': { '1': 90 }, '100': { '1': 120 } } }),
  });
  const none = await sql`select 1 from activity_stream_previews where activity_id = ${short.body.id}`.execute(db);
  t.is(none.rows.length, 0);
});

test('documented: /openapi.json has the operation and its parameters, the Hydra documentation its class', async (t) => {
  const openapi = (await (await api.fetch('/openapi.json')).json()) as Json;
  const op = openapi.paths['/v2/activities/{id}/streams']?.get;
  t.truthy(op);
  t.deepEqual(op.parameters.map((p: { name: string; in: string }) => `${p.in} ${p.name}`).sort(), [
    'path id',
    'query datatypes',
    'query datatypes[]',
    'query resolution',
  ]);
  t.truthy(op.responses['200'] && op.responses['401'] && op.responses['404'] && op.responses['422']);
  const docs = (await api.call('GET', '/docs.jsonld', null)).body;
  const cls = docs['hydra:supportedClass'].find((c: Json) => c['@id'] === '#ActivityStreams');
  t.deepEqual(
    cls['hydra:supportedProperty'].map((p: Json) => p['hydra:title']),
    ['activity', 'resolution', 'originalSize', 'size', 'elapsed', 'values'],
  );
  t.is((await api.call('GET', '/contexts/ActivityStreams', null)).status, 200);
});
