import { XMLBuilder } from 'fast-xml-parser';
import { type ActivityContent, DATATYPE } from '../shared/tracking/activities/data.ts';
import { exportGpx } from '../shared/tracking/formats/gpx-export.ts';
import { importActivityFile } from '../shared/tracking/formats/import-file.ts';
import { exportTcx } from '../shared/tracking/formats/tcx-export.ts';
import { isoSecond } from '../shared/tracking/formats/xml-output.ts';
import { envNumber } from './harness.ts';
import { bytes, fmt, quantile } from './stats.ts';

/**
 * bench/tracking-export: the GPX export of a 24-hour activity (86,400 one-second points with
 * position, elevation, heart rate, cadence and power) against fast-xml-parser's XMLBuilder on
 * the same arrays, side by side in alternating rounds. Two builder figures: `build()` alone on a
 * ready object tree (the stricter one, the goal's), and the tree built from the arrays plus
 * `build()` (what an exporter using the builder would really spend). Goal: our export at least
 * 0.5 x the builder's speed. Also printed, without goals: the TCX export and the imports of both.
 */

const SETTINGS = {
  points: Math.round(envNumber('BENCH_EXPORT_POINTS', 86_400)),
  rounds: Math.max(3, Math.round(envNumber('BENCH_ROUNDS', 7))),
};
const GOAL_RATIO = 0.5;

/** A day of 1 Hz samples with a plausible random walk (seeded, so every run measures the same data). */
function dayActivity(n: number): ActivityContent {
  let seed = 42;
  const random = () => {
    seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
    return seed / 2 ** 31;
  };
  const elapsed = Int32Array.from({ length: n }, (_, i) => i);
  const latitude = new Float64Array(n);
  const longitude = new Float64Array(n);
  const elevation = new Float64Array(n);
  const hr = new Float64Array(n);
  const cadence = new Float64Array(n);
  const power = new Float64Array(n);
  let lat = 45.1;
  let lon = 6.1;
  let ele = 500;
  for (let i = 0; i < n; i++) {
    lat += (random() - 0.45) * 2e-5;
    lon += (random() - 0.45) * 2e-5;
    ele += (random() - 0.5) * 0.6;
    latitude[i] = lat;
    longitude[i] = lon;
    elevation[i] = ele;
    hr[i] = Math.round(110 + random() * 60);
    cadence[i] = Math.round(80 + random() * 15);
    power[i] = Math.round(150 + random() * 150);
  }
  return {
    sportId: 381,
    name: 'Day ride',
    startdate: new Date('2024-06-21T00:00:00Z'),
    duration: n,
    summaries: new Map([[DATATYPE.CALORIES, 9000]]),
    datastream: {
      elapsed,
      channels: new Map([
        [DATATYPE.HR_CURRENT, hr],
        [DATATYPE.RPM_CURRENT, cadence],
        [DATATYPE.POWER_CURRENT, power],
        [DATATYPE.ELEVATION_CURRENT, elevation],
        [DATATYPE.LAP, Float64Array.from({ length: n }, (_, i) => (i % 3600 === 3599 ? 1 : Number.NaN))],
      ]),
    },
    track: { elapsed, latitude, longitude, elevation },
  };
}

/** The same document shape as our export, as an object tree for the builder, from the same arrays. */
function builderTree(c: ActivityContent) {
  const start = c.startdate.getTime();
  const { track, datastream } = c;
  const hr = datastream.channels.get(DATATYPE.HR_CURRENT) as Float64Array;
  const cad = datastream.channels.get(DATATYPE.RPM_CURRENT) as Float64Array;
  const power = datastream.channels.get(DATATYPE.POWER_CURRENT) as Float64Array;
  const trkpt = Array.from(track.elapsed, (s, i) => ({
    '@_lat': (track.latitude[i] as number).toFixed(7),
    '@_lon': (track.longitude[i] as number).toFixed(7),
    ele: (track.elevation[i] as number).toFixed(2),
    time: isoSecond(start + s * 1000),
    extensions: {
      'gpxtpx:TrackPointExtension': { 'gpxtpx:hr': hr[i], 'gpxtpx:cad': cad[i] },
      'gpxpx:PowerInWatts': power[i],
    },
  }));
  return {
    '?xml': { '@_version': '1.0', '@_encoding': 'UTF-8' },
    gpx: {
      '@_version': '1.1',
      '@_creator': 'bench',
      '@_xmlns': 'http://www.topografix.com/GPX/1/1',
      '@_xmlns:gpxtpx': 'http://www.garmin.com/xmlschemas/TrackPointExtension/v1',
      '@_xmlns:gpxpx': 'http://www.garmin.com/xmlschemas/PowerExtension/v1',
      metadata: { name: c.name, time: isoSecond(start) },
      trk: { name: c.name, type: 'bicycle', trkseg: { trkpt } },
    },
  };
}

