import test from 'ava';
import { sql } from 'kysely';
import { ACTIVITY_LIMITS } from '../shared/tracking/activities/content.ts';
import { activitiesQuery } from '../shared/tracking/activities/list.ts';
import { createActivity, readActivityContent } from '../shared/tracking/activities/store.ts';
import { ensureTrackingUser } from '../shared/tracking/users/store.ts';
import { startTrackingApi, type TrackingTestUser } from './helpers/tracking.ts';

const api = await startTrackingApi();
test.after.always(() => api.close());

const { db } = api.database;
const me = (u: TrackingTestUser) => `/v2/users/${u.ldid}`;
const RUNNING = 121;
const HIKING = 168;

/** A manual activity of `u`, with `fields` replacing or adding members. */
const activity = (u: TrackingTestUser, fields: Record<string, unknown> = {}) => ({
  name: 'Morning run',
  user: me(u),
  sport: `/v2/sports/${RUNNING}`,
  startdate: '2024-05-01T08:30:00+02:00',
  duration: 3,
  dataSummaries: { '5': 10.5, '24': 3 },
  ...fields,
});
type Body = Record<string, unknown>;
const post = (u: TrackingTestUser, body: unknown) => api.call('POST', '/activities', u, { body });
const created = async (u: TrackingTestUser, fields: Body = {}): Promise<Body & { id: string }> => {
  const res = await post(u, activity(u, fields));
  if (res.status !== 201) throw new Error(`POST answered ${res.status}: ${JSON.stringify(res.body)}`);
  return res.body;
};
const list = (u: TrackingTestUser, query = '') => api.call('GET', `/activities${query}`, u);
const ids = (body: { 'hydra:member': { id: string }[] }) => body['hydra:member'].map((m) => m.id);
const violations = (body: { violations: { propertyPath: string }[] }) => body.violations.map((v) => v.propertyPath);

/** A device of `u`, inserted directly (the devices resource is tested on its own). */
async function deviceOf(u: TrackingTestUser): Promise<string> {
  await ensureTrackingUser(db, { accountId: u.id, ldid: u.ldid, claims: {} });
  const row = await db
    .insertInto('user_devices')
    .values({
      user_id: u.ldid,
      serial: `SN-${Math.random().toString(36).slice(2, 10)}`,
      model_id: 1,
      firmware_id: 1,
      last_connected_at: null,
    })
    .returning('id')
    .executeTakeFirstOrThrow();
  return row.id;
}

const outboxOf = (activityId: string) =>
  db
    .selectFrom('outbox')
    .select(['queue', 'job_name', 'job_id', 'payload'])
    .where(sql<string>`payload->>'activityId'`, '=', activityId)
    .where('queue', '=', 'records')
    .orderBy('id')
    .execute();

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
    'createdAt',
    'updatedAt',
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
  const b = await created(u, { datastream: {}, locations: null });
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
  });
  t.like(absolute, { userDevice: `/v2/user_devices/${device}`, manual: false });
  // A manual activity may name a connector (the app it was entered in).
  t.like(await created(u, { connector: '/v2/connectors/2' }), { manual: true, connector: '/v2/connectors/2' });
});

test('device rules: connector required with a device, manual must agree with it, the device must be the caller’s', async (t) => {
  const u = await api.user();
  const other = await api.user();
  const mine = await deviceOf(u);
  const theirs = await deviceOf(other);
  const cases: [Body, string][] = [
    [{ userDevice: `/v2/user_devices/${mine}` }, 'connector'],
    [{ userDevice: `/v2/user_devices/${mine}`, connector: '/v2/connectors/1', manual: true }, 'manual'],
    [{ manual: false }, 'userDevice'],
    [{ userDevice: `/v2/user_devices/${theirs}`, connector: '/v2/connectors/1' }, 'userDevice'],
    [{ userDevice: '/v2/user_devices/0000', connector: '/v2/connectors/1' }, 'userDevice'],
    [{ userDevice: '/v2/sports/121', connector: '/v2/connectors/1' }, 'userDevice'],
  ];
  for (const [fields, path] of cases) {
    const res = await post(u, activity(u, fields));
    t.is(res.status, 422, JSON.stringify(fields));
    t.deepEqual(violations(res.body), [path], JSON.stringify(fields));
  }
  // Nothing was stored, no job either: the statement that checks the device writes the jobs too.
  t.is((await list(u)).body['hydra:totalItems'], 0);
  const jobs = await db.selectFrom('outbox').select('id').where(sql<string>`payload->>'userId'`, '=', u.ldid).execute();
  t.deepEqual(jobs, []);
});

