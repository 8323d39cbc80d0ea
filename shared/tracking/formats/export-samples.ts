import { runSteps } from '../../runtime/paced-stream.ts';
import { type ActivityContent, DATATYPE } from '../activities/data.ts';
import { isLapMarker } from '../activities/laps.ts';
import { PLAUSIBLE } from './limits.ts';
import { cumulativeDistance } from './track-distance.ts';
import { quantize } from './xml-output.ts';

/**
 * The samples an export writes, one per second, with every value already as the document will
 * print it (quantized) and only values the importers keep (the same plausibility bounds, the
 * schemas' ranges): so laps computed from these columns come out the same after a re-import,
 * and export -> import -> export gives the identical document.
 */
export interface ExportSamples {
  elapsed: Int32Array;
  /** NaN where the sample has no position. */
  latitude: Float64Array;
  longitude: Float64Array;
  elevation: Float64Array;
  heartRate: Float64Array;
  cadence: Float64Array;
  power: Float64Array;
  /** m/s */
  speed: Float64Array;
  distance: Float64Array;
  lap: Uint8Array;
}

/** Printed precision per value (decimals). */
export const DIGITS = { position: 7, elevation: 2, speed: 3, distance: 2 } as const;

/** Looks values up by elapsed second in a channel aligned on `elapsed`. */
function lookup(elapsed: Int32Array, values: Float64Array | undefined) {
  let i = 0;
  return (second: number): number => {
    if (!values) return Number.NaN;
    while (i < elapsed.length && (elapsed[i] as number) < second) i++;
    return i < elapsed.length && elapsed[i] === second ? (values[i] as number) : Number.NaN;
  };
}

const within = (v: number, min: number, max: number) => (v >= min && v <= max ? v : Number.NaN);

/** Samples between two pauses of the step generators below (a few milliseconds of work). */
const SLICE = 2048;
const pauseAt = (i: number) => i % SLICE === SLICE - 1;

/**
 * `located`: only the track's seconds (GPX, whose points need a position); otherwise every
 * second of the datastream and the track (TCX).
 */
export const exportSamples = (content: ActivityContent, located: boolean): ExportSamples =>
  runSteps(exportSampleSteps(content, located));

/** `exportSamples` in slices: it yields between them, so a writer can let other work run (paced-stream.ts). */
export function* exportSampleSteps(content: ActivityContent, located: boolean): Generator<void, ExportSamples> {
  const { datastream, track } = content;
  const seconds = located ? track.elapsed : union(datastream.elapsed, track.elapsed);
  const n = seconds.length;
  const channel = (datatype: number) => lookup(datastream.elapsed, datastream.channels.get(datatype));
  const at = {
    lat: lookup(track.elapsed, track.latitude),
    lon: lookup(track.elapsed, track.longitude),
    trackEle: lookup(track.elapsed, track.elevation),
    ele: channel(DATATYPE.ELEVATION_CURRENT),
    hr: channel(DATATYPE.HR_CURRENT),
    cad: channel(datastream.channels.has(DATATYPE.CADENCE_CURRENT) ? DATATYPE.CADENCE_CURRENT : DATATYPE.RPM_CURRENT),
    power: channel(DATATYPE.POWER_CURRENT),
    speed: channel(DATATYPE.SPEED_CURRENT),
    distance: channel(DATATYPE.DISTANCE),
  };
  const out: ExportSamples = {
    elapsed: seconds,
    latitude: new Float64Array(n),
    longitude: new Float64Array(n),
    elevation: new Float64Array(n),
    heartRate: new Float64Array(n),
    cadence: new Float64Array(n),
    power: new Float64Array(n),
    speed: new Float64Array(n),
    distance: new Float64Array(n),
    lap: new Uint8Array(n),
  };
  for (let i = 0; i < n; i++) {
    const s = seconds[i] as number;
    let lat = quantize(at.lat(s), DIGITS.position);
    let lon = quantize(at.lon(s), DIGITS.position);
    if (lon === 180) lon = -180;
    if (!(lat >= -90 && lat <= 90 && lon >= -180 && lon < 180) || (lat === 0 && lon === 0)) {
      lat = Number.NaN;
      lon = Number.NaN;
    }
    out.latitude[i] = lat;
    out.longitude[i] = lon;
    const trackEle = at.trackEle(s);
    const ele = Number.isNaN(trackEle) ? at.ele(s) : trackEle;
    out.elevation[i] = within(quantize(ele, DIGITS.elevation), PLAUSIBLE.elevation.min, PLAUSIBLE.elevation.max);
    out.heartRate[i] = within(Math.round(at.hr(s)), PLAUSIBLE.heartRate.min, PLAUSIBLE.heartRate.max);
    // 254: the schemas' highest cadence (TCX CadenceValue_t, TrackPointExtension cad).
    out.cadence[i] = within(Math.round(at.cad(s)), PLAUSIBLE.cadence.min, 254);
    out.power[i] = within(Math.round(at.power(s)), PLAUSIBLE.power.min, PLAUSIBLE.power.max);
    out.speed[i] = within(quantize(at.speed(s) / 3600, DIGITS.speed), PLAUSIBLE.speed.min, PLAUSIBLE.speed.max);
    out.distance[i] = at.distance(s);
    if (pauseAt(i)) yield;
  }
  markLaps(out, datastream);
  yield* keepPlausibleDistances(out);
  if (out.distance.every(Number.isNaN)) {
    yield* measureDistance(out);
    for (let i = 0; i < n; i++) {
      out.distance[i] = quantize(out.distance[i] as number, DIGITS.distance);
      if (pauseAt(i)) yield;
    }
  }
  return out;
}

