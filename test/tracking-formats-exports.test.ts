import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import test from 'ava';
import fc from 'fast-check';
import { type ActivityContent, DATATYPE } from '../shared/tracking/activities/data.ts';
import { exportGpx, gpxChunks } from '../shared/tracking/formats/gpx-export.ts';
import { importActivityFile } from '../shared/tracking/formats/import-file.ts';
import { exportTcx, splitTotal } from '../shared/tracking/formats/tcx-export.ts';
import { CHUNK_CHARS } from '../shared/tracking/formats/xml-output.ts';
import { schemaValidator } from './helpers/activity-files.ts';

let tmp: string;
test.before(async () => {
  tmp = await mkdtemp(path.join(tmpdir(), 'tracking-formats-'));
});
test.after.always(() => rm(tmp, { recursive: true, force: true }));
const assertValid = schemaValidator(() => tmp);

// ---------------------------------------------------------------- exports of generated activities

/** Activities as the JSON API, the importers or the database may hold them, odd values included. */
const activityArb = fc
  .record({
    sportId: fc.constantFrom(121, 381, 263, 402, 110, 388, 274),
    name: fc.option(fc.string({ maxLength: 300, unit: 'binary' }), { nil: null }),
    startMs: fc.integer({ min: Date.UTC(1990, 0, 1), max: Date.UTC(2090, 0, 1) }),
    steps: fc.array(
      fc.record({
        gap: fc.integer({ min: 1, max: 400 }),
        where: fc.constantFrom('both', 'both', 'datastream', 'track'),
        hr: fc.option(fc.double({ min: 0, max: 300, noNaN: true })),
        cadence: fc.option(fc.double({ min: 0, max: 400, noNaN: true })),
        power: fc.option(fc.integer({ min: 0, max: 4000 })),
        speed: fc.option(fc.double({ min: 0, max: 600_000, noNaN: true })),
        run: fc.double({ min: 0, max: 12, noNaN: true }),
        elevation: fc.option(fc.double({ min: -600, max: 9500, noNaN: true })),
        lap: fc.boolean(),
        dLat: fc.double({ min: -1e-4, max: 1e-4, noNaN: true }),
        dLon: fc.double({ min: -1e-4, max: 1e-4, noNaN: true }),
      }),
      { maxLength: 40 },
    ),
    first: fc.integer({ min: 0, max: 5 }),
    extra: fc.integer({ min: 0, max: 100 }),
    lat: fc.double({ min: -80, max: 80, noNaN: true }),
    lon: fc.double({ min: -179.9, max: 179.9, noNaN: true }),
    channels: fc.subarray(['hr', 'cadence', 'power', 'speed', 'distance', 'elevation', 'lap'] as const),
    calories: fc.option(fc.double({ min: 0, max: 5000, noNaN: true })),
    distance: fc.option(fc.double({ min: 0, max: 1000, noNaN: true })),
  })
  .map((g): ActivityContent => {
    const ds: number[] = [];
    const tr: number[] = [];
    const cols: Record<string, number[]> = {
      hr: [],
      cadence: [],
      power: [],
      speed: [],
      distance: [],
      elevation: [],
      lap: [],
    };
    const lat: number[] = [];
    const lon: number[] = [];
    const ele: number[] = [];
    let second = g.first - 1;
    let la = g.lat;
    let lo = g.lon;
    let total = 0;
    for (const s of g.steps) {
      second += s.gap;
      la += s.dLat * s.gap;
      lo += s.dLon * s.gap;
      total += s.run * s.gap;
      if (s.where !== 'track') {
        ds.push(second);
        cols.hr?.push(s.hr ?? Number.NaN);
        cols.cadence?.push(s.cadence ?? Number.NaN);
        cols.power?.push(s.power ?? Number.NaN);
        cols.speed?.push(s.speed ?? Number.NaN);
        cols.distance?.push(total);
        cols.elevation?.push(s.elevation ?? Number.NaN);
        cols.lap?.push(s.lap ? 1 : Number.NaN);
      }
      if (s.where !== 'datastream') {
        tr.push(second);
        lat.push(la);
        lon.push(lo);
        ele.push(s.elevation ?? Number.NaN);
      }
    }
    const datatypes = {
      hr: DATATYPE.HR_CURRENT,
      cadence: g.sportId === 381 ? DATATYPE.RPM_CURRENT : DATATYPE.CADENCE_CURRENT,
      power: DATATYPE.POWER_CURRENT,
      speed: DATATYPE.SPEED_CURRENT,
      distance: DATATYPE.DISTANCE,
      elevation: DATATYPE.ELEVATION_CURRENT,
      lap: DATATYPE.LAP,
    };
    const duration = Math.max(second, 0) + g.extra;
    const summaries = new Map<number, number>([[DATATYPE.DURATION, duration]]);
    if (g.calories !== null) summaries.set(DATATYPE.CALORIES, g.calories);
    if (g.distance !== null) summaries.set(DATATYPE.DISTANCE, g.distance * duration);
    return {
      sportId: g.sportId,
      name: g.name,
      startdate: new Date(g.startMs),
      duration,
      summaries,
      datastream: {
        elapsed: Int32Array.from(ds),
        channels: new Map(g.channels.map((c) => [datatypes[c], Float64Array.from(cols[c] as number[])])),
      },
      track: {
        elapsed: Int32Array.from(tr),
        latitude: Float64Array.from(lat),
        longitude: Float64Array.from(lon),
        elevation: Float64Array.from(ele),
      },
    };
  });

