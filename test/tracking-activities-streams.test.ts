import test from 'ava';
import fc from 'fast-check';
import { sql } from 'kysely';
import {
  channelBytes,
  channelFromBytes,
  int4ArrayFromBinary,
  int4ArrayParam,
  trackFromWkb,
  trackToEwkb,
} from '../shared/tracking/activities/binary.ts';
import { ACTIVITY_LIMITS, datastreamFromJson, trackFromJson } from '../shared/tracking/activities/content.ts';
import {
  JsonWriter,
  jsonWithColumnsChunks,
  jsonWithStreams,
  jsonWithStreamsChunks,
} from '../shared/tracking/activities/json.ts';
import { startTrackingApi, type TrackingTestUser } from './helpers/tracking.ts';

const api = await startTrackingApi();
test.after.always(() => api.close());
const { db } = api.database;

type Json = Record<string, unknown>;
const me = (u: TrackingTestUser) => `/v2/users/${u.ldid}`;
const activity = (u: TrackingTestUser, fields: Json) => ({
  user: me(u),
  sport: '/v2/sports/121',
  startdate: '2024-05-01T06:00:00+00:00',
  duration: 3600,
  dataSummaries: {},
  ...fields,
});
/** What a client reading the JSON we were sent would hold (-0 is 0 in JSON, for example). */
const asJson = (v: unknown) => JSON.parse(JSON.stringify(v));

test('JsonWriter.number: every finite double is written as JSON that parses back to the same double', (t) => {
  const written = (v: number) => {
    const w = new JsonWriter(64);
    w.number(v);
    return w.result().toString('latin1');
  };
  fc.assert(
    fc.property(
      fc.oneof(
        fc.double({ noNaN: true, noDefaultInfinity: true }),
        fc.integer({ min: -1e6, max: 1e6 }).map((n) => n / 10),
        fc.integer({ min: -1e9, max: 1e9 }).map((n) => n / 1e7),
        fc.integer({ min: -180e7, max: 180e7 }).map((n) => n / 1e7),
        fc.maxSafeInteger(),
        fc.constantFrom(0.1, 0.3, 1e-6, 9.999999e-7, 999999999.5, 2 ** 32, 2 ** 53, -(2 ** 53) - 2, 1e21, 5e-324),
      ),
      // JSON has no -0: like JSON.stringify, it is written 0.
      (v) => JSON.parse(written(v)) === v && (!Object.is(v, -0) || written(v) === '0'),
    ),
    { numRuns: 50_000 },
  );
  t.is(written(1.5), '1.5');
  t.is(written(-1234567.125), '-1234567.125');
  t.is(written(45.1234567), '45.1234567');
  t.is(written(2 ** 53), '9007199254740992');
  t.is(written(1e-7), '1e-7');
});

test('jsonWithStreamsChunks: the chunks, whatever their size, make the same JSON as one buffer and as JSON.stringify', (t) => {
  fc.assert(
    fc.property(datastream, locations, fc.integer({ min: 16, max: 4096 }), (ds, locs, chunkBytes) => {
      const streams = { datastream: datastreamFromJson(ds), track: trackFromJson(locs) };
      const head = { '@id': '/v2/activities/x', name: 'é "quoted"' };
      const whole = jsonWithStreams(head, streams);
      const chunks = [...jsonWithStreamsChunks(head, streams, chunkBytes)];
      return (
        Buffer.concat(chunks).equals(whole) &&
        whole.toString() === JSON.stringify({ ...head, datastream: ds, locations: locs })
      );
    }),
    { numRuns: 300 },
  );
  t.is(
    Buffer.concat([
      ...jsonWithStreamsChunks({}, { datastream: datastreamFromJson({}), track: trackFromJson({}) }),
    ]).toString(),
    '{"datastream":{},"locations":{}}',
  );
});

