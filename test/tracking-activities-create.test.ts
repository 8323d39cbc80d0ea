import test from 'ava';
import { sql } from 'kysely';
import { readActivityContent } from '../shared/tracking/activities/content-read.ts';
import { createActivity } from '../shared/tracking/activities/store.ts';
import { ensureTrackingUser } from '../shared/tracking/users/store.ts';
import { startTrackingApi } from './helpers/tracking.ts';
import { activity, activityCalls, me, RUNNING, violations } from './helpers/tracking-activities.ts';

const api = await startTrackingApi();
test.after.always(() => api.close());

const { db } = api.database;
const { post, created, deviceOf } = activityCalls(api);

test('POST stores a manual activity: 201, the Activity in JSON-LD in the spec order, Location, derived fields; GET adds the streams', async (t) => {
  const u = await api.user();
  const res = await post(
    u,
    activity(u, {
      datastream: { '0': { '1': 92, '5': 0 }, '1': { '1': 95 }, '2': { '5': 7.25 } },
      locations: {
        '0': { latitude: 50.6292, longitude: 3.0573, elevation: 21.5 },
        '2': { latitude: 50.6293, longitude: 3.0574, elevation: null },
      },
    }),
  );
  t.is(res.status, 201, JSON.stringify(res.body));
  t.regex(res.headers.get('content-type') ?? '', /^application\/ld\+json/);
  const a = res.body;
  t.deepEqual(Object.keys(a), [
    '@context',
    '@id',
    '@type',
    'id',
    'name',
    'user',
    'sport',
    'userDevice',
    'startdate',
    'duration',
    'latitude',
    'longitude',
    'elevation',
    'manual',
    'comment',
    'connector',
    'userSession',
    'correctedElevation',
    'images',
    'thumbnail',
    'dataSummaries',
    'tags',
    'trackFlag',
    'datastreamFlag',
    'globalChallenge',
    'availableDatatypes',
    'equipments',
    'createdAt',
    'updatedAt',
    'movingTime',
    'pauses',
    'movingSpeedAvg',
    'movingPace',
    'visibility',
    'mapVisibility',
    'mapHiddenEnds',
  ]);
  t.like(a, {
    '@context': '/v2/contexts/Activity',
    '@type': 'Activity',
    name: 'Morning run',
    user: me(u),
    sport: '/v2/sports/121',
    userDevice: null,
    startdate: '2024-05-01T06:30:00+00:00',
    duration: 3,
    latitude: 50.6292,
    longitude: 3.0573,
    elevation: 21.5,
    manual: true,
    comment: null,
    connector: null,
    userSession: null,
    correctedElevation: false,
    images: [],
    thumbnail: null,
    dataSummaries: { '5': 10.5, '24': 3 },
    tags: null,
    trackFlag: true,
    datastreamFlag: true,
    globalChallenge: null,
    availableDatatypes: [1, 5, 24],
  });
  t.regex(a.id, /^[0-9a-f]{32}$/);
  t.is(a['@id'], `/v2/activities/${a.id}`);
  t.regex(a.createdAt, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\+00:00$/);
  t.is(a.updatedAt, a.createdAt);
  t.is(res.headers.get('location'), `${api.config.PUBLIC_URL}/v2/activities/${a.id}`);

  const got = await api.call('GET', `/activities/${a.id}`, u);
  t.is(got.status, 200);
  t.regex(got.headers.get('content-type') ?? '', /^application\/ld\+json/);
  t.deepEqual(got.body, {
    ...a,
    datastream: { '0': { '1': 92, '5': 0 }, '1': { '1': 95 }, '2': { '5': 7.25 } },
    locations: {
      '0': { latitude: 50.6292, longitude: 3.0573, elevation: 21.5 },
      '2': { latitude: 50.6293, longitude: 3.0574, elevation: null },
    },
  });
  t.deepEqual(Object.keys(got.body).slice(-2), ['datastream', 'locations']);
});

test('GET with Accept: application/json answers the plain JSON form (no @context, @id, @type), streams included', async (t) => {
  const u = await api.user();
  const a = await created(u, { datastream: { '4': { '1': 100 } } });
  const got = await api.call('GET', `/activities/${a.id}`, u, { headers: { accept: 'application/json' } });
  t.is(got.status, 200);
  t.regex(got.headers.get('content-type') ?? '', /^application\/json/);
  const { '@context': _c, '@id': _i, '@type': _t, ...fields } = a;
  t.deepEqual(got.body, { ...fields, datastream: { '4': { '1': 100 } }, locations: {} });
});