test('POST refuses a wrong user, missing or malformed fields, unknown references: 422 in the Hydra format naming each field', async (t) => {
  const u = await api.user();
  const other = await api.user();
  const long = (n: number) => 'x'.repeat(n);
  const cases: [Body, string][] = [
    [{ user: me(other) }, 'user'],
    [{ user: '/v2/sports/121' }, 'user'],
    [{ user: undefined }, 'user'],
    [{ sport: undefined }, 'sport'],
    [{ sport: '/v2/sports/999999' }, 'sport'],
    [{ sport: 121 }, 'sport'],
    [{ connector: '/v2/connectors/999' }, 'connector'],
    [{ startdate: undefined }, 'startdate'],
    [{ startdate: '2024-05-01T08:30:00' }, 'startdate'],
    [{ startdate: '1850-05-01T08:30:00+00:00' }, 'startdate'],
    [{ duration: undefined }, 'duration'],
    [{ duration: -1 }, 'duration'],
    [{ duration: 1.5 }, 'duration'],
    [{ duration: ACTIVITY_LIMITS.maxSeconds + 1 }, 'duration'],
    [{ duration: '60' }, 'duration'],
    [{ dataSummaries: undefined }, 'dataSummaries'],
    [{ dataSummaries: [] }, 'dataSummaries'],
    [{ dataSummaries: { '999999': 1 } }, 'dataSummaries.999999'],
    [{ dataSummaries: { '5': '10' } }, 'dataSummaries.5'],
    [{ dataSummaries: { distance: 10 } }, 'dataSummaries.distance'],
    [{ dataSummaries: { '05': 10 } }, 'dataSummaries.05'],
    [{ name: long(ACTIVITY_LIMITS.nameLength + 1) }, 'name'],
    [{ comment: long(ACTIVITY_LIMITS.commentLength + 1) }, 'comment'],
    [{ userSession: long(ACTIVITY_LIMITS.userSessionLength + 1) }, 'userSession'],
    [{ tags: Array.from({ length: ACTIVITY_LIMITS.maxTags + 1 }, (_, i) => `t${i}`) }, 'tags'],
    [{ tags: [long(ACTIVITY_LIMITS.tagLength + 1)] }, 'tags[0]'],
    [{ tags: [''] }, 'tags[0]'],
    [{ images: ['ftp://example.com/a.jpg'] }, 'images[0]'],
    [{ images: ['not a url'] }, 'images[0]'],
    [{ images: [`https://example.com/${long(ACTIVITY_LIMITS.urlLength)}`] }, 'images[0]'],
    [{ images: Array.from({ length: ACTIVITY_LIMITS.maxImages + 1 }, (_, i) => `https://e.com/${i}.jpg`) }, 'images'],
    [{ location: { latitude: 91 } }, 'location.latitude'],
    [{ location: { device: { sn: 5 } } }, 'location.device.sn'],
    [{ location: { altitude: 5 } }, 'location'],
    [{ trackFlagg: true }, 'trackFlagg'],
    [{ datastream: [] }, 'datastream'],
    [{ locations: 'none' }, 'locations'],
  ];
  for (const [fields, path] of cases) {
    const res = await post(u, activity(u, fields));
    t.is(res.status, 422, `${JSON.stringify(fields).slice(0, 100)}: ${res.status}`);
    t.like(res.body, { '@context': '/v2/contexts/ConstraintViolationList', '@type': 'ConstraintViolationList' });
    t.deepEqual(violations(res.body), [path], JSON.stringify(fields).slice(0, 100));
  }
  t.is((await list(u)).body['hydra:totalItems'], 0);
});

