import test from 'ava';
import fc from 'fast-check';
import { distanceKm } from '../shared/places/geojson.ts';
import { DATATYPE, emptyDatastream } from '../shared/tracking/activities/data.ts';
import { bestEfforts, type RecordRules } from '../shared/tracking/records/best-efforts.ts';
import { bestTimeOver } from '../shared/tracking/records/best-time.ts';
import {
  type DistanceSeries,
  distanceFromStream,
  distanceFromTrack,
} from '../shared/tracking/records/distance-series.ts';
import { DEFAULT_RECORDS_SETTINGS } from '../shared/tracking/records/settings.ts';
import { content, northTrack, recordWays, rules, series, stream } from './helpers/record-content.ts';

// ---- The brute-force oracle: every window with an edge on a sample, O(n²), no pointers. ----

/** The first time the piecewise-linear distance reaches `target` at or after sample `from`. */
function firstTimeReaching(s: DistanceSeries, from: number, target: number): number | undefined {
  for (let k = from; k + 1 < s.time.length; k++) {
    const d0 = s.distance[k] as number;
    const d1 = s.distance[k + 1] as number;
    if (d0 >= target) return s.time[k];
    if (d1 >= target)
      return (s.time[k] as number) + (((s.time[k + 1] as number) - (s.time[k] as number)) * (target - d0)) / (d1 - d0);
  }
  const last = s.time.length - 1;
  return (s.distance[last] as number) >= target && last >= from ? s.time[last] : undefined;
}

/** The last time the distance is still at most `target`, at or before sample `to`. */
function lastTimeAtMost(s: DistanceSeries, to: number, target: number): number | undefined {
  for (let k = to; k >= 1; k--) {
    const d0 = s.distance[k - 1] as number;
    const d1 = s.distance[k] as number;
    if (d1 <= target) return s.time[k];
    if (d0 <= target)
      return (
        (s.time[k - 1] as number) + (((s.time[k] as number) - (s.time[k - 1] as number)) * (target - d0)) / (d1 - d0)
      );
  }
  return (s.distance[0] as number) <= target ? s.time[0] : undefined;
}

function oracle(s: DistanceSeries, length: number): { seconds: number; start: number } | null {
  const windows: { seconds: number; start: number }[] = [];
  for (let i = 0; i < s.time.length; i++) {
    const end = firstTimeReaching(s, i, (s.distance[i] as number) + length);
    if (end !== undefined) windows.push({ seconds: end - (s.time[i] as number), start: s.time[i] as number });
    const start = lastTimeAtMost(s, i, (s.distance[i] as number) - length);
    if (start !== undefined) windows.push({ seconds: (s.time[i] as number) - start, start });
  }
  if (windows.length === 0) return null;
  const best = Math.min(...windows.map((w) => w.seconds));
  const earliest = Math.min(...windows.filter((w) => w.seconds <= best + 1e-9).map((w) => w.start));
  return { seconds: best, start: earliest };
}

/** Distance at time t (linear between samples). */
function distanceAt(s: DistanceSeries, t: number): number {
  let k = 0;
  while (k + 1 < s.time.length && (s.time[k + 1] as number) < t) k++;
  const t0 = s.time[k] as number;
  const t1 = s.time[k + 1] as number;
  const d0 = s.distance[k] as number;
  return d0 + (((s.distance[k + 1] as number) - d0) * (t - t0)) / (t1 - t0);
}

/** Random activities: whole-second steps (pauses included) with distances that may stand still. */
const randomSeries = fc
  .array(
    fc.record({
      dt: fc.oneof(fc.integer({ min: 1, max: 5 }), fc.integer({ min: 1, max: 600 })),
      dd: fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 40 }), fc.double({ min: 0, max: 40, noNaN: true })),
    }),
    { minLength: 1, maxLength: 80 },
  )
  .map((steps) => {
    const time = [0];
    const distance = [0];
    for (const { dt, dd } of steps) {
      time.push((time.at(-1) as number) + dt);
      distance.push((distance.at(-1) as number) + dd);
    }
    return series(time, distance);
  });

// ---- best time over a distance ----