test('jsonWithColumnsChunks: the chunks, whatever their size, make what JSON.stringify makes (NaN as null)', (t) => {
  const value = fc.oneof(fc.double({ noNaN: true, noDefaultInfinity: true }), fc.constant(Number.NaN));
  fc.assert(
    fc.property(
      fc.array(fc.integer({ min: 0, max: 604_800 }), { maxLength: 40 }),
      fc.uniqueArray(fc.integer({ min: 1, max: 300 }), { maxLength: 4 }),
      fc.integer({ min: 16, max: 4096 }),
      fc.infiniteStream(value),
      (elapsed, ids, chunkBytes, values) => {
        const sorted = ids.sort((a, b) => a - b);
        const columns = new Map(sorted.map((id) => [id, Float64Array.from(elapsed, () => values.next().value)]));
        const head = { activity: '/v2/activities/x', size: elapsed.length };
        const text = Buffer.concat([
          ...jsonWithColumnsChunks(head, { elapsed: Int32Array.from(elapsed), values: columns }, chunkBytes),
        ]).toString();
        const expected = JSON.stringify({
          ...head,
          elapsed,
          values: Object.fromEntries([...columns].map(([id, v]) => [String(id), Array.from(v)])),
        });
        return text === expected;
      },
    ),
    { numRuns: 300 },
  );
  t.pass();
});

/** A float8[] literal that keeps -0 (the driver's own conversion writes it as 0). */
const float8Literal = (values: (number | null)[]) =>
  `{${values.map((v) => (v === null ? 'NULL' : Object.is(v, -0) ? '-0' : String(v))).join(',')}}`;

test('binary codecs: channel bytes (NaN where absent), int4[] and the EWKB track round-trip through PostgreSQL; SQL reads and writes channels', async (t) => {
  const double = fc.double({ noNaN: true, noDefaultInfinity: true });
  await fc.assert(
    fc.asyncProperty(
      fc.array(fc.option(double, { nil: null }), { maxLength: 50 }),
      fc.array(fc.integer({ min: 0, max: ACTIVITY_LIMITS.maxSeconds }), { maxLength: 50 }),
      fc.array(
        fc.record({
          lat: fc.double({ min: -90, max: 90, noNaN: true }),
          lon: fc.double({ min: -180, max: 180, noNaN: true }),
          ele: fc.option(double, { nil: null }),
        }),
        { minLength: 1, maxLength: 30 },
      ),
      async (values, ints, points) => {
        const floats = Float64Array.from(values, (v) => v ?? Number.NaN);
        const elapsed = Int32Array.from(ints);
        const track = {
          elapsed: Int32Array.from(points, (_, i) => i * 3),
          latitude: Float64Array.from(points, (p) => p.lat),
          longitude: Float64Array.from(points, (p) => p.lon),
          elevation: Float64Array.from(points, (p) => p.ele ?? Number.NaN),
        };
        type Row = { c: Buffer; sqlValues: (number | null)[]; sqlBytes: Buffer; i: Buffer; g: Buffer; e: Buffer };
        const { rows } = await sql<Row>`
          select ${channelBytes(floats)}::bytea as c,
                 activity_channel_values(${channelBytes(floats)}::bytea) as "sqlValues",
                 activity_channel_bytes(${float8Literal(values)}::float8[]) as "sqlBytes",
                 array_send(${int4ArrayParam(elapsed)}::int4[]) as i,
                 ST_AsBinary(${trackToEwkb(track)}::geometry) as g,
                 ST_AsEWKB(${trackToEwkb(track)}::geometry) as e`.execute(db);
        const row = rows[0] as Row;
        const same = (a: Float64Array, b: Float64Array) =>
          a.length === b.length && a.every((v, i) => Object.is(v, b[i]));
        return (
          same(channelFromBytes(row.c), floats) &&
          // SQL reads the bytes as the float8[] of 0040 (NULL where absent) and writes them back.
          row.sqlValues.length === values.length &&
          row.sqlValues.every((v, i) => Object.is(v, values[i])) &&
          row.sqlBytes.equals(channelBytes(floats)) &&
          int4ArrayFromBinary(row.i).every((v, i) => v === elapsed[i]) &&
          JSON.stringify([...trackFromWkb(row.g).elevation]) === JSON.stringify([...track.elevation]) &&
          trackFromWkb(row.g).latitude.every((v, i) => v === track.latitude[i]) &&
          trackFromWkb(row.e).longitude.every((v, i) => v === track.longitude[i]) &&
          trackFromWkb(row.e).elapsed.every((v, i) => v === track.elapsed[i])
        );
      },
    ),
    { numRuns: 200 },
  );
  // Extremes: subnormals, the largest doubles, -0.
  const extremes = [5e-324, -5e-324, 2.2250738585072014e-308, Number.MAX_VALUE, -Number.MAX_VALUE, -0, 0, 1];
  const { rows } = await sql<{ v: number[] }>`
    select activity_channel_values(${channelBytes(Float64Array.from(extremes))}::bytea) as v`.execute(db);
  t.true(rows[0]?.v.every((v, i) => Object.is(v, extremes[i])));
  t.is(channelFromBytes(Buffer.alloc(0)).length, 0);
  t.throws(() => channelFromBytes(Buffer.alloc(7)));
});

