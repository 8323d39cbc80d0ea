import { readFile } from 'node:fs/promises';
import test from 'ava';
import { sql } from 'kysely';
import { type ActivityContent, DATATYPE, emptyTrack } from '../shared/tracking/activities/data.ts';
import { fillMovingFields } from '../shared/tracking/activities/moving-store.ts';
import {
  MAX_LISTED_PAUSES,
  MOVING_FAMILIES,
  type MovingRule,
  movingFields,
  movingRuleOf,
} from '../shared/tracking/activities/moving-time.ts';
import { startTrackingApi } from './helpers/tracking.ts';
import { activity } from './helpers/tracking-activities.ts';

const api = await startTrackingApi();
test.after.always(() => api.close());
const { db } = api.database;

const rule = (family: string): MovingRule => {
  const found = MOVING_FAMILIES.find((f) => f.rule.family === family);
  if (!found) throw new Error(family);
  return found.rule;
};
const RUNNING = rule('running');
const WALKING = rule('walking');
const CYCLING = rule('cycling');

/**
 * An activity sampled every `step` seconds whose speed (m/s) at each second is `speedAt(second)`:
 * its distance channel, as an importer or a JSON create stores it.
 */
function ride(duration: number, speedAt: (second: number) => number, step = 1, summaries = new Map<number, number>()) {
  const elapsed: number[] = [];
  const distance: number[] = [];
  let d = 0;
  for (let s = 0; s <= duration; s += step) {
    elapsed.push(s);
    distance.push(d);
    for (let k = s; k < s + step; k++) d += speedAt(k);
  }
  const content: Pick<ActivityContent, 'duration' | 'summaries' | 'datastream' | 'track'> = {
    duration,
    summaries,
    datastream: {
      elapsed: Int32Array.from(elapsed),
      channels: new Map([[DATATYPE.DISTANCE, Float64Array.from(distance)]]),
    },
    track: emptyTrack(),
  };
  return content;
}

test('families: a sport follows its own or its nearest ancestor’s rule; other sports keep their elapsed time', (t) => {
  t.is(movingRuleOf([121]), RUNNING);
  t.is(movingRuleOf([126, 121]), RUNNING, 'trail, a child of running');
  t.is(movingRuleOf([168]), WALKING);
  t.is(movingRuleOf([383, 381]), CYCLING, 'cycle touring, a child of bicycle');
  t.is(movingRuleOf([274]), null, 'swimming');
  t.is(movingRuleOf([402]), null, 'daily activity');
  // Strava's running threshold: slower than a 30-minute mile is resting.
  t.is(Math.round(RUNNING.stoppedSpeed * 1800), 1609);
  t.is(Math.round(WALKING.stoppedSpeed * 3.6 * 10) / 10, 1);
  t.is(CYCLING.stoppedSpeed, 1);
});

test('a run with a 60-second stop: moving time, the pause, and the averages over moving time', (t) => {
  // 3 m/s for 600 s, standing still from 300 to 360.
  const content = ride(600, (s) => (s >= 300 && s < 360 ? 0 : 3));
  const m = movingFields(content, RUNNING);
  t.is(m.moving_time, 540);
  t.deepEqual(m.pauses, [{ start: 300, duration: 60 }]);
  // 1620 m over 540 s: 3 m/s, 10,800 m/h, 333.33 s/km (over 600 s it would be 2.7 m/s).
  t.is(m.moving_speed_avg, 10800);
  t.is(m.moving_pace, 333.33);
});

test('the hold: stops shorter than minPause stay moving time', (t) => {
  const short = RUNNING.minPause - 1;
  const content = ride(300, (s) => (s >= 100 && s < 100 + short ? 0 : 3));
  t.deepEqual(movingFields(content, RUNNING), {
    moving_time: 300,
    pauses: [],
    moving_speed_avg: Math.round(((3 * (300 - short)) / 300) * 3600 * 100) / 100,
    moving_pace: Math.round((300 / ((3 * (300 - short)) / 1000)) * 100) / 100,
  });
  const held = ride(300, (s) => (s >= 100 && s < 100 + RUNNING.minPause ? 0 : 3));
  t.deepEqual(movingFields(held, RUNNING).pauses, [{ start: 100, duration: RUNNING.minPause }]);
});

test('the rule is per family: a slow stretch is a pause for a run, moving for a hike; 0.9 m/s stops a ride, not a walk', (t) => {
  // 120 s at 0.7 m/s (2.5 km/h, a steep climb) in a 600-second outing at 2.5 m/s.
  const climb = ride(600, (s) => (s >= 200 && s < 320 ? 0.7 : 2.5));
  t.deepEqual(movingFields(climb, RUNNING).pauses, [{ start: 200, duration: 120 }]);
  t.deepEqual(movingFields(climb, WALKING).pauses, []);
  t.is(movingFields(climb, WALKING).moving_time, 600);
  const crawl = ride(600, (s) => (s >= 200 && s < 320 ? 0.9 : 6));
  t.deepEqual(movingFields(crawl, CYCLING).pauses, [{ start: 200, duration: 120 }]);
  t.deepEqual(movingFields(crawl, WALKING).pauses, []);
  // A sport without a rule keeps its elapsed time, whatever its samples say.
  const stopped = ride(600, (s) => (s >= 200 && s < 500 ? 0 : 3));
  t.like(movingFields(stopped, null), { moving_time: 600, pauses: [] });
});

