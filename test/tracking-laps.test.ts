import { Decoder, Stream } from '@garmin/fitsdk';
import test from 'ava';
import { type ActivityContent, DATATYPE, emptyDatastream, emptyTrack } from '../shared/tracking/activities/data.ts';
import { computeLaps, lapRanges } from '../shared/tracking/activities/laps.ts';
import { movingRuleOf } from '../shared/tracking/activities/moving-time.ts';
import { exportGpx } from '../shared/tracking/formats/gpx-export.ts';
import { importActivityFile } from '../shared/tracking/formats/import-file.ts';
import { activityFileUploads, type Body, MEDIA } from './helpers/activity-file-uploads.ts';
import { fixture } from './helpers/activity-files.ts';
import { startTrackingApi, type TrackingTestUser } from './helpers/tracking.ts';
import { activity, RUNNING } from './helpers/tracking-activities.ts';

// Laps: the rule on crafted streams, then GET /v2/activities/{id}/laps on imported files (their
// own lap totals as the reference), JSON activities with lap markers, and exports that keep them.

const ROWING = 263;
const running = movingRuleOf([RUNNING]);

const api = await startTrackingApi();
test.after.always(() => api.close());
const { postRaw } = activityFileUploads(api);

/** An activity of `seconds` 1 Hz samples at `speed` m/s, heart rate = the second, laps ending at `ends`. */
function steady(seconds: number, speed: number, ends: number[], extra: Partial<ActivityContent> = {}): ActivityContent {
  const elapsed = Int32Array.from({ length: seconds + 1 }, (_, s) => s);
  const channels = new Map<number, Float64Array>([
    [DATATYPE.DISTANCE, Float64Array.from(elapsed, (s) => s * speed)],
    [DATATYPE.HR_CURRENT, Float64Array.from(elapsed, (s) => s)],
    [DATATYPE.ELEVATION_CURRENT, Float64Array.from(elapsed, (s) => 100 + s / 10)],
    [DATATYPE.LAP, Float64Array.from(elapsed, (s) => (ends.includes(s) ? 1 : Number.NaN))],
  ]);
  return {
    sportId: RUNNING,
    name: null,
    startdate: new Date('2024-05-01T06:00:00Z'),
    duration: seconds,
    summaries: new Map(),
    datastream: { elapsed, channels },
    track: emptyTrack(),
    ...extra,
  };
}

test('lapRanges: cut after each marker, the rest is the last lap, which runs to the end', (t) => {
  const elapsed = [0, 10, 20, 30, 40];
  t.deepEqual(
    lapRanges(elapsed, (i) => i === 1 || i === 3, 50),
    [
      { from: 0, to: 2, start: 0, end: 10 },
      { from: 2, to: 4, start: 10, end: 30 },
      { from: 4, to: 5, start: 30, end: 50 },
    ],
  );
  // A marker on the last sample: no empty lap after it; the last lap is stretched to the duration.
  t.deepEqual(
    lapRanges(elapsed, (i) => i === 4, 45),
    [{ from: 0, to: 5, start: 0, end: 45 }],
  );
  t.deepEqual(
    lapRanges([], () => false, 600),
    [{ from: 0, to: 0, start: 0, end: 600 }],
  );
});

test('computeLaps: start, duration, distance and the summaries of each lap', (t) => {
  const laps = computeLaps(steady(1000, 4, [250, 600]), null);
  t.deepEqual(
    laps.map((l) => [l.index, l.start, l.duration, l.movingTime, l.distance]),
    [
      [1, 0, 250, 250, 1000],
      [2, 250, 350, 350, 1400],
      [3, 600, 400, 400, 1600],
    ],
  );
  // Lap 2 holds seconds 251..600: heart rate 251..600, elevation 125.1..160.
  t.like(Object.fromEntries(laps[1]?.summaries ?? []), {
    [DATATYPE.DURATION]: 350,
    [DATATYPE.DISTANCE]: 1400,
    [DATATYPE.SPEED_AVG]: 14400,
    [DATATYPE.HR_AVG]: 425.5,
    [DATATYPE.HR_MAX]: 600,
    [DATATYPE.ELEVATION_MAX]: 160,
    [DATATYPE.ELEVATION_MIN]: 125.1,
    17: 142.55,
  });
  // The laps add up to the activity.
  t.is(
    laps.reduce((sum, l) => sum + (l.distance ?? 0), 0),
    4000,
  );
  t.is(
    laps.reduce((sum, l) => sum + l.duration, 0),
    1000,
  );
});