test('POST refuses bad samples with the path of each: datastream.<second>.<datatype>, locations.<second>.<member>', async (t) => {
  const u = await api.user();
  const cases: [Body, string[]][] = [
    [{ datastream: { '-1': { '1': 90 } } }, ['datastream.-1']],
    [{ datastream: { '1.5': { '1': 90 } } }, ['datastream.1.5']],
    [{ datastream: { '01': { '1': 90 } } }, ['datastream.01']],
    [{ datastream: { '1e3': { '1': 90 } } }, ['datastream.1e3']],
    [
      { datastream: { [ACTIVITY_LIMITS.maxSeconds + 1]: { '1': 90 } } },
      [`datastream.${ACTIVITY_LIMITS.maxSeconds + 1}`],
    ],
    [{ datastream: { '3': 90 } }, ['datastream.3']],
    [{ datastream: { '3': [90] } }, ['datastream.3']],
    [{ datastream: { '3': { '1': '90' } } }, ['datastream.3.1']],
    [{ datastream: { '3': { '1': null } } }, ['datastream.3.1']],
    [{ datastream: { '3': { '1': true } } }, ['datastream.3.1']],
    [{ datastream: { '3': { hr: 90 } } }, ['datastream.3.hr']],
    [{ datastream: { '3': { '0': 90 } } }, ['datastream.3.0']],
    [{ datastream: { '119': { '1': 90 }, '120': { '999': 1, '1': 91 } } }, ['datastream.120.999']],
    [{ datastream: { '1': { '1': 1 }, '2': { '1': 'a' }, '3': { '5': 'b' } } }, ['datastream.2.1', 'datastream.3.5']],
    [{ locations: { '5': { latitude: 90.5, longitude: 0 } } }, ['locations.5.latitude']],
    [{ locations: { '5': { latitude: 0, longitude: -180.1 } } }, ['locations.5.longitude']],
    [{ locations: { '5': { latitude: 0 } } }, ['locations.5.longitude']],
    [{ locations: { '5': { latitude: '1', longitude: 2 } } }, ['locations.5.latitude']],
    [{ locations: { '5': { latitude: 1, longitude: 2, elevation: '3' } } }, ['locations.5.elevation']],
    [{ locations: { '5': { latitude: 1, longitude: 2, speed: 3 } } }, ['locations.5.speed']],
    [{ locations: { '5': [1, 2] } }, ['locations.5']],
    [{ locations: { x: { latitude: 1, longitude: 2 } } }, ['locations.x']],
  ];
  for (const [fields, paths] of cases) {
    const res = await post(u, activity(u, fields));
    t.is(res.status, 422, JSON.stringify(fields));
    t.deepEqual(violations(res.body), paths, JSON.stringify(fields));
  }
  // At most 20 problems are listed, whatever the number of bad samples.
  const bad = Object.fromEntries(Array.from({ length: 500 }, (_, i) => [String(i), { '1': 'x' }]));
  const res = await post(u, activity(u, { datastream: bad }));
  t.is(res.status, 422);
  t.is(res.body.violations.length, 20);
  t.is((await list(u)).body['hydra:totalItems'], 0);
});

test('read-only and JSON-LD members sent back are ignored; the location object is stored as sent', async (t) => {
  const u = await api.user();
  const location = {
    elapsed_time: 12,
    latitude: 50.6,
    longitude: 3.05,
    elevation: 20,
    device: { firmware: '/v2/firmwares/1', model: 1, sn: 'SN-1' },
    manual: false,
  };
  const a = await created(u, {
    '@context': '/v2/contexts/Activity',
    '@type': 'Activity',
    id: 'mine',
    trackFlag: true,
    availableDatatypes: [1],
    latitude: 1,
    thumbnail: 'https://example.com/t.png',
    createdAt: '2000-01-01T00:00:00+00:00',
    location,
  });
  t.not(a.id, 'mine');
  t.like(a, { trackFlag: false, availableDatatypes: [5, 24], latitude: null, thumbnail: null });
  t.not(a.createdAt, '2000-01-01T00:00:00+00:00');
  const row = await db.selectFrom('activities').select('location').where('id', '=', a.id).executeTakeFirstOrThrow();
  t.deepEqual(row.location, location);
});

