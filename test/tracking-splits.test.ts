import test from 'ava';
import { computeSplits, type SplitStreams } from '../shared/tracking/activities/splits.ts';
import { startTrackingApi, type TrackingTestUser } from './helpers/tracking.ts';
import { activity, violations } from './helpers/tracking-activities.ts';

// Splits per kilometre and per mile: the rule on crafted streams, then GET /v2/activities/{id}/splits.

const api = await startTrackingApi();
test.after.always(() => api.close());

/** Samples a second apart from 0 to `seconds`, at `speed` m/s, each channel a function of the second. */
function steady(seconds: number, speed: number, channels: { hr?: (s: number) => number; ele?: (s: number) => number }) {
  const n = seconds + 1;
  const elapsed = Int32Array.from({ length: n }, (_, s) => s);
  const streams: SplitStreams = { elapsed, distance: Float64Array.from(elapsed, (s) => s * speed) };
  if (channels.hr) streams.heartRate = Float64Array.from(elapsed, channels.hr);
  if (channels.ele) streams.elevation = Float64Array.from(elapsed, channels.ele);
  return streams;
}

test('constant speed: equal splits, no partial one when the distance ends on a boundary', (t) => {
  const splits = computeSplits(steady(1000, 4, {}), 'km');
  t.deepEqual(
    splits.map((s) => [s.index, s.distance, s.start, s.elapsedTime, s.pace]),
    [
      [1, 1000, 0, 250, 250],
      [2, 1000, 250, 250, 250],
      [3, 1000, 500, 250, 250],
      [4, 1000, 750, 250, 250],
    ],
  );
  t.true(splits.every((s) => s.elevationChange === null && s.averageHeartRate === null));
});

test('a partial last split: its distance, its time and its pace scaled to a whole unit', (t) => {
  const splits = computeSplits(steady(1100, 4, {}), 'km');
  t.is(splits.length, 5);
  t.like(splits[4], { index: 5, start: 1000, elapsedTime: 100, pace: 250 });
  t.true(Math.abs((splits[4]?.distance ?? 0) - 400) < 1e-9);
});

test('per mile: 1609.344 m splits', (t) => {
  const splits = computeSplits(steady(1100, 4, {}), 'mile');
  t.is(splits.length, 3);
  const mile = 1609.344 / 4;
  for (const s of splits.slice(0, 2)) {
    t.is(s.distance, 1609.344);
    t.true(Math.abs(s.elapsedTime - mile) < 1e-9 && Math.abs(s.pace - mile) < 1e-9);
  }
  t.true(Math.abs((splits[2]?.distance ?? 0) - (4400 - 2 * 1609.344)) < 1e-9);
  t.true(Math.abs((splits[2]?.pace ?? 0) - mile) < 1e-9);
});

test('the boundary time and elevation are interpolated between the samples around it', (t) => {
  const splits = computeSplits(
    {
      elapsed: [0, 100, 200],
      distance: [0, 900, 1100],
      elevation: [10, 19, 21],
    },
    'km',
  );
  // 1000 m is halfway between 900 m (100 s, 19 m) and 1100 m (200 s, 21 m): 150 s, 20 m.
  t.deepEqual(splits, [
    { index: 1, distance: 1000, start: 0, elapsedTime: 150, pace: 150, elevationChange: 10, averageHeartRate: null },
    { index: 2, distance: 100, start: 150, elapsedTime: 50, pace: 500, elevationChange: 1, averageHeartRate: null },
  ]);
});

test("heart rate: the mean of the split's samples, null for a split no sample falls in", (t) => {
  // The first split holds seconds 0..250 (0 m to 1000 m), the second 251..500.
  const splits = computeSplits(steady(500, 4, { hr: (s) => s }), 'km');
  t.deepEqual(
    splits.map((s) => s.averageHeartRate),
    [125, 375.5],
  );
  // One sample jumps three kilometres: the splits it crosses share its time, the last one holds it.
  const jump = computeSplits({ elapsed: [0, 300], distance: [0, 3000], heartRate: [120, 150] }, 'km');
  t.deepEqual(
    jump.map((s) => [s.elapsedTime, s.averageHeartRate]),
    [
      [100, 120],
      [100, null],
      [100, 150],
    ],
  );
});

test('elevation change per split; samples without a distance still count', (t) => {
  const splits = computeSplits(steady(500, 4, { ele: (s) => 100 + s / 10 }), 'km');
  t.deepEqual(
    splits.map((s) => s.elevationChange),
    [25, 25],
  );
  // A heart-rate sample between two distance samples belongs to the split being filled.
  const gaps = computeSplits(
    {
      elapsed: [0, 50, 100, 150, 200],
      distance: [0, Number.NaN, 1000, Number.NaN, 1500],
      heartRate: [100, 110, 120, 200, 140],
      elevation: [5, Number.NaN, Number.NaN, 7, Number.NaN],
    },
    'km',
  );
  t.deepEqual(
    gaps.map((s) => [s.distance, s.elapsedTime, s.averageHeartRate, s.elevationChange]),
    [
      [1000, 100, 110, 0],
      [500, 100, 170, 2],
    ],
  );
});

test('no distance stream, or no distance at all: no splits; a distance going back counts as its maximum', (t) => {
  t.deepEqual(computeSplits({ elapsed: [0, 1, 2], distance: undefined, heartRate: [1, 2, 3] }, 'km'), []);
  t.deepEqual(computeSplits({ elapsed: [0, 1], distance: [Number.NaN, Number.NaN] }, 'km'), []);
  t.deepEqual(computeSplits({ elapsed: [0, 1], distance: [0, 0] }, 'km'), []);
  const noisy = computeSplits({ elapsed: [0, 100, 200, 300], distance: [0, 800, 700, 1200] }, 'km');
  t.deepEqual(
    noisy.map((s) => [s.distance, s.elapsedTime]),
    [
      [1000, 250],
      [200, 50],
    ],
  );
});