test('generated activities: export -> import -> export gives the identical GPX and TCX', (t) => {
  fc.assert(
    fc.property(activityArb, (content) => {
      const tcx = exportTcx(content);
      const again = exportTcx(importActivityFile(Buffer.from(tcx)).content);
      if (again !== tcx) throw new Error(`TCX differs:\n${tcx}\n---\n${again}`);
      const gpx = exportGpx(content);
      // A GPX without a located point (no track, or only (0, 0)) has nothing to import again.
      if (gpx.includes('<trkpt ')) {
        const gpxAgain = exportGpx(importActivityFile(Buffer.from(gpx)).content);
        if (gpxAgain !== gpx) throw new Error(`GPX differs:\n${gpx}\n---\n${gpxAgain}`);
      }
    }),
    { numRuns: 300 },
  );
  t.pass();
});

test('generated activities: every export validates against the official schemas', async (t) => {
  const samples = fc.sample(activityArb, { numRuns: 12, seed: 42 });
  for (const content of samples) {
    await assertValid(t, 'tcx', exportTcx(content));
    await assertValid(t, 'gpx', exportGpx(content));
  }
});

test('exports carry names safely, write +180 as -180, and stream in chunks', async (t) => {
  const n = 20_000;
  const content: ActivityContent = {
    sportId: 121,
    name: 'A <b>&"quoted"\' run\u0000\u0007 \uFFFE',
    startdate: new Date('2024-03-01T10:00:00.600Z'),
    duration: n,
    summaries: new Map([[DATATYPE.CALORIES, 999]]),
    datastream: {
      elapsed: Int32Array.from({ length: n }, (_, i) => i),
      channels: new Map([
        [DATATYPE.HR_CURRENT, Float64Array.from({ length: n }, (_, i) => 100 + (i % 50))],
        [DATATYPE.LAP, Float64Array.from({ length: n }, (_, i) => (i % 5000 === 4999 ? 1 : Number.NaN))],
      ]),
    },
    track: {
      elapsed: Int32Array.from({ length: n }, (_, i) => i),
      latitude: Float64Array.from({ length: n }, (_, i) => 10 + i * 1e-5),
      longitude: Float64Array.from({ length: n }, () => 179.999999999),
      elevation: new Float64Array(n).fill(Number.NaN),
    },
  };
  const chunks = [...gpxChunks(content)];
  t.true(chunks.length > 10);
  t.true(chunks.every((c) => c.length < CHUNK_CHARS + 1000));
  const gpx = chunks.join('');
  t.is(gpx, exportGpx(content));
  t.is(gpx.match(/<trkpt /g)?.length, n);
  t.regex(gpx, /<trkpt lat="10" lon="-180"><time>2024-03-01T10:00:01Z<\/time>/);
  t.regex(gpx, /<name>A &lt;b&gt;&amp;&quot;quoted&quot;&apos; run<\/name>/);
  await assertValid(t, 'gpx', gpx);
  const tcx = exportTcx(content);
  t.is(tcx.match(/<Lap /g)?.length, 4);
  t.deepEqual(
    [...tcx.matchAll(/<Calories>(\d+)</g)].map((m) => Number(m[1])),
    [249, 250, 250, 250],
  );
  await assertValid(t, 'tcx', tcx);
  t.is(importActivityFile(Buffer.from(tcx)).content.name, 'A <b>&"quoted"\' run');
});

test('splitTotal shares an integer total by weight, exactly, the same way every time', (t) => {
  t.deepEqual(splitTotal(35, [3, 63, 4]), [2, 31, 2]);
  t.deepEqual(splitTotal(10, [0, 0]), [0, 10]);
  t.deepEqual(splitTotal(0, [5, 5]), [0, 0]);
  fc.assert(
    fc.property(fc.nat(100_000), fc.array(fc.nat(10_000), { minLength: 1, maxLength: 50 }), (total, weights) => {
      const parts = splitTotal(total, weights);
      return parts.reduce((a, b) => a + b, 0) === total && parts.every((p) => p >= 0 && Number.isInteger(p));
    }),
  );
});