test('credentials: no token or no API key is a 401 in the Hydra format; another user’s activity is a 404 for every operation', async (t) => {
  const u = await api.user();
  const other = await api.user();
  const a = await created(u);
  const noToken = await api.call('GET', '/activities', null);
  t.is(noToken.status, 401);
  t.like(noToken.body, { '@type': 'hydra:Error' });
  t.is((await api.call('POST', '/activities', null, { body: activity(u) })).status, 401);
  const noKey = await api.fetch('/v2/activities', { headers: { authorization: `Bearer ${u.token}` } });
  t.is(noKey.status, 401);

  for (const [method, body] of [
    ['GET', undefined],
    ['PUT', { name: 'mine now' }],
    ['DELETE', undefined],
  ] as const) {
    const res = await api.call(method, `/activities/${a.id}`, other, body ? { body } : {});
    t.is(res.status, 404, method);
    t.like(res.body, { '@type': 'hydra:Error' });
  }
  for (const id of ['0'.repeat(32), 'not%20an%20id', 'x'.repeat(65)])
    t.is((await api.call('GET', `/activities/${id}`, u)).status, 404, id);
  // Unchanged and still there for its owner.
  const got = await api.call('GET', `/activities/${a.id}`, u);
  t.is(got.status, 200);
  t.is(got.body.name, 'Morning run');
});

test('POST writes one records/activity-changed outbox row with the activity; a refused POST writes none', async (t) => {
  const u = await api.user();
  const a = await created(u, { sport: `/v2/sports/${HIKING}` });
  t.deepEqual(await outboxOf(a.id), [
    {
      queue: 'records',
      job_name: 'activity-changed',
      job_id: `records-${a.id}-v1`,
      payload: {
        activityId: a.id,
        userId: u.ldid,
        sportId: HIKING,
        version: 1,
        change: 'created',
        previousSportId: null,
      },
    },
  ]);
  const jobsOfUser = () =>
    db.selectFrom('outbox').select('job_id').where(sql<string>`payload->>'userId'`, '=', u.ldid).execute();
  const before = await jobsOfUser();
  t.is((await post(u, activity(u, { sport: '/v2/sports/999999' }))).status, 422);
  t.is((await post(u, activity(u, { datastream: { '1': { '999999': 1 } } }))).status, 422);
  t.deepEqual(await jobsOfUser(), before);
});

test('PUT changes name, comment, tags, images, thumbnail and sport; bumps the version; the outbox row names the previous sport', async (t) => {
  const u = await api.user();
  const a = await created(u, { datastream: { '0': { '1': 90 } } });
  const res = await api.call('PUT', `/activities/${a.id}`, u, {
    body: {
      name: 'Evening hike',
      comment: 'windy',
      tags: ['hills'],
      images: ['https://cdn.example.com/a.jpg'],
      thumbnail: 'https://cdn.example.com/t.png',
      sport: `/v2/sports/${HIKING}`,
    },
  });
  t.is(res.status, 200, JSON.stringify(res.body));
  t.like(res.body, {
    '@type': 'Activity',
    id: a.id,
    name: 'Evening hike',
    comment: 'windy',
    tags: ['hills'],
    images: ['https://cdn.example.com/a.jpg'],
    thumbnail: 'https://cdn.example.com/t.png',
    sport: `/v2/sports/${HIKING}`,
    // Derived fields and the streams stay.
    availableDatatypes: [1, 5, 24],
    datastreamFlag: true,
  });
  t.is(res.body.datastream, undefined);
  t.true(res.body.updatedAt >= String(a.updatedAt));
  const row = await db.selectFrom('activities').select('version').where('id', '=', a.id).executeTakeFirstOrThrow();
  t.is(row.version, 2);
  const jobs = await outboxOf(a.id);
  t.is(jobs.length, 2);
  t.like(jobs[1], {
    job_id: `records-${a.id}-v2`,
    payload: { change: 'updated', version: 2, sportId: HIKING, previousSportId: RUNNING },
  });

  // Only the fields sent change; null clears; the same sport is no previous sport.
  const second = await api.call('PUT', `/activities/${a.id}`, u, { body: { comment: null, tags: null } });
  t.like(second.body, { name: 'Evening hike', comment: null, tags: null, sport: `/v2/sports/${HIKING}` });
  t.like((await outboxOf(a.id))[2], { payload: { change: 'updated', version: 3, previousSportId: null } });
  const got = await api.call('GET', `/activities/${a.id}`, u);
  t.deepEqual(got.body.datastream, { '0': { '1': 90 } });
});