// The route.

// biome-ignore lint/suspicious/noExplicitAny: parsed JSON answers, read member by member.
type Json = Record<string, any>;

let owner: TrackingTestUser;
let id: string;
let bare: string;
test.before(async () => {
  owner = await api.user();
  // 1100 s at 4 m/s: 4400 m, heart rate 150, elevation up 0.1 m a second.
  const datastream: Record<string, Record<string, number>> = {};
  for (let s = 0; s <= 1100; s++) datastream[String(s)] = { '1': 150, '5': s * 4, '14': 100 + s / 10 };
  const res = await api.call('POST', '/activities', owner, {
    body: activity(owner, { duration: 1100, dataSummaries: { '5': 4400, '24': 1100 }, datastream }),
  });
  if (res.status !== 201) throw new Error(JSON.stringify(res.body));
  id = res.body.id;
  const manual = await api.call('POST', '/activities', owner, { body: activity(owner) });
  if (manual.status !== 201) throw new Error(JSON.stringify(manual.body));
  bare = manual.body.id;
});

const splits = (query = '', u: TrackingTestUser | null = owner, activityId = id) =>
  api.call('GET', `/activities/${activityId}/splits${query}`, u);

test('GET splits: per kilometre by default, a Hydra collection of ActivitySplit', async (t) => {
  const res = await splits();
  t.is(res.status, 200, JSON.stringify(res.body));
  t.regex(res.headers.get('content-type') ?? '', /^application\/ld\+json/);
  t.is(res.body['hydra:totalItems'], 5);
  const members = res.body['hydra:member'] as Json[];
  t.deepEqual(
    members.map((m) => [m.index, m.distance, m.start, m.elapsedTime, m.pace, m.elevationChange, m.averageHeartRate]),
    [
      [1, 1000, 0, 250, 250, 25, 150],
      [2, 1000, 250, 250, 250, 25, 150],
      [3, 1000, 500, 250, 250, 25, 150],
      [4, 1000, 750, 250, 250, 25, 150],
      [5, 400, 1000, 100, 250, 10, 150],
    ],
  );
  t.like(members[0], {
    '@id': `/v2/activities/${id}/splits?unit=km#1`,
    '@type': 'ActivitySplit',
    activity: `/v2/activities/${id}`,
    unit: 'km',
  });
  t.deepEqual((await splits('?unit=km')).body['hydra:member'], members);
});

test('GET splits?unit=mile: 1609.344 m splits, pace in seconds per mile', async (t) => {
  const res = await splits('?unit=mile');
  t.is(res.status, 200, JSON.stringify(res.body));
  const members = res.body['hydra:member'] as Json[];
  t.deepEqual(
    members.map((m) => [m.unit, m.distance, m.elapsedTime, m.pace]),
    [
      ['mile', 1609.344, 402.3, 402.3],
      ['mile', 1609.344, 402.3, 402.3],
      ['mile', 1181.3, 295.3, 402.3],
    ],
  );
});

test('without an elevation channel (14), the elevation change comes from the track', async (t) => {
  const datastream: Record<string, Record<string, number>> = {};
  const locations: Record<string, { latitude: number; longitude: number; elevation: number | null }> = {};
  // 4 m/s for 500 s; the track climbs 0.1 m a second, a point every 10 s (the middle one without elevation).
  for (let s = 0; s <= 500; s++) datastream[String(s)] = { '5': s * 4 };
  for (let s = 0; s <= 500; s += 10)
    locations[String(s)] = { latitude: 45 + s * 3.6e-5, longitude: 6, elevation: s === 250 ? null : 100 + s / 10 };
  const created = await api.call('POST', '/activities', owner, {
    body: activity(owner, { duration: 500, dataSummaries: { '5': 2000, '24': 500 }, datastream, locations }),
  });
  t.is(created.status, 201, JSON.stringify(created.body));
  const res = await splits('', owner, created.body.id);
  t.is(res.status, 200, JSON.stringify(res.body));
  t.deepEqual(
    (res.body['hydra:member'] as Json[]).map((m) => [m.index, m.distance, m.elevationChange]),
    [
      [1, 1000, 25],
      [2, 1000, 25],
    ],
  );
});

test('an activity without a distance stream: an empty collection', async (t) => {
  const res = await splits('', owner, bare);
  t.is(res.status, 200, JSON.stringify(res.body));
  t.deepEqual(res.body['hydra:member'], []);
  t.is(res.body['hydra:totalItems'], 0);
});

test('an unknown unit is a 422 naming `unit`', async (t) => {
  for (const query of ['?unit=furlong', '?unit=', '?unit=KM']) {
    const res = await splits(query);
    t.is(res.status, 422, query);
    t.like(res.body, { '@type': 'ConstraintViolationList' }, query);
    t.true(violations(res.body).includes('unit'), JSON.stringify(res.body.violations));
  }
});

test("another user's activity is a 404, no token a 401, a missing one a 404", async (t) => {
  const other = await api.user();
  const res = await splits('', other);
  t.is(res.status, 404);
  t.like(res.body, { '@type': 'hydra:Error' });
  t.is((await splits('', null)).status, 401);
  t.is((await splits('', owner, '0123456789abcdef0123456789abcdef')).status, 404);
});