test('speed from the speed channel (m/h) or from the GPS track when there is no distance channel', (t) => {
  const elapsed = Int32Array.from({ length: 601 }, (_, i) => i);
  const stopped = (s: number) => s > 100 && s <= 160;
  const bySpeed = movingFields(
    {
      duration: 600,
      summaries: new Map([[DATATYPE.DISTANCE, 1620]]),
      datastream: {
        elapsed,
        channels: new Map([[DATATYPE.SPEED_CURRENT, Float64Array.from(elapsed, (s) => (stopped(s) ? 0 : 10800))]]),
      },
      track: emptyTrack(),
    },
    RUNNING,
  );
  t.is(bySpeed.moving_time, 540);
  t.deepEqual(bySpeed.pauses, [{ start: 100, duration: 60 }]);
  t.is(bySpeed.moving_speed_avg, 10800);
  // Northwards at 3 m/s (a degree of latitude is about 111,195 m on the mean sphere), with a stop.
  let lat = 45;
  const latitude = Float64Array.from(elapsed, (s) => {
    if (s > 0 && !stopped(s)) lat += 3 / 111_195;
    return lat;
  });
  const byTrack = movingFields(
    {
      duration: 600,
      summaries: new Map(),
      datastream: { elapsed: new Int32Array(0), channels: new Map() },
      track: { elapsed, latitude, longitude: new Float64Array(601).fill(6), elevation: new Float64Array(601) },
    },
    RUNNING,
  );
  t.is(byTrack.moving_time, 540);
  t.deepEqual(byTrack.pauses, [{ start: 100, duration: 60 }]);
  t.true(Math.abs((byTrack.moving_speed_avg ?? 0) - 10800) < 5, String(byTrack.moving_speed_avg));
});

test('sparse samples: a recording gap with little ground covered is a pause, a gap run through is not', (t) => {
  // Samples every 5 s at 3 m/s; one 180-second gap covering 3 m (the device paused), one 60-second gap covering 180 m.
  const elapsed = [0, 5, 10, 190, 195, 200, 260, 265];
  const distance = [0, 15, 30, 33, 48, 63, 243, 258];
  const m = movingFields(
    {
      duration: 265,
      summaries: new Map(),
      datastream: {
        elapsed: Int32Array.from(elapsed),
        channels: new Map([[DATATYPE.DISTANCE, Float64Array.from(distance)]]),
      },
      track: emptyTrack(),
    },
    RUNNING,
  );
  t.deepEqual(m.pauses, [{ start: 10, duration: 180 }]);
  t.is(m.moving_time, 85);
});

test('nothing to tell speed from: the moving time is the duration; pauses are clipped to it', (t) => {
  t.deepEqual(
    movingFields(
      {
        duration: 900,
        summaries: new Map([[DATATYPE.DISTANCE, 3000]]),
        datastream: { elapsed: new Int32Array(0), channels: new Map() },
        track: emptyTrack(),
      },
      RUNNING,
    ),
    { moving_time: 900, pauses: [], moving_speed_avg: 12000, moving_pace: 300 },
  );
  // Samples past the declared duration (the last 100 s standing) count up to the duration only.
  const over = ride(700, (s) => (s >= 550 ? 0 : 3));
  over.duration = 600;
  t.deepEqual(movingFields(over, RUNNING).pauses, [{ start: 550, duration: 50 }]);
  t.is(movingFields(over, RUNNING).moving_time, 550);
  // Standing still the whole time: no speed, no pace.
  t.like(
    movingFields(
      ride(600, () => 0),
      RUNNING,
    ),
    { moving_time: 0, moving_speed_avg: null, moving_pace: null },
  );
});

test(`at most ${MAX_LISTED_PAUSES} pauses are listed, the longest, in time order; the moving time counts them all`, (t) => {
  // 150 stops of 10 to 24 s, one every 60 s.
  const stopLength = (k: number) => 10 + (k % 15);
  const content = ride(150 * 60, (s) => (s % 60 < stopLength(Math.floor(s / 60)) ? 0 : 4));
  const m = movingFields(content, CYCLING);
  let all = 0;
  for (let k = 0; k < 150; k++) all += stopLength(k);
  t.is(m.moving_time, 150 * 60 - all);
  t.is(m.pauses.length, MAX_LISTED_PAUSES);
  t.true(m.pauses.every((p, i) => i === 0 || p.start > (m.pauses[i - 1]?.start ?? 0)));
  const shortestListed = Math.min(...m.pauses.map((p) => p.duration));
  const listed = m.pauses.reduce((sum, p) => sum + p.duration, 0);
  // Each length from 10 to 24 s comes 10 times: the 50 left out are those of 10 to 14 s.
  t.is(shortestListed, 15);
  t.is(all - listed, 10 * (10 + 11 + 12 + 13 + 14));
});