/** Datatypes of the seeded referential a device commonly records. */
const DATATYPES = ['1', '3', '4', '5', '6', '7', '9', '10', '14', '18', '20', '23', '24', '100', '178'];
const elapsedKey = fc.integer({ min: 0, max: ACTIVITY_LIMITS.maxSeconds }).map(String);
const sensorValue = fc.oneof(
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.integer({ min: -1000, max: 250_000 }),
  fc.integer({ min: -1e7, max: 1e7 }).map((n) => n / 100),
);
const datastream = fc.dictionary(elapsedKey, fc.dictionary(fc.constantFrom(...DATATYPES), sensorValue), {
  maxKeys: 40,
});
const locations = fc.dictionary(
  elapsedKey,
  fc.record({
    latitude: fc.oneof(
      fc.double({ min: -90, max: 90, noNaN: true }),
      fc.integer({ min: -90e7, max: 90e7 }).map((n) => n / 1e7),
    ),
    longitude: fc.oneof(
      fc.double({ min: -180, max: 180, noNaN: true }),
      fc.integer({ min: -180e7, max: 180e7 }).map((n) => n / 1e7),
    ),
    elevation: fc.option(fc.oneof(sensorValue, fc.integer({ min: -400, max: 8900 })), { nil: null }),
  }),
  { maxKeys: 40 },
);

test('property: any valid datastream and locations round-trip exactly through POST then GET', async (t) => {
  const u = await api.user();
  await fc.assert(
    fc.asyncProperty(datastream, locations, async (ds, locs) => {
      // Every run posts the same start and duration: stored again on purpose.
      const posted = await api.call('POST', '/activities?duplicates=keep', u, {
        body: activity(u, { datastream: ds, locations: locs }),
      });
      if (posted.status !== 201) return t.fail(`POST ${posted.status}: ${JSON.stringify(posted.body).slice(0, 500)}`);
      const got = await api.call('GET', `/activities/${posted.body.id}`, u);
      t.is(got.status, 200);
      t.deepEqual(got.body.datastream, asJson(ds));
      t.deepEqual(got.body.locations, asJson(locs));
      const firstKey = Object.keys(locs)[0];
      const first = firstKey === undefined ? undefined : locs[firstKey];
      t.like(got.body, {
        trackFlag: first !== undefined,
        datastreamFlag: Object.keys(ds).length > 0,
        latitude: first ? asJson(first.latitude) : null,
        longitude: first ? asJson(first.longitude) : null,
        elevation: first ? asJson(first.elevation) : null,
      });
      const datatypes = new Set(Object.values(ds).flatMap((sample) => Object.keys(sample).map(Number)));
      t.deepEqual(
        got.body.availableDatatypes,
        [...datatypes].sort((a, b) => a - b),
      );
    }),
    { numRuns: 40 },
  );
});

/**
 * A 24-hour activity at 1 Hz: 86,400 samples of 8 datatypes and 86,400 GPS points, with values
 * like a device's (integers, one or two decimals, coordinates with 7).
 */
function dayLong(): { datastream: Json; locations: Json } {
  const datastream: Json = {};
  const locations: Json = {};
  let distance = 0;
  let lat = 45.1234567;
  let lon = 5.7654321;
  for (let t = 0; t < 86_400; t++) {
    const speed = Math.round(8000 + 4000 * Math.sin(t / 600)) / 100;
    distance = Math.round((distance + speed / 3.6) * 10) / 10;
    lat = Math.round((lat + 0.00001 * Math.sin(t / 900)) * 1e7) / 1e7;
    lon = Math.round((lon + 0.00001 * Math.cos(t / 900)) * 1e7) / 1e7;
    const elevation = Math.round((1000 + 300 * Math.sin(t / 3000)) * 10) / 10;
    datastream[t] = {
      '1': 120 + (t % 60),
      '5': distance,
      '6': speed * 1000,
      '10': 80 + (t % 15),
      '14': elevation,
      '23': Math.floor(t / 10),
      '100': 85 + (t % 7),
      '178': 200 + (t % 50),
    };
    locations[t] = { latitude: lat, longitude: lon, elevation: t % 1000 === 0 ? null : elevation };
  }
  return { datastream, locations };
}