test('computeLaps: time between laps without samples (a rest) is a pause of the next lap', (t) => {
  // Laps of 100 s at 3 m/s with 60 s of nothing between them, as the FIT fixture's intervals.
  const seconds = [...Array.from({ length: 101 }, (_, s) => s), ...Array.from({ length: 100 }, (_, s) => 161 + s)];
  const content = steady(0, 0, []);
  content.duration = 260;
  content.datastream = {
    elapsed: Int32Array.from(seconds),
    channels: new Map([
      [DATATYPE.DISTANCE, Float64Array.from(seconds, (s) => (s <= 100 ? s * 3 : 300 + (s - 160) * 3))],
      [DATATYPE.LAP, Float64Array.from(seconds, (s) => (s === 100 || s === 260 ? 1 : Number.NaN))],
    ]),
  };
  const laps = computeLaps(content, running);
  // The 61 s from lap 1's last sample (100) to lap 2's first (161) are lap 2's pause.
  t.deepEqual(
    laps.map((l) => [l.start, l.duration, l.movingTime, l.distance]),
    [
      [0, 100, 100, 300],
      [100, 160, 99, 300],
    ],
  );
  // Without a moving rule (the sport keeps its elapsed time): moving time is the duration.
  t.deepEqual(
    computeLaps(content, null).map((l) => l.movingTime),
    [100, 160],
  );
});

test('computeLaps: no markers is one lap; no samples is one lap with the activity summaries; a track gives the distance', (t) => {
  const one = computeLaps(steady(100, 2, []), null);
  t.deepEqual(
    one.map((l) => [l.start, l.duration, l.distance]),
    [[0, 100, 200]],
  );
  const manual = computeLaps(
    {
      duration: 1800,
      summaries: new Map([
        [DATATYPE.DISTANCE, 5000],
        [DATATYPE.DURATION, 1800],
      ]),
      datastream: emptyDatastream(),
      track: emptyTrack(),
    },
    running,
  );
  t.deepEqual(
    manual.map((l) => [l.start, l.duration, l.movingTime, l.distance, Object.fromEntries(l.summaries)]),
    [[0, 1800, 1800, 5000, { 5: 5000, 24: 1800 }]],
  );
  // A datastream without distance, a track along a meridian: 0.001° of latitude is about 111 m.
  const tracked = steady(10, 0, [5]);
  tracked.datastream.channels.delete(DATATYPE.DISTANCE);
  tracked.track = {
    elapsed: Int32Array.of(0, 5, 10),
    latitude: Float64Array.of(45, 45.001, 45.003),
    longitude: Float64Array.of(6, 6, 6),
    elevation: Float64Array.of(Number.NaN, Number.NaN, Number.NaN),
  };
  const [a, b] = computeLaps(tracked, null).map((l) => l.distance ?? Number.NaN);
  t.true(Math.abs((a as number) - 111.2) < 0.1 && Math.abs((b as number) - 222.4) < 0.1, `${a} ${b}`);
  tracked.track = emptyTrack();
  t.is(computeLaps(tracked, null)[0]?.distance, null);
});

test('GPX export: a segment per lap, a marker on an unlocated second ends the lap at its last located point; the import reads them back', (t) => {
  const content = steady(30, 2, [10, 25]);
  // Located every 2 s: the marker at 25 (unlocated) ends the second segment at 24.
  const located = Array.from({ length: 16 }, (_, k) => k * 2);
  content.track = {
    elapsed: Int32Array.from(located),
    latitude: Float64Array.from(located, (s) => 45 + s / 10_000),
    longitude: Float64Array.from(located, () => 6),
    elevation: Float64Array.from(located, () => Number.NaN),
  };
  const gpx = exportGpx(content);
  t.is(gpx.match(/<trkseg>/g)?.length, 3);
  const back = importActivityFile(Buffer.from(gpx)).content;
  const marked = [...(back.datastream.channels.get(DATATYPE.LAP) ?? [])].flatMap((v, i) =>
    v === 1 ? [back.datastream.elapsed[i]] : [],
  );
  t.deepEqual(marked, [10, 24, 30]);
  t.deepEqual(
    computeLaps(back, null).map((l) => [l.start, l.duration]),
    [
      [0, 10],
      [10, 14],
      [24, 6],
    ],
  );
  // One lap: one segment, and a GPX of one segment has no lap marker.
  const single = exportGpx({ ...content, datastream: steady(30, 2, []).datastream });
  t.is(single.match(/<trkseg>/g)?.length, 1);
  t.false(importActivityFile(Buffer.from(single)).content.datastream.channels.has(DATATYPE.LAP));
});

// The route.

// biome-ignore lint/suspicious/noExplicitAny: parsed JSON answers, read member by member.
type Json = Record<string, any>;