test('hand-computed: the fastest stretch may start between samples (linear interpolation)', (t) => {
  // 100 m in 10 s, then 100 m in 1 s: 150 m best from t=5 (50 m) to t=11.
  t.deepEqual(bestTimeOver(series([0, 10, 11], [0, 100, 200]), 150), { seconds: 6, start: 5, end: 11 });
  // ... or end between samples: 100 m in 1 s, then 100 m in 10 s.
  t.deepEqual(bestTimeOver(series([0, 1, 11], [0, 100, 200]), 150), { seconds: 6, start: 0, end: 6 });
  // Exactly the whole activity; one metre more is never covered.
  t.deepEqual(bestTimeOver(series([0, 100], [0, 400]), 400), { seconds: 100, start: 0, end: 100 });
  t.is(bestTimeOver(series([0, 100], [0, 400]), 401), null);
  t.is(bestTimeOver(series([0], [0]), 1), null);
  // Steady 4 m/s for 1000 s: 400 m in 100 s, 1000 m in 250 s, the earliest.
  const time = Array.from({ length: 1001 }, (_, i) => i);
  const steady = series(
    time,
    time.map((s) => 4 * s),
  );
  t.deepEqual(bestTimeOver(steady, 400), { seconds: 100, start: 0, end: 100 });
  t.deepEqual(bestTimeOver(steady, 1000), { seconds: 250, start: 0, end: 250 });
});

test('ties go to the earliest stretch; a faster later one wins', (t) => {
  // Two identical 100 m sprints of 20 s, at 100-120 and 300-320: the first.
  const time = [0, 100, 120, 300, 320, 400];
  t.deepEqual(bestTimeOver(series(time, [0, 100, 200, 300, 400, 500]), 100), { seconds: 20, start: 100, end: 120 });
  t.deepEqual(bestTimeOver(series(time, [0, 100, 200, 300, 401, 500]), 100)?.start, 300);
});

test('pauses count: the clock runs while the athlete stands still (or the device stops sampling)', (t) => {
  // 400 m in 100 s, a 600 s stop, 400 m in 100 s: 800 m takes 800 s, 400 m 100 s (the first).
  const paused = series([0, 100, 700, 800], [0, 400, 400, 800]);
  t.deepEqual(bestTimeOver(paused, 800), { seconds: 800, start: 0, end: 800 });
  t.deepEqual(bestTimeOver(paused, 400), { seconds: 100, start: 0, end: 100 });
  // 500 m straddles the stop, and every such stretch takes 725 s: the earliest is kept.
  t.deepEqual(bestTimeOver(paused, 500), { seconds: 725, start: 0, end: 725 });
});

test('property: the two pointers find the brute-force optimum and its earliest start', (t) => {
  fc.assert(
    fc.property(randomSeries, fc.double({ min: 0.5, max: 800, noNaN: true }), (s, length) => {
      const found = bestTimeOver(s, length);
      const expected = oracle(s, length);
      if (expected === null) return found === null;
      return (
        found !== null &&
        Math.abs(found.seconds - expected.seconds) <= 1e-6 &&
        Math.abs(found.start - expected.start) <= 1e-6 &&
        Math.abs(found.end - found.start - found.seconds) <= 1e-9
      );
    }),
    { numRuns: 400 },
  );
  t.pass();
});

test('property: no window between samples beats the result (dense search), and the window covers the distance', (t) => {
  fc.assert(
    fc.property(randomSeries, fc.integer({ min: 1, max: 400 }), (s, length) => {
      const found = bestTimeOver(s, length);
      if (found === null) return true;
      if (distanceAt(s, found.end) - distanceAt(s, found.start) < length - 1e-6) return false;
      const first = s.time[0] as number;
      const last = s.time.at(-1) as number;
      const step = Math.max(0.25, (last - first) / 400);
      for (let a = first; a <= last; a += step)
        for (let b = a + step; b <= last; b += step)
          if (distanceAt(s, b) - distanceAt(s, a) >= length && b - a < found.seconds - 1e-6) return false;
      return true;
    }),
    { numRuns: 60 },
  );
  t.pass();
});

// ---- distance from the stream and the track ----

test('stream: NaN samples are skipped; resets and steps beyond the speed cap add nothing', (t) => {
  const s = distanceFromStream(stream([0, 1, 2, 3, 4, 5, 6, 7], [0, 3, Number.NaN, 6, 5000, 9, 2, 5]), 12.5);
  // 0→3 (+3), 3→6 (+3), 6→5000 spike (+0), 5000→9 drop (+0), 9→2 reset (+0), 2→5 (+3).
  t.deepEqual([...(s?.time ?? [])], [0, 1, 3, 4, 5, 6, 7]);
  t.deepEqual([...(s?.distance ?? [])], [0, 3, 6, 6, 6, 6, 9]);
  t.is(distanceFromStream(stream([0, 1], [Number.NaN, 5]), 10), null, 'one usable sample');
  t.is(distanceFromStream(emptyDatastream(), 10), null);
  // The cap is a speed: a long step is fine when it took long.
  t.deepEqual([...(distanceFromStream(stream([0, 100], [0, 1000]), 12.5)?.distance ?? [])], [0, 1000]);
});