test('a 24-hour 1 Hz activity (8 datatypes and GPS, about 10 MB of JSON) is accepted, stored in a few rows and read back exactly', async (t) => {
  const u = await api.user();
  const streams = dayLong();
  const body = JSON.stringify(activity(u, { duration: 86_400, dataSummaries: { '5': 1_000_000 }, ...streams }));
  t.log(`body: ${(body.length / 1e6).toFixed(1)} MB`);
  t.true(body.length > 8e6);
  const posted = await api.call('POST', '/activities', u, {
    raw: body,
    headers: { 'content-type': 'application/ld+json' },
  });
  t.is(posted.status, 201, JSON.stringify(posted.body).slice(0, 500));
  t.like(posted.body, {
    trackFlag: true,
    datastreamFlag: true,
    availableDatatypes: [1, 5, 6, 10, 14, 23, 100, 178],
    latitude: (streams.locations['0'] as Json).latitude,
  });
  const id = posted.body.id;
  const res = await api.fetch(`/v2/activities/${id}`, {
    headers: { 'x-api-key': api.apiKey, authorization: `Bearer ${u.token}` },
  });
  t.is(res.status, 200);
  const text = await res.text();
  const got = JSON.parse(text);
  // Compared as canonical JSON: both sides list seconds and datatypes in ascending order.
  t.true(JSON.stringify(got.datastream) === JSON.stringify(streams.datastream), 'datastream differs');
  t.true(JSON.stringify(got.locations) === JSON.stringify(streams.locations), 'locations differ');
  t.is(Object.keys(got.datastream).length, 86_400);

  const rows = await sql<{ tracks: number; channels: number; points: number }>`
    select (select count(*) from activity_tracks where activity_id = ${id})::int as tracks,
           (select count(*) from activity_stream_channels where activity_id = ${id})::int as channels,
           (select points from activity_tracks where activity_id = ${id}) as points`.execute(db);
  t.deepEqual(rows.rows[0], { tracks: 1, channels: 8, points: 86_400 });
  const jobs = await db
    .selectFrom('outbox')
    .select(['job_id', 'payload'])
    .where('queue', '=', 'records')
    .where(sql<string>`payload->>'activityId'`, '=', id)
    .execute();
  t.like(jobs, [{ job_id: `records-${id}-v1`, payload: { change: 'created', version: 1, userId: u.ldid } }]);
});

test('POST /v2/activities takes up to ACTIVITY_BODY_LIMIT (413 in the Hydra format above); other routes keep BODY_LIMIT', async (t) => {
  const u = await api.user();
  const headers = { 'content-type': 'application/json' };
  // Over 32 MB: refused before any parsing.
  const huge = `{"datastream":{${'"1":{"1":1},'.repeat(3_000_000)}"2":{}}}`;
  t.true(huge.length > api.config.activityBodyLimitBytes);
  const refused = await api.call('POST', '/activities', u, { raw: huge, headers });
  t.is(refused.status, 413);
  t.like(refused.body, { '@context': '/v2/contexts/Error', '@type': 'hydra:Error' });
  // 2 MB: fine on POST /v2/activities, over BODY_LIMIT (1 MB) anywhere else, PUT of an activity included.
  const comment = 'x'.repeat(2 * 1024 * 1024);
  const big = JSON.stringify(activity(u, { comment }));
  const accepted = await api.call('POST', '/activities', u, { raw: big, headers });
  t.is(accepted.status, 422); // within the size limit, the comment's own limit applies
  t.deepEqual(
    accepted.body.violations.map((v: { propertyPath: string }) => v.propertyPath),
    ['comment'],
  );
  const a = await api.call('POST', '/activities', u, { body: activity(u, {}) });
  t.is(a.status, 201);
  const put = await api.call('PUT', `/activities/${a.body.id}`, u, { raw: JSON.stringify({ comment }), headers });
  t.is(put.status, 413);
  const measure = await api.call('POST', '/user_measures', u, { raw: JSON.stringify({ comment }), headers });
  t.is(measure.status, 413);
  // A trailing slash names the same route.
  const slash = await api.call('POST', '/activities/', u, { raw: big, headers });
  t.is(slash.status, 422);
});