const laps = (u: TrackingTestUser | null, id: string) => api.call('GET', `/activities/${id}/laps`, u);
const membersOf = async (u: TrackingTestUser, id: string): Promise<Json[]> => {
  const res = await laps(u, id);
  if (res.status !== 200) throw new Error(`GET laps: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body['hydra:member'];
};
const imported = async (u: TrackingTestUser, file: string, type: string, query = '') => {
  const res = await postRaw(u, await fixture(file), type, query);
  if (res.status !== 201) throw new Error(`POST ${file}: ${res.status} ${JSON.stringify(res.body)}`);
  return (res.body as Body).id as string;
};
const exported = async (u: TrackingTestUser, id: string, format: 'gpx' | 'tcx') => {
  const res = await api.call('GET', `/activities/${id}.${format}`, u);
  if (res.status !== 200) throw new Error(`GET ${id}.${format}: ${res.status}`);
  return Buffer.from(res.body as string);
};
/** When each lap ends (epoch seconds). */
const ends = (members: Json[]) => members.map((m) => Date.parse(m.startdate) / 1000 + m.duration);

/** A TCX file's own laps: StartTime, TotalTimeSeconds, DistanceMeters (any prefix). */
function tcxLaps(text: string) {
  return [
    ...text.matchAll(
      /<(?:\w+:)?Lap StartTime="([^"]+)">\s*<(?:\w+:)?TotalTimeSeconds>([\d.]+)<\/(?:\w+:)?TotalTimeSeconds>\s*<(?:\w+:)?DistanceMeters>([\d.]+)</g,
    ),
  ].map((m) => ({ start: Date.parse(m[1] as string) / 1000, seconds: Number(m[2]), metres: Number(m[3]) }));
}

for (const file of ['devices/tcx/2x2km.tcx', 'devices/tcx/3x250m.tcx', 'apps/garmin-bike-laps.tcx']) {
  test(`${file}: its laps, with the file's starts, times and distances`, async (t) => {
    const u = await api.user();
    const own = tcxLaps((await fixture(file)).toString());
    const members = await membersOf(u, await imported(u, file, MEDIA.tcx));
    t.is(members.length, own.length);
    t.true(own.length >= 1);
    for (const [k, lap] of own.entries()) {
      const m = members[k] as Json;
      t.is(m.index, k + 1);
      // Times are rounded to the second (2x2km starts at .999).
      t.true(Math.abs(Date.parse(m.startdate) / 1000 - lap.start) <= 1, `lap ${k + 1} start`);
      t.true(Math.abs(m.duration - lap.seconds) <= 1, `lap ${k + 1}: ${m.duration} s, the file says ${lap.seconds}`);
      t.true(Math.abs(m.distance - lap.metres) <= 0.5, `lap ${k + 1}: ${m.distance} m, the file says ${lap.metres}`);
      t.is(m.dataSummaries['24'], m.duration);
      t.is(m.dataSummaries['5'], m.distance);
    }
  });
}

test("the FIT fixture's three lap messages: three laps, moving times and distances near the file's", async (t) => {
  const u = await api.user();
  const bytes = await fixture('devices/fit/3x250m.fit');
  const own = (new Decoder(Stream.fromBuffer(bytes)).read().messages.lapMesgs ?? []) as Json[];
  t.is(own.length, 3);
  const id = await imported(u, 'devices/fit/3x250m.fit', MEDIA.fit, `?sport=${ROWING}`);
  const members = await membersOf(u, id);
  t.is(members.length, 3);
  for (const [k, lap] of own.entries()) {
    const m = members[k] as Json;
    // A lap ends on its last record (the message's timestamp, or up to 2 s before it).
    const end = (lap.timestamp as Date).getTime() / 1000;
    t.true((ends(members)[k] as number) <= end && end - (ends(members)[k] as number) <= 2, `lap ${k + 1} end`);
    // The rest between two laps is the next lap's pause: its moving time is the file's lap time.
    t.true(
      Math.abs(m.movingTime - lap.totalTimerTime) <= 4,
      `lap ${k + 1}: ${m.movingTime} s moving, file ${lap.totalTimerTime}`,
    );
    // The distance covered during that rest is the next lap's too.
    t.true(Math.abs(m.distance - lap.totalDistance) <= 5, `lap ${k + 1}: ${m.distance} m, file ${lap.totalDistance}`);
    t.truthy(m.dataSummaries['4'] && m.dataSummaries['3'] && m.dataSummaries['7'] && m.dataSummaries['13']);
  }
  const activityBody = (await api.call('GET', `/activities/${id}`, u)).body as Json;
  t.is(
    Math.round(members.reduce((sum, m) => sum + m.distance, 0) * 100) / 100,
    activityBody.dataSummaries['5'],
    'the laps add up to the activity',
  );
  t.is(
    members.reduce((sum, m) => sum + m.duration, 0),
    activityBody.duration,
  );
  t.like(members[1], {
    '@id': `/v2/activities/${id}/laps#2`,
    '@type': 'ActivityLap',
    activity: `/v2/activities/${id}`,
    index: 2,
  });
});

