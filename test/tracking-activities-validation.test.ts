import test from 'ava';
import { sql } from 'kysely';
import { ACTIVITY_LIMITS } from '../shared/tracking/activities/content.ts';
import { startTrackingApi } from './helpers/tracking.ts';
import { activity, activityCalls, type Body, me, violations } from './helpers/tracking-activities.ts';

const api = await startTrackingApi();
test.after.always(() => api.close());

const { db } = api.database;
const { post, created, list, deviceOf } = activityCalls(api);

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
    // The device block names a device: it needs the connector it came through.
    connector: '/v2/connectors/1',
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

test("a JSON create refuses the file import's query fields (422 naming each): they belong in the JSON body", async (t) => {
  const u = await api.user();
  const res = await api.call('POST', '/activities?sport=/v2/sports/121&name=x', u, { body: activity(u) });
  t.is(res.status, 422);
  t.deepEqual(violations(res.body).sort(), ['name', 'sport']);
  t.regex(JSON.stringify(res.body), /file import field: send it in the JSON body/);
});