test('a datastream of more samples × datatypes than ACTIVITY_LIMITS.maxDatastreamCells is a 422 (memory bound)', async (t) => {
  const u = await api.user();
  const samples = 100_001;
  const datatypes = Math.ceil(ACTIVITY_LIMITS.maxDatastreamCells / samples) + 1;
  const datastream: Json = {};
  for (let s = 0; s < samples; s++) datastream[s] = {};
  // One sample carries every datatype: each becomes a column as long as the stream.
  datastream[0] = Object.fromEntries(Array.from({ length: datatypes }, (_, i) => [String(i + 1), 1]));
  const res = await api.call('POST', '/activities', u, { body: activity(u, { datastream }) });
  t.is(res.status, 422);
  t.deepEqual(
    res.body.violations.map((v: { propertyPath: string }) => v.propertyPath),
    ['datastream'],
  );
  t.regex(res.body.violations[0].message, /too large/);
});

test('the input guard leaves datastream and locations to the activity checks (422), and still guards the other members (400)', async (t) => {
  const u = await api.user();
  const post = (body: string) =>
    api.call('POST', '/activities', u, { raw: body, headers: { 'content-type': 'application/json' } });
  const base = JSON.stringify(activity(u, {})).slice(0, -1);
  // Inside the streams, whatever the guard would refuse is refused by the sample checks.
  for (const [member, expected] of [
    ['"datastream":{"1":{"\\u0000":1}}', 'datastream.1.\u0000'],
    ['"datastream":{"\\ud800":{"1":1}}', 'datastream.\ud800'],
    ['"datastream":{"1":{"1":1e309}}', 'datastream.1.1'],
    ['"datastream":{"1":{"1":"\\u0000"}}', 'datastream.1.1'],
    [`"datastream":{"1":{"1":${'['.repeat(200)}${']'.repeat(200)}}}`, 'datastream.1.1'],
    ['"locations":{"1":{"latitude":1,"longitude":1e309}}', 'locations.1.longitude'],
    ['"locations":{"1":{"latitude":1,"longitude":2,"\\u0000":3}}', 'locations.1.\u0000'],
  ] as const) {
    const res = await post(`${base},${member}}`);
    t.is(res.status, 422, member);
    t.deepEqual(
      res.body.violations.map((v: { propertyPath: string }) => v.propertyPath),
      [expected],
      member,
    );
  }
  // Anywhere else in the body, the guard answers first.
  const bad = await post(`${base},"name":"a\\u0000b"}`);
  t.is(bad.status, 400);
  t.regex(bad.body['hydra:description'], /body\.name/);
  const deep = await post(`${base},"location":${'{"device":'.repeat(70)}1${'}'.repeat(70)}}`);
  t.is(deep.status, 400);
  // On PUT, the guard walks everything.
  const created = await api.call('POST', '/activities', u, { body: activity(u, {}) });
  const put = await api.call('PUT', `/activities/${created.body.id}`, u, {
    raw: '{"datastream":{"1":{"\\u0000":1}}}',
    headers: { 'content-type': 'application/json' },
  });
  t.is(put.status, 400);
});

test('POST accepts JSON only (application/ld+json, application/json): another type is a 415', async (t) => {
  const u = await api.user();
  const res = await api.call('POST', '/activities', u, {
    raw: JSON.stringify(activity(u, {})),
    headers: { 'content-type': 'text/plain' },
  });
  t.is(res.status, 415);
  t.like(res.body, { '@type': 'hydra:Error' });
  const malformed = await api.call('POST', '/activities', u, {
    raw: '{"user": ',
    headers: { 'content-type': 'application/ld+json' },
  });
  t.is(malformed.status, 400);
});

test('the streams are stored compressed with lz4 (migration 0048)', async (t) => {
  const u = await api.user();
  const datastream: Json = {};
  const locations: Json = {};
  for (let s = 0; s < 2000; s++) {
    datastream[s] = { '1': 100 + (s % 50) };
    locations[s] = { latitude: 45 + s / 1e5, longitude: 6, elevation: 100 };
  }
  const res = await api.call('POST', '/activities', u, { body: activity(u, { datastream, locations }) });
  t.is(res.status, 201);
  const { rows } = await sql<{ track: string; elapsed: string; values: string }>`
    select pg_column_compression(t.track) as track, pg_column_compression(d.elapsed) as elapsed,
      (select pg_column_compression(c."values") from activity_stream_channels c where c.activity_id = t.activity_id) as values
    from activity_tracks t join activity_datastreams d using (activity_id) where t.activity_id = ${res.body.id}`.execute(
    db,
  );
  t.like(rows[0], { track: 'lz4', values: 'lz4' });
  // Sequential integers barely compress: PostgreSQL may keep them as they are (null), never pglz.
  t.true(rows[0]?.elapsed === 'lz4' || rows[0]?.elapsed === null);
});