test('PUT that changes nothing writes nothing; fields fixed at creation are ignored; unknown members and bad values are 422', async (t) => {
  const u = await api.user();
  const a = await created(u);
  const before = await db.selectFrom('activities').select('version').where('id', '=', a.id).executeTakeFirstOrThrow();
  const same = await api.call('PUT', `/activities/${a.id}`, u, { body: { name: 'Morning run', duration: 999 } });
  t.is(same.status, 200);
  t.is(same.body.duration, 3);
  const after = await db.selectFrom('activities').select('version').where('id', '=', a.id).executeTakeFirstOrThrow();
  t.is(after.version, before.version);
  t.is((await outboxOf(a.id)).length, 1);
  // Sending back what a GET answered is accepted (its fixed and read-only members are ignored).
  const read = (await api.call('GET', `/activities/${a.id}`, u)).body;
  const echoed = await api.call('PUT', `/activities/${a.id}`, u, { body: { ...read, name: 'Renamed' } });
  t.is(echoed.status, 200, JSON.stringify(echoed.body));
  t.like(echoed.body, { name: 'Renamed', duration: 3 });

  const cases: [Body, string][] = [
    [{ sport: '/v2/sports/999999' }, 'sport'],
    [{ sport: 'running' }, 'sport'],
    [{ images: ['nope'] }, 'images[0]'],
    [{ thumbnail: 'nope' }, 'thumbnail'],
    [{ name: 5 }, 'name'],
    [{ nmae: 'typo' }, 'nmae'],
  ];
  for (const [body, path] of cases) {
    const res = await api.call('PUT', `/activities/${a.id}`, u, { body });
    t.is(res.status, 422, JSON.stringify(body));
    t.deepEqual(violations(res.body), [path], JSON.stringify(body));
  }
  t.is((await outboxOf(a.id)).length, 2);
});

test('DELETE removes the activity with its streams: 204, then 404; the outbox row has the next version', async (t) => {
  const u = await api.user();
  const a = await created(u, {
    datastream: { '0': { '1': 90 } },
    locations: { '0': { latitude: 1, longitude: 2 } },
  });
  const res = await api.call('DELETE', `/activities/${a.id}`, u);
  t.is(res.status, 204);
  t.is((await api.call('GET', `/activities/${a.id}`, u)).status, 404);
  t.is((await api.call('DELETE', `/activities/${a.id}`, u)).status, 404);
  for (const table of ['activity_tracks', 'activity_datastreams', 'activity_stream_channels'] as const) {
    const rows = await db.selectFrom(table).select('activity_id').where('activity_id', '=', a.id).execute();
    t.deepEqual(rows, [], table);
  }
  const jobs = await outboxOf(a.id);
  t.like(jobs[1], {
    job_id: `records-${a.id}-v2`,
    payload: { change: 'deleted', version: 2, sportId: RUNNING, userId: u.ldid, previousSportId: null },
  });
});