test('stream: a step beyond the cap counts when the 5 s around it are within it (whole-second times); a jump does not', (t) => {
  // 4.5 m/s with times rounded to the second: steps of 0 and 9 m by turns, 9 m beyond the 8 m/s cap.
  const times = Array.from({ length: 21 }, (_, i) => i);
  const rowed = times.map((i) => Math.floor(i / 2) * 9);
  const s = distanceFromStream(stream(times, rowed), 8);
  t.is(s?.distance.at(-1), 90, 'every 9 m step counts');
  t.is(s?.fastest, 9);
  // A 30 m jump among them (a 39 m step): the 5 s around it are beyond the cap, the step adds
  // nothing (its own 9 m lost with it), and its neighbours' 9 m steps still count.
  const jumped = rowed.map((d, i) => (i >= 10 ? d + 30 : d));
  t.is(distanceFromStream(stream(times, jumped), 8)?.distance.at(-1), 81);
  // A lone sample pair has no 5 s around it: beyond the cap is a glitch.
  t.deepEqual([...(distanceFromStream(stream([0, 1], [0, 9]), 8)?.distance ?? [])], [0, 0]);
});

test('stream: samples out of time order are dropped', (t) => {
  const s = distanceFromStream(stream([0, 5, 5, 3, 10], [0, 10, 20, 30, 40]), 100);
  t.deepEqual([...(s?.time ?? [])], [0, 5, 10]);
  t.deepEqual([...(s?.distance ?? [])], [0, 10, 40]);
});

test('track: distances agree with the haversine; a spike point is dropped', (t) => {
  const elapsed = Array.from({ length: 601 }, (_, i) => i);
  const track = northTrack(
    elapsed,
    elapsed.map((i) => (i === 0 ? 0 : 3)),
  );
  const s = distanceFromTrack(track, 12.5);
  const total = s?.distance.at(-1) as number;
  const exact =
    distanceKm(
      [track.longitude[0] as number, track.latitude[0] as number],
      [track.longitude[600] as number, track.latitude[600] as number],
    ) * 1000;
  t.true(Math.abs(total - 1800) < 1e-3, `${total}`);
  t.true(Math.abs(total - exact) < 1e-3);

  // One point 2 km east: its two segments are impossible; the distance does not change.
  const spiked = northTrack(
    elapsed,
    elapsed.map((i) => (i === 0 ? 0 : 3)),
  );
  spiked.longitude[300] = 6.03;
  const withSpike = distanceFromTrack(spiked, 12.5);
  t.is(withSpike?.time.length, 600);
  t.true(Math.abs((withSpike?.distance.at(-1) as number) - 1800) < 1e-3);
  // Without a cap the spike would add about 4 km.
  t.true((distanceFromTrack(spiked, 1e9)?.distance.at(-1) as number) > 5000);
});

test('track: a wrong first fix is left behind once two points agree; the jump adds nothing', (t) => {
  const elapsed = Array.from({ length: 101 }, (_, i) => i);
  const track = northTrack(
    elapsed,
    elapsed.map((i) => (i === 0 ? 0 : 3)),
  );
  track.latitude[0] = 46; // 100 km north of the rest
  const s = distanceFromTrack(track, 12.5);
  // Points 1 and 2 are dropped against point 0; point 2 agrees with point 1 and becomes the reference.
  t.deepEqual([...(s?.time.subarray(0, 3) ?? [])], [0, 2, 3]);
  t.true(Math.abs((s?.distance.at(-1) as number) - 98 * 3) < 1e-3);
});