function timeIt<T>(work: () => T): { ms: number; result: T } {
  const started = performance.now();
  const result = work();
  return { ms: performance.now() - started, result };
}

export async function run(): Promise<{ failed: boolean }> {
  const content = dayActivity(SETTINGS.points);
  const builder = new XMLBuilder({ ignoreAttributes: false, attributeNamePrefix: '@_', format: true });
  const prebuilt = builderTree(content);
  const times = { ours: [] as number[], buildOnly: [] as number[], treeAndBuild: [] as number[], tcx: [] as number[] };
  let sizes = { ours: 0, builder: 0, tcx: 0 };
  let gpx = '';
  let tcx = '';
  for (let round = 0; round <= SETTINGS.rounds; round++) {
    const ours = timeIt(() => exportGpx(content));
    const buildOnly = timeIt(() => builder.build(prebuilt) as string);
    const treeAndBuild = timeIt(() => builder.build(builderTree(content)) as string);
    const tcxRun = timeIt(() => exportTcx(content));
    if (round === 0) continue; // warm-up: JIT and first allocations
    times.ours.push(ours.ms);
    times.buildOnly.push(buildOnly.ms);
    times.treeAndBuild.push(treeAndBuild.ms);
    times.tcx.push(tcxRun.ms);
    gpx = ours.result;
    tcx = tcxRun.result;
    sizes = { ours: ours.result.length, builder: buildOnly.result.length, tcx: tcxRun.result.length };
  }
  const median = (values: number[]) => quantile(Float64Array.from(values).sort(), 0.5);
  const m = {
    ours: median(times.ours),
    buildOnly: median(times.buildOnly),
    treeAndBuild: median(times.treeAndBuild),
    tcx: median(times.tcx),
  };
  const gpxImport = timeIt(() => importActivityFile(Buffer.from(gpx)));
  const tcxImport = timeIt(() => importActivityFile(Buffer.from(tcx)));

  const ratio = m.buildOnly / m.ours;
  console.log(
    `data: ${SETTINGS.points} points (1 Hz, 24 h), position + elevation + HR + cadence + power; ${SETTINGS.rounds} rounds, medians`,
  );
  console.log(
    `our GPX export:                 ${fmt(m.ours, 0)} ms, ${bytes(sizes.ours)} (${fmt(sizes.ours / 1024 / 1024 / (m.ours / 1000), 0)} MB/s)`,
  );
  console.log(`XMLBuilder.build() alone:       ${fmt(m.buildOnly, 0)} ms, ${bytes(sizes.builder)} (object tree ready)`);
  console.log(`XMLBuilder tree from arrays + build(): ${fmt(m.treeAndBuild, 0)} ms`);
  console.log(
    `ratio (ours vs build() alone): ${fmt(ratio, 2)} x  (vs tree + build(): ${fmt(m.treeAndBuild / m.ours, 2)} x)`,
  );
  console.log(`our TCX export (laps every hour): ${fmt(m.tcx, 0)} ms, ${bytes(sizes.tcx)}`);
  console.log(`imports of those files (one run): GPX ${fmt(gpxImport.ms, 0)} ms, TCX ${fmt(tcxImport.ms, 0)} ms`);
  const failed = !(ratio >= GOAL_RATIO);
  console.log(`goal: ours >= ${GOAL_RATIO} x XMLBuilder.build() alone: ${failed ? 'FAIL' : 'PASS'}`);
  return { failed };
}