test('the real GPX file korita-zbevnica (a 6.3 km hike, points every 26 s): as FitTrackee computes it', async (t) => {
  const u = await api.user();
  const bytes = await readFile(new URL('fixtures/tracking/devices/gpx/korita-zbevnica.gpx', import.meta.url));
  const res = await api.call('POST', '/activities?sport=/v2/sports/168', u, {
    raw: bytes,
    headers: { 'content-type': 'application/gpx+xml' },
  });
  t.is(res.status, 201, JSON.stringify(res.body));
  // gpxpy 1.5.0 (Debian's python3-gpxpy), which FitTrackee runs: the two timed tracks'
  // get_moving_data(stopped_speed_threshold=1) give 3028 + 4056 s moving; FitTrackee counts the
  // rest of the 13,381 s, the 288 s between the tracks included, as pauses.
  t.like(res.body, { duration: 13381, movingTime: 7084 });
  const paused = (res.body.pauses as { duration: number }[]).reduce((sum, p) => sum + p.duration, 0);
  t.is(paused, 13381 - 7084);
  t.true(res.body.pauses.length > 10);
  // Its distance (6,262 m: the 20 m line from one track to the next is not counted, as gpxpy's
  // 6,269 m) over the moving time: 3.18 km/h, 18:51 per km.
  t.is(Math.round(res.body.movingSpeedAvg), 3182);
  t.is(Math.round(res.body.movingPace), 1131);
});

test('through the API: a created activity carries them (item, list), a PUT of the sport recomputes them', async (t) => {
  const u = await api.user();
  const datastream: Record<string, Record<string, number>> = {};
  // 2.5 m/s for 600 s with 120 s at 0.7 m/s from 200: a pause for a run, moving for a hike.
  let d = 0;
  for (let s = 0; s <= 600; s++) {
    datastream[String(s)] = { '5': Math.round(d * 10) / 10 };
    d += s >= 200 && s < 320 ? 0.7 : 2.5;
  }
  const created = await api.call('POST', '/activities', u, {
    body: activity(u, { duration: 600, dataSummaries: { '5': 1284, '24': 600 }, datastream }),
  });
  t.is(created.status, 201, JSON.stringify(created.body));
  t.like(created.body, {
    movingTime: 480,
    pauses: [{ start: 200, duration: 120 }],
    movingSpeedAvg: 9630,
    movingPace: 373.83,
  });
  const id = created.body.id as string;
  const item = await api.call('GET', `/activities/${id}`, u);
  t.like(item.body, { movingTime: 480, pauses: [{ start: 200, duration: 120 }] });
  const list = await api.call('GET', '/activities', u);
  t.like(list.body['hydra:member'][0], { id, movingTime: 480, movingSpeedAvg: 9630 });
  // Renamed: nothing to recompute. Now a hike: the climb is moving.
  t.like((await api.call('PUT', `/activities/${id}`, u, { body: { name: 'x' } })).body, { movingTime: 480 });
  const hike = await api.call('PUT', `/activities/${id}`, u, { body: { sport: '/v2/sports/168' } });
  t.like(hike.body, { movingTime: 600, pauses: [], movingSpeedAvg: 7704, movingPace: 467.29 });
  // Sending back what GET answered is accepted: the moving members are read-only.
  const back = await api.call('GET', `/activities/${id}`, u);
  const { datastream: _d, locations: _l, ...rest } = back.body;
  t.is((await api.call('PUT', `/activities/${id}`, u, { body: rest })).status, 200);
});

test('derived:rebuild --moving fills the activities stored before migration 0062, from their streams', async (t) => {
  const u = await api.user();
  const datastream: Record<string, Record<string, number>> = {};
  for (let s = 0; s <= 600; s++) datastream[String(s)] = { '5': s < 300 ? 3 * s : s < 360 ? 900 : 900 + 3 * (s - 360) };
  const { body } = await api.call('POST', '/activities', u, {
    body: activity(u, { duration: 600, dataSummaries: { '24': 600 }, datastream }),
  });
  const manual = await api.call('POST', '/activities', u, {
    body: activity(u, { startdate: '2024-05-02T08:30:00+02:00', duration: 60, dataSummaries: { '24': 60 } }),
  });
  const ids = [body.id as string, manual.body.id as string];
  const stored = async () =>
    db
      .selectFrom('activities')
      .select(['id', 'moving_time', 'pauses', 'moving_speed_avg', 'moving_pace'])
      .where('id', 'in', ids)
      .orderBy('id')
      .execute();
  const computed = await stored();
  t.like(
    computed.find((r) => r.id === ids[0]),
    { moving_time: 540, pauses: [{ start: 300, duration: 60 }] },
  );
  // As a row stored before the migration: without them.
  await sql`update activities set moving_time = null, pauses = null, moving_speed_avg = null, moving_pace = null
    where id in (${sql.join(ids)})`.execute(db);
  t.true((await stored()).every((r) => r.moving_time === null));
  t.true((await fillMovingFields(db)) >= 2);
  t.deepEqual(await stored(), computed);
  t.is(await fillMovingFields(db), 0, 'nothing left to fill');
});