/**
 * Each lap marker on the last written second at or before it: the same second when it is written
 * (every datastream second is, in a TCX), else the lap's last located second (GPX). A marker before
 * any written second is dropped: its lap has nothing written.
 */
function markLaps(out: ExportSamples, datastream: ActivityContent['datastream']): void {
  const markers = datastream.channels.get(DATATYPE.LAP);
  if (!markers) return;
  let k = -1;
  for (let i = 0; i < markers.length; i++) {
    if (!isLapMarker(markers[i])) continue;
    const second = datastream.elapsed[i] as number;
    while (k + 1 < out.elapsed.length && (out.elapsed[k + 1] as number) <= second) k++;
    if (k >= 0) out.lap[k] = 1;
  }
}

/**
 * The distances an importer keeps (activity-builder.ts): cumulative, within bounds, and not all
 * dropped for an average speed beyond plausible.
 */
function* keepPlausibleDistances(out: ExportSamples): Generator<void> {
  let last = Number.NEGATIVE_INFINITY;
  let first = -1;
  let final = -1;
  for (let i = 0; i < out.elapsed.length; i++) {
    const d = within(
      quantize(out.distance[i] as number, DIGITS.distance),
      Math.max(PLAUSIBLE.distance.min, last),
      PLAUSIBLE.distance.max,
    );
    out.distance[i] = d;
    if (pauseAt(i)) yield;
    if (Number.isNaN(d)) continue;
    last = d;
    if (first < 0) first = i;
    final = i;
  }
  if (first < 0 || final === first) return;
  const span = Math.max((out.elapsed[final] as number) - (out.elapsed[first] as number), 1);
  if (((out.distance[final] as number) - (out.distance[first] as number)) / span > PLAUSIBLE.speed.max) {
    out.distance.fill(Number.NaN);
  }
}

/**
 * Without a distance stream, the distance an importer measures along the track: from the
 * positions as written, so that measuring the re-imported track gives the same figures.
 */
function* measureDistance(out: ExportSamples): Generator<void> {
  const located: number[] = [];
  for (let i = 0; i < out.elapsed.length; i++) if (!Number.isNaN(out.latitude[i] as number)) located.push(i);
  if (located.length < 2) return;
  yield;
  const cumulative = cumulativeDistance({
    elapsed: Int32Array.from(located, (i) => out.elapsed[i] as number),
    latitude: Float64Array.from(located, (i) => out.latitude[i] as number),
    longitude: Float64Array.from(located, (i) => out.longitude[i] as number),
    elevation: new Float64Array(located.length),
  });
  yield;
  for (const [k, i] of located.entries()) out.distance[i] = cumulative[k] as number;
}

/** Ascending union of two ascending arrays. */
function union(a: Int32Array, b: Int32Array): Int32Array {
  const out = new Int32Array(a.length + b.length);
  let i = 0;
  let j = 0;
  let k = 0;
  while (i < a.length || j < b.length) {
    const x = i < a.length ? (a[i] as number) : Number.POSITIVE_INFINITY;
    const y = j < b.length ? (b[j] as number) : Number.POSITIVE_INFINITY;
    const v = Math.min(x, y);
    if (x === v) i++;
    if (y === v) j++;
    out[k++] = v;
  }
  return out.slice(0, k);
}