test("GET /activities lists only the caller's activities, without streams, as a hydra:Collection with paging", async (t) => {
  const u = await api.user();
  const other = await api.user();
  const mine = [];
  for (let i = 0; i < 5; i++)
    mine.push(
      (await created(u, { startdate: `2024-05-0${i + 1}T08:00:00+00:00`, datastream: { '0': { '1': 1 } } })).id,
    );
  await created(other);
  const res = await list(u, '?limit=2');
  t.is(res.status, 200);
  t.like(res.body, {
    '@context': '/v2/contexts/Activity',
    '@id': '/v2/activities',
    '@type': 'hydra:Collection',
    'hydra:totalItems': 5,
  });
  // Most recent start first by default.
  t.deepEqual(ids(res.body), [mine[4], mine[3]]);
  t.is(res.body['hydra:member'][0].datastream, undefined);
  t.is(res.body['hydra:member'][0].locations, undefined);
  t.is(res.body['hydra:member'][0]['@id'], `/v2/activities/${mine[4]}`);
  t.is(res.body['hydra:view']['hydra:next'], '/v2/activities?limit=2&page=2');
  const last = await list(u, '?limit=2&page=3');
  t.deepEqual(ids(last.body), [mine[0]]);
  t.is(last.body['hydra:view']['hydra:next'], undefined);
  const variables = res.body['hydra:search']['hydra:mapping'].map((m: { variable: string }) => m.variable);
  for (const v of [
    'user',
    'user[]',
    'sport',
    'sport[]',
    'startdate[after]',
    'createdAt[strictly_before]',
    'trackFlag',
    'order[duration]',
  ])
    t.true(variables.includes(v), v);
  for (const query of ['?limit=0', '?limit=101', '?page=0', '?page=abc'])
    t.is((await list(u, query)).status, 422, query);
});

test('list filters: user / user[], sport / sport[] (IRI or id), startdate and createdAt bounds, trackFlag', async (t) => {
  const u = await api.user();
  const other = await api.user();
  const run1 = await created(u, { startdate: '2024-01-01T10:00:00+00:00' });
  const hike = await created(u, {
    sport: `/v2/sports/${HIKING}`,
    startdate: '2024-02-01T10:00:00+00:00',
    locations: { '0': { latitude: 1, longitude: 2 } },
  });
  const run2 = await created(u, { startdate: '2024-03-01T10:00:00+00:00' });
  const q = async (query: string) => {
    const res = await list(u, query);
    t.is(res.status, 200, `${query}: ${JSON.stringify(res.body).slice(0, 300)}`);
    return ids(res.body).sort();
  };
  const all = [run1.id, hike.id, run2.id].sort();
  t.deepEqual(await q(`?user=${me(u)}`), all);
  t.deepEqual(await q(`?user=${u.ldid}`), all);
  t.deepEqual(await q(`?user=${me(other)}`), []);
  t.deepEqual(await q(`?user[]=${me(other)}&user[]=${me(u)}`), all);
  t.deepEqual(await q(`?sport=/v2/sports/${HIKING}`), [hike.id]);
  t.deepEqual(await q(`?sport=${RUNNING}`), [run1.id, run2.id].sort());
  t.deepEqual(await q(`?sport[]=${RUNNING}&sport[]=/v2/sports/${HIKING}`), all);
  t.deepEqual(await q('?startdate[after]=2024-02-01T10:00:00%2B00:00'), [hike.id, run2.id].sort());
  t.deepEqual(await q('?startdate[strictly_after]=2024-02-01T10:00:00%2B00:00'), [run2.id]);
  t.deepEqual(await q('?startdate[before]=2024-02-01T11:00:00%2B01:00'), [run1.id, hike.id].sort());
  t.deepEqual(await q('?startdate[strictly_before]=2024-02-01T10:00:00Z'), [run1.id]);
  t.deepEqual(await q('?startdate[after]=2024-01-15T00:00:00Z&startdate[before]=2024-02-15T00:00:00Z&sport=168'), [
    hike.id,
  ]);
  t.deepEqual(await q('?trackFlag=true'), [hike.id]);
  t.deepEqual(await q('?trackFlag=0'), [run1.id, run2.id].sort());
  // createdAt: the creation instants (stored by the database).
  await db
    .updateTable('activities')
    .set({ created_at: new Date('2020-06-01T00:00:00Z') })
    .where('id', '=', run1.id)
    .execute();
  t.deepEqual(await q('?createdAt[before]=2021-01-01T00:00:00Z'), [run1.id]);
  t.deepEqual(await q('?createdAt[strictly_after]=2020-06-01T00:00:00Z'), [hike.id, run2.id].sort());
  for (const query of [
    '?sport=running',
    '?user=/v2/sports/1',
    '?startdate[after]=yesterday',
    '?startdate[after]=2024-01-01T00:00:00',
    '?trackFlag=maybe',
    '?order[startdate]=up',
  ]) {
    const res = await list(u, query);
    t.is(res.status, 422, query);
    t.like(res.body, { '@type': 'ConstraintViolationList' });
  }
});