test('a stationary activity without streams: flags false, no first point, datastream and locations {}', async (t) => {
  const u = await api.user();
  const a = await created(u, { dataSummaries: {} });
  t.like(a, {
    trackFlag: false,
    datastreamFlag: false,
    latitude: null,
    longitude: null,
    elevation: null,
    availableDatatypes: [],
    dataSummaries: {},
  });
  const got = await api.call('GET', `/activities/${a.id}`, u);
  t.deepEqual(got.body.datastream, {});
  t.deepEqual(got.body.locations, {});
  // Empty objects and null are the same: no stream.
  const b = await created(u, { datastream: {}, locations: null, startdate: '2024-05-02T08:30:00+02:00' });
  t.like(b, { trackFlag: false, datastreamFlag: false });
});

test('a single location is stored (as a Point) and read back; samples without values round-trip as {}', async (t) => {
  const u = await api.user();
  const a = await created(u, {
    locations: { '7': { latitude: -33.9, longitude: 151.2 } },
    datastream: { '0': {}, '5': { '20': 1 } },
  });
  t.like(a, { latitude: -33.9, longitude: 151.2, elevation: null, trackFlag: true, availableDatatypes: [5, 20, 24] });
  const got = await api.call('GET', `/activities/${a.id}`, u);
  t.deepEqual(got.body.locations, { '7': { latitude: -33.9, longitude: 151.2, elevation: null } });
  t.deepEqual(got.body.datastream, { '0': {}, '5': { '20': 1 } });
  const track = await db
    .selectFrom('activity_tracks')
    .select(['points', sql<string>`ST_AsText(track)`.as('wkt')])
    .where('activity_id', '=', a.id)
    .executeTakeFirstOrThrow();
  t.deepEqual(track, { points: 1, wkt: 'POINT ZM (151.2 -33.9 NaN 7)' });
});

test('the track is a LineStringZM in SRID 4326 (usable by PostGIS); the datastream one row of float64 bytes per datatype, readable from SQL', async (t) => {
  const u = await api.user();
  const a = await created(u, {
    locations: {
      '0': { latitude: 45, longitude: 5, elevation: 200 },
      '10': { latitude: 45.001, longitude: 5.001, elevation: 210 },
    },
    datastream: { '0': { '1': 90 }, '1': { '5': 3 }, '2': { '1': 91, '5': 6 } },
  });
  const track = await db
    .selectFrom('activity_tracks')
    .select([
      'points',
      sql<string>`geometrytype(track)`.as('type'),
      sql<number>`ST_SRID(track)`.as('srid'),
      sql<string>`ST_AsText(track)`.as('wkt'),
      sql<number>`round(ST_Length(track::geography))`.as('metres'),
    ])
    .where('activity_id', '=', a.id)
    .executeTakeFirstOrThrow();
  t.deepEqual(track, {
    points: 2,
    type: 'LINESTRING',
    srid: 4326,
    wkt: 'LINESTRING ZM (5 45 200 0,5.001 45.001 210 10)',
    metres: 137,
  });
  const stream = await db
    .selectFrom('activity_datastreams')
    .select('elapsed')
    .where('activity_id', '=', a.id)
    .executeTakeFirstOrThrow();
  t.deepEqual(stream.elapsed, [0, 1, 2]);
  // Stored as float64 bytes; activity_channel_values reads them from SQL (NULL where a sample has none).
  const channels = await db
    .selectFrom('activity_stream_channels')
    .select(['datatype_id', sql<(number | null)[]>`activity_channel_values("values")`.as('values')])
    .where('activity_id', '=', a.id)
    .orderBy('datatype_id')
    .execute();
  t.deepEqual(channels, [
    { datatype_id: 1, values: [90, null, 91] },
    { datatype_id: 5, values: [null, 3, 6] },
  ]);
});

test('a device activity: userDevice and connector as IRIs, manual false; POST accepts application/json too', async (t) => {
  const u = await api.user();
  const device = await deviceOf(u);
  const res = await api.call('POST', '/activities', u, {
    body: activity(u, { userDevice: `/v2/user_devices/${device}`, connector: '/v2/connectors/1', manual: false }),
    headers: { 'content-type': 'application/json' },
  });
  t.is(res.status, 201, JSON.stringify(res.body));
  t.like(res.body, { userDevice: `/v2/user_devices/${device}`, connector: '/v2/connectors/1', manual: false });
  // An absolute IRI names the same device.
  const absolute = await created(u, {
    userDevice: `${api.config.PUBLIC_URL}/v2/user_devices/${device}`,
    connector: '/v2/connectors/2',
    startdate: '2024-05-02T08:30:00+02:00',
  });
  t.like(absolute, { userDevice: `/v2/user_devices/${device}`, manual: false });
  // A manual activity may name a connector (the app it was entered in).
  t.like(await created(u, { connector: '/v2/connectors/2', startdate: '2024-05-03T08:30:00+02:00' }), {
    manual: true,
    connector: '/v2/connectors/2',
  });
});