test('track: steps agree with the haversine within 1e-4 up to latitude 85°, at 1 Hz and for long steps', (t) => {
  const step = fc.oneof(
    fc.double({ min: -0.0002, max: 0.0002, noNaN: true }),
    fc.double({ min: -0.02, max: 0.02, noNaN: true }),
    fc.integer({ min: -200, max: 200 }).map((k) => k / 10_000),
  );
  fc.assert(
    fc.property(
      fc.double({ min: -85, max: 85, noNaN: true }),
      fc.double({ min: -179, max: 179, noNaN: true }),
      fc.array(fc.tuple(step, step), { minLength: 1, maxLength: 20 }),
      (lat, lon, steps) => {
        const latitude = [lat];
        const longitude = [lon];
        for (const [dLat, dLon] of steps) {
          latitude.push(Math.max(-85, Math.min(85, (latitude.at(-1) as number) + dLat)));
          longitude.push((longitude.at(-1) as number) + dLon);
        }
        const track = {
          elapsed: Int32Array.from(latitude, (_, i) => i * 1_000_000),
          latitude: Float64Array.from(latitude),
          longitude: Float64Array.from(longitude),
          elevation: new Float64Array(latitude.length),
        };
        const measured = distanceFromTrack(track, 1e9)?.distance;
        let exact = 0;
        for (let i = 1; i < latitude.length; i++) {
          exact +=
            distanceKm(
              [longitude[i - 1] as number, latitude[i - 1] as number],
              [longitude[i] as number, latitude[i] as number],
            ) * 1000;
          if (Math.abs((measured?.[i] as number) - exact) > 1e-4 * exact + 1e-9) return false;
        }
        return true;
      },
    ),
    { numRuns: 3000 },
  );
  t.pass();
});

// ---- best efforts of an activity ----

test('distance records come from the distance stream, else from the track; ms precision, datatype 24', (t) => {
  // 1 Hz for 1 h at 3.7 m/s, with 67 s at 6 m/s from second 1001: about 13.5 km.
  const elapsed = Array.from({ length: 3601 }, (_, i) => i);
  const steps = elapsed.map((i) => (i === 0 ? 0 : i > 1000 && i <= 1067 ? 6 : 3.7));
  let total = 0;
  const distance = steps.map((v) => {
    total += v;
    return total;
  });
  const byType = (efforts: ReturnType<typeof bestEfforts>) => new Map(efforts.map((e) => [e.type, e]));

  const fromStream = byType(bestEfforts(content({ datastream: stream(elapsed, distance) }), rules()));
  t.deepEqual(
    [...fromStream.keys()].sort(),
    [
      'distance.1000m',
      'distance.10000m',
      'distance.1609m',
      'distance.3218m',
      'distance.400m',
      'distance.5000m',
      'distance.804m',
    ].sort(),
    'every running distance up to 10 km; not the half marathon',
  );
  t.deepEqual(fromStream.get('distance.400m'), {
    type: 'distance.400m',
    datatypeId: DATATYPE.DURATION,
    value: 66.667,
    score: -66.667,
  });

  // A slower track beside the stream is ignored; alone, it gives the same times.
  const slowTrack = northTrack(
    elapsed,
    steps.map((v) => v / 2),
  );
  const both = byType(bestEfforts(content({ datastream: stream(elapsed, distance), track: slowTrack }), rules()));
  t.is(both.get('distance.400m')?.value, 66.667);
  const track = northTrack(elapsed, steps);
  const fromTrack = byType(bestEfforts(content({ track }), rules()));
  t.deepEqual([...fromTrack.keys()].sort(), [...fromStream.keys()].sort());
  for (const [type, effort] of fromStream)
    t.true(Math.abs((fromTrack.get(type)?.value as number) - effort.value) <= 0.002, type);

  // A sport without a family: the summaries only.
  t.deepEqual(bestEfforts(content({ datastream: stream(elapsed, distance) }), { recordWays, family: null }), []);
  // A cyclist's family times 5 and 10 km only (13.5 km done), with its own cap.
  const cycling = DEFAULT_RECORDS_SETTINGS.families.cycling ?? null;
  t.deepEqual(
    bestEfforts(content({ datastream: stream(elapsed, distance) }), { recordWays, family: cycling }).map((e) => e.type),
    ['distance.10000m', 'distance.5000m'],
  );
});

test('property: efforts depend only on the content, and a faster copy never has a slower record', (t) => {
  fc.assert(
    fc.property(randomSeries, (s) => {
      const elapsed = [...s.time];
      const make = (factor: number) =>
        content({
          datastream: stream(
            elapsed,
            [...s.distance].map((d) => d * factor),
          ),
        });
      const wide: RecordRules = { recordWays, family: { sports: [1], distances: [10, 50, 200, 1000], maxSpeed: 1e6 } };
      const once = bestEfforts(make(1), wide);
      if (JSON.stringify(once) !== JSON.stringify(bestEfforts(make(1), wide))) return false;
      const faster = new Map(bestEfforts(make(1.5), wide).map((e) => [e.type, e.value]));
      return once.every((e) => (faster.get(e.type) as number) <= e.value);
    }),
    { numRuns: 200 },
  );
  t.pass();
});