test('laps survive the TCX export and re-import exactly, and the GPX export (a segment per lap) keeps where they end', async (t) => {
  const u = await api.user();
  const id = await imported(u, 'devices/fit/3x250m.fit', MEDIA.fit, `?sport=${ROWING}`);
  const original = await membersOf(u, id);
  const tcx = await exported(u, id, 'tcx');
  t.is(tcx.toString().match(/<Lap StartTime=/g)?.length, 3);
  const again = await postRaw(u, tcx, MEDIA.tcx, `?sport=${ROWING}&duplicates=keep`);
  t.is(again.status, 201, JSON.stringify(again.body));
  const fromTcx = await membersOf(u, (again.body as Body).id as string);
  const pick = (m: Json) => [m.startdate, m.start, m.duration, m.movingTime, m.distance];
  t.deepEqual(fromTcx.map(pick), original.map(pick));

  const gpx = await exported(u, id, 'gpx');
  t.is(gpx.toString().match(/<trkseg>/g)?.length, 3);
  const res = await postRaw(u, gpx, MEDIA.gpx, `?sport=${ROWING}&duplicates=keep`);
  t.is(res.status, 201, JSON.stringify(res.body));
  const fromGpx = await membersOf(u, (res.body as Body).id as string);
  // GPX has no distances (measured along the track again) and starts at its first point: the
  // laps keep their number and their ends.
  t.is(fromGpx.length, 3);
  t.deepEqual(ends(fromGpx), ends(original));
});

test('an activity posted as JSON with lap markers (datatype 20) has those laps', async (t) => {
  const u = await api.user();
  const datastream: Record<string, Record<string, number>> = {};
  for (let s = 0; s <= 600; s += 10) {
    datastream[String(s)] = { '1': 140 + s / 10, '5': s * 3, ...(s === 200 || s === 450 ? { '20': 1 } : {}) };
  }
  const res = await api.call('POST', '/activities', u, {
    body: activity(u, { duration: 600, dataSummaries: { '5': 1800, '24': 600 }, datastream }),
  });
  t.is(res.status, 201, JSON.stringify(res.body));
  const members = await membersOf(u, res.body.id);
  t.deepEqual(
    members.map((m) => [m.index, m.start, m.duration, m.movingTime, m.distance, m.dataSummaries['3']]),
    [
      [1, 0, 200, 200, 600, 160],
      [2, 200, 250, 250, 750, 185],
      [3, 450, 150, 150, 450, 200],
    ],
  );
  t.is(members[0]?.startdate, '2024-05-01T06:30:00+00:00');
  t.is(members[1]?.startdate, '2024-05-01T06:33:20+00:00');
  // A manual activity without samples: one lap, the whole activity.
  const manual = await api.call('POST', '/activities', u, { body: activity(u) });
  t.deepEqual(
    (await membersOf(u, manual.body.id)).map((m) => [m.start, m.duration, m.distance]),
    [[0, 3, 10.5]],
  );
});

test("another user's activity is a 404, a malformed or missing id a 404 saying why, no token a 401, all in Hydra's format", async (t) => {
  const [u, other] = [await api.user(), await api.user()];
  const id = await imported(u, 'apps/garmin-bike-laps.tcx', MEDIA.tcx);
  const foreign = await laps(other, id);
  t.is(foreign.status, 404);
  t.is(foreign.body['@type'], 'hydra:Error');
  // A malformed id names the rule it breaks; a well-formed unknown one is simply not there.
  for (const [bad, why] of [
    ['bad%20id', /params\.id: .*pattern/],
    ['x'.repeat(65), /params\.id: .*pattern/],
    ['0123456789abcdef0123456789abcdef', /No activity/],
  ] as const) {
    const res = await laps(u, bad);
    t.is(res.status, 404, bad);
    t.is(res.body['@type'], 'hydra:Error', bad);
    t.regex(res.body['hydra:description'], why, bad);
  }
  t.is((await laps(null, id)).status, 401);
});

test('the laps route is in /openapi.json and ActivityLap in the Hydra documentation', async (t) => {
  const doc = (await (await api.fetch('/openapi.json')).json()) as Json;
  const op = doc.paths['/v2/activities/{id}/laps']?.get;
  t.truthy(op);
  t.truthy(op.responses['200'] && op.responses['401'] && op.responses['404']);
  const docs = (await api.call('GET', '/docs.jsonld', null)).body;
  const cls = docs['hydra:supportedClass'].find((c: Json) => c['@id'] === '#ActivityLap');
  t.deepEqual(
    cls['hydra:supportedProperty'].map((p: Json) => p['hydra:title']),
    ['activity', 'index', 'startdate', 'start', 'duration', 'movingTime', 'distance', 'dataSummaries'],
  );
  t.is((await api.call('GET', '/contexts/ActivityLap', null)).status, 200);
});