test('list orders: order[startdate|createdAt|duration|id]=asc|desc, the first given sorts first', async (t) => {
  const u = await api.user();
  const a = await created(u, { startdate: '2024-01-03T00:00:00+00:00', duration: 20 });
  const b = await created(u, { startdate: '2024-01-01T00:00:00+00:00', duration: 10 });
  const c = await created(u, { startdate: '2024-01-02T00:00:00+00:00', duration: 20 });
  const q = async (query: string) => ids((await list(u, query)).body);
  t.deepEqual(await q(''), [a.id, c.id, b.id]);
  t.deepEqual(await q('?order[startdate]=asc'), [b.id, c.id, a.id]);
  t.deepEqual(await q('?order[startdate]=DESC'), [a.id, c.id, b.id]);
  t.deepEqual(await q('?order[duration]=asc&order[startdate]=asc'), [b.id, c.id, a.id]);
  t.deepEqual(await q('?order[duration]=desc&order[startdate]=desc'), [a.id, c.id, b.id]);
  t.deepEqual(await q('?order[createdAt]=asc'), [a.id, b.id, c.id]);
  t.deepEqual(await q('?order[createdAt]=desc'), [c.id, b.id, a.id]);
  t.deepEqual(await q('?order[id]=asc'), [a.id, b.id, c.id].sort());
});

test('the list queries use the activities indexes, led by user_id', async (t) => {
  const users = [await api.user(), await api.user()];
  for (const u of users) await ensureTrackingUser(db, { accountId: u.id, ldid: u.ldid, claims: {} });
  const rows = users.flatMap((u) =>
    Array.from({ length: 2000 }, (_, i) => ({
      user_id: u.ldid,
      sport_id: i % 3 === 0 ? HIKING : RUNNING,
      startdate: new Date(Date.UTC(2020, 0, 1 + i)),
      duration: (i * 37) % 7200,
      manual: true,
      data_summaries: '{}',
      location: 'null',
    })),
  );
  for (let i = 0; i < rows.length; i += 1000)
    await db
      .insertInto('activities')
      .values(rows.slice(i, i + 1000))
      .execute();
  await sql`analyze activities`.execute(db);
  const caller = users[0]?.ldid as string;
  const plan = async (filter: Parameters<typeof activitiesQuery>[2]) => {
    const lines = await activitiesQuery(db, caller, filter).limit(30).explain();
    return lines.map((r) => String(r['QUERY PLAN'])).join('\n');
  };
  const cases: [Parameters<typeof activitiesQuery>[2], string][] = [
    [{}, 'activities_user_startdate_idx'],
    [{ startdate: { after: new Date('2022-01-01T00:00:00Z') } }, 'activities_user_startdate_idx'],
    [{ order: [{ prop: 'createdAt', direction: 'asc' }] }, 'activities_user_created_idx'],
    [{ createdAt: { before: new Date('2030-01-01T00:00:00Z') } }, 'activities_user_'],
    [{ order: [{ prop: 'duration', direction: 'desc' }] }, 'activities_user_duration_idx'],
    [{ order: [{ prop: 'id', direction: 'asc' }] }, 'activities_user_id_idx'],
    [{ sports: [HIKING], startdate: { after: new Date('2022-01-01T00:00:00Z') } }, 'activities_user_'],
  ];
  for (const [filter, index] of cases) {
    const p = await plan(filter);
    t.regex(p, new RegExp(`Index (Only )?Scan( Backward)? using ${index}`), p);
    t.notRegex(p, /Seq Scan/, p);
  }
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