test('the store without HTTP: createActivity refuses another user; readActivityContent reads any owner, or only the given one', async (t) => {
  const u = await api.user();
  await ensureTrackingUser(db, { accountId: u.id, ldid: u.ldid, claims: {} });
  const content = {
    sportId: RUNNING,
    name: null,
    startdate: new Date('2024-05-01T00:00:00Z'),
    duration: 2,
    summaries: new Map([[24, 2]]),
    datastream: { elapsed: new Int32Array([0, 2]), channels: new Map([[1, new Float64Array([90, Number.NaN])]]) },
    track: {
      elapsed: new Int32Array([0, 1]),
      latitude: new Float64Array([1, 1.5]),
      longitude: new Float64Array([2, 2.5]),
      elevation: new Float64Array([Number.NaN, 3]),
    },
  };
  const input = {
    userId: u.ldid,
    userDeviceId: null,
    connectorId: null,
    comment: null,
    userSession: null,
    images: [],
    tags: null,
    location: null,
    content,
  };
  const error = await t.throwsAsync(createActivity(db, 'someone-else', input));
  t.like(error, { kind: 'invalid' });
  const row = await createActivity(db, u.ldid, input);
  const read = await readActivityContent(db, row.id);
  t.truthy(read);
  t.deepEqual(read?.content, content);
  t.is(read?.row.id, row.id);
  t.truthy(await readActivityContent(db, row.id, u.ldid));
  t.is(await readActivityContent(db, row.id, 'someone-else'), undefined);
  t.is(await readActivityContent(db, 'f'.repeat(32)), undefined);
});

test('/openapi.json documents the activity operations: body members, the 413, both media types of GET one', async (t) => {
  const doc = (await (await api.fetch('/openapi.json')).json()) as {
    paths: Record<string, Record<string, Record<string, unknown>>>;
  };
  const collection = doc.paths['/v2/activities'];
  const item = doc.paths['/v2/activities/{id}'];
  t.truthy(collection?.get);
  t.deepEqual(Object.keys(item ?? {}).sort(), ['delete', 'get', 'put']);
  const post = collection?.post as {
    requestBody: { content: Record<string, { schema: unknown }> };
    responses: Record<string, unknown>;
  };
  t.truthy(post.responses['413']);
  t.truthy(post.responses['422']);
  const body = JSON.stringify(post.requestBody);
  for (const member of ['datastream', 'locations', 'dataSummaries', 'userDevice', 'connector', 'location'])
    t.true(body.includes(`"${member}"`), member);
  const get = item?.get as { responses: Record<string, { content?: Record<string, unknown> }> };
  const types = Object.keys(get.responses['200']?.content ?? {});
  t.true(types.includes('application/ld+json') && types.includes('application/json'), types.join());
});

test('referential ids are remembered once seen, never as missing: a datatype or sport added later is accepted at once', async (t) => {
  const u = await api.user();
  const unknown = await post(u, activity(u, { dataSummaries: { '9991': 1 }, sport: '/v2/sports/9992' }));
  t.is(unknown.status, 422);
  t.deepEqual(violations(unknown.body).sort(), ['dataSummaries.9991', 'sport']);
  await db
    .insertInto('datatypes')
    .values({
      id: 9991,
      unit: 'none',
      names: JSON.stringify({ en: 'Test datatype' }),
      descriptions: JSON.stringify({}),
      record_way: 0,
      cumulable: false,
      active: true,
    })
    .execute();
  await db
    .insertInto('sports')
    .values({
      id: 9992,
      slug: 'test-sport-9992',
      names: JSON.stringify({ en: 'Test sport' }),
      parent_id: null,
      universe_id: null,
      active: true,
      description: null,
      vendor_id: null,
    })
    .execute();
  const known = await post(
    u,
    activity(u, { dataSummaries: { '9991': 1 }, datastream: { '0': { '9991': 2 } }, sport: '/v2/sports/9992' }),
  );
  t.is(known.status, 201, JSON.stringify(known.body));
  t.like(known.body, { sport: '/v2/sports/9992', availableDatatypes: [9991] });
});
