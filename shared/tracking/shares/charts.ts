import { runSteps } from '../../runtime/paced-stream.ts';
import { type ActivityContent, DATATYPE, type Datastream, type Track } from '../activities/data.ts';

/** One chart of the share page: values over elapsed seconds, null where there is no value. */
export interface ChartSeries {
  elapsed: number[];
  values: (number | null)[];
}

/**
 * Values over elapsed seconds as the passes over a whole stream hold them, before `downsample`:
 * typed arrays, NaN (or null) where there is no value, so a day of samples is a few arrays rather
 * than one object per value for the collector to move.
 */
export interface Samples {
  elapsed: ArrayLike<number>;
  values: ArrayLike<number | null>;
}

const hasValue = (v: number | null | undefined): v is number => v !== null && v !== undefined && !Number.isNaN(v);

export interface ShareCharts {
  /** km/h. */
  speed: ChartSeries | null;
  /** Minutes per km (decimal), for foot sports only (`pace` asked); null where the athlete stood. */
  pace: ChartSeries | null;
  /** bpm. */
  heartRate: ChartSeries | null;
  /** m. */
  elevation: ChartSeries | null;
}

/**
 * Points a chart keeps at most: about one per pixel of a wide screen. A day at 1 Hz would
 * otherwise put 86,400 points per chart in the page.
 */
export const MAX_CHART_POINTS = 1000;

/**
 * Below this speed (km/h) a point has no pace: the athlete stands, and a pace of hours per km
 * would flatten the rest of the chart.
 */
export const MIN_PACE_SPEED_KMH = 1;

/** Seconds over which a speed is measured from the GPS track (single fixes are too noisy). */
const SPEED_WINDOW_S = 10;
const EARTH_RADIUS_M = 6_371_008.8;
const DEG = Math.PI / 180;

/**
 * The share page's charts (and, for foot sports, the pace drawn from the speed). Each comes from the datastream when the device recorded it
 * (speed 6 in m/h, heart rate 1, elevation 14) and otherwise from the GPS track where it can
 * (speed over 10-second windows, the track's elevations); a chart without any value is null.
 * Long activities are averaged into at most `maxPoints` time buckets.
 */
export const shareCharts = (
  content: ActivityContent,
  maxPoints = MAX_CHART_POINTS,
  options: { pace?: boolean } = {},
): ShareCharts => runSteps(shareChartsSteps(content, maxPoints, options));

/** `shareCharts`, yielding between its passes over the streams (paced-stream.ts). */
export function* shareChartsSteps(
  content: ActivityContent,
  maxPoints = MAX_CHART_POINTS,
  options: { pace?: boolean } = {},
): Generator<void, ShareCharts> {
  const { datastream, track } = content;
  const speedChannel = yield* channel(datastream, DATATYPE.SPEED_CURRENT, 1 / 1000);
  const speed = speedChannel ?? (yield* trackSpeed(track));
  const speedChart = speed && downsample(speed, maxPoints, 1);
  yield;
  // Buckets average the speed, then invert it: over equal times that is distance over time.
  const pace = options.pace && speed ? paceOf(downsample(speed, maxPoints, 3)) : null;
  yield;
  const heartRate = yield* channel(datastream, DATATYPE.HR_CURRENT, 1);
  const heartRateChart = heartRate && downsample(heartRate, maxPoints, 0);
  yield;
  const elevation =
    (yield* channel(datastream, DATATYPE.ELEVATION_CURRENT, 1)) ?? (yield* series(track.elapsed, track.elevation, 1));
  yield;
  return {
    speed: speedChart,
    pace,
    heartRate: heartRateChart,
    elevation: elevation && downsample(elevation, maxPoints, 1),
  };
}

/** Minutes per km from km/h, to the hundredth of a minute; null where there is no pace. */
export function paceOf(speed: ChartSeries): ChartSeries | null {
  return nonEmpty({
    elapsed: speed.elapsed,
    values: speed.values.map((kmh) => (kmh !== null && kmh >= MIN_PACE_SPEED_KMH ? round(60 / kmh, 2) : null)),
  });
}

function nonEmpty<S extends Samples>(series: S): S | null {
  for (let i = 0; i < series.values.length; i++) if (hasValue(series.values[i])) return series;
  return null;
}

/** Points between two pauses of the passes below. */
const SLICE = 16_384;

function* channel(datastream: Datastream, datatype: number, factor: number): Generator<void, Samples | null> {
  const values = datastream.channels.get(datatype);
  return values ? yield* series(datastream.elapsed, values, factor) : null;
}

/** Values times `factor` over their seconds, NaN where not finite; null when none is. */
function* series(elapsed: Int32Array, values: Float64Array, factor: number): Generator<void, Samples | null> {
  const out = new Float64Array(values.length);
  for (let i = 0; i < values.length; i++) {
    const v = values[i] as number;
    out[i] = Number.isFinite(v) ? v * factor : Number.NaN;
    if (i % SLICE === SLICE - 1) yield;
  }
  return nonEmpty({ elapsed, values: out });
}

/** Great-circle distance in metres. */
export function haversine(lat1: number, lon1: number, lat2: number, lon2: number): number {
  const a =
    Math.sin(((lat2 - lat1) * DEG) / 2) ** 2 +
    Math.cos(lat1 * DEG) * Math.cos(lat2 * DEG) * Math.sin(((lon2 - lon1) * DEG) / 2) ** 2;
  return 2 * EARTH_RADIUS_M * Math.asin(Math.min(1, Math.sqrt(a)));
}

/** km/h at each GPS point, over the window of points up to 10 s before it. */
function* trackSpeed(track: Track): Generator<void, Samples | null> {
  const n = track.elapsed.length;
  if (n < 2) return null;
  const cumulative = new Float64Array(n);
  for (let i = 1; i < n; i++) {
    const d = haversine(
      track.latitude[i - 1] as number,
      track.longitude[i - 1] as number,
      track.latitude[i] as number,
      track.longitude[i] as number,
    );
    cumulative[i] = (cumulative[i - 1] as number) + (Number.isFinite(d) ? d : 0);
    if (i % SLICE === 0) yield;
  }
  yield;
  const values = new Float64Array(n - 1);
  let from = 0;
  for (let i = 1; i < n; i++) {
    const t = track.elapsed[i] as number;
    while (from < i - 1 && t - (track.elapsed[from + 1] as number) >= SPEED_WINDOW_S) from++;
    const seconds = t - (track.elapsed[from] as number);
    values[i - 1] =
      seconds > 0 ? (((cumulative[i] as number) - (cumulative[from] as number)) / seconds) * 3.6 : Number.NaN;
    if (i % SLICE === 0) yield;
  }
  return nonEmpty({ elapsed: track.elapsed.subarray(1), values });
}

function round(value: number, decimals: number): number {
  const f = 10 ** decimals;
  return Math.round(value * f) / f;
}

/**
 * At most `maxPoints` points: the time range cut into equal buckets, each the mean of its values
 * at the mean of its times (an empty bucket is skipped, a bucket of gaps is a null so the line
 * breaks there). Values are rounded to `decimals` to keep the page small.
 */
export function downsample(series: Samples, maxPoints: number, decimals: number): ChartSeries {
  const n = series.elapsed.length;
  if (n <= maxPoints) {
    return {
      elapsed: Array.from(series.elapsed),
      values: Array.from(series.values, (v) => (hasValue(v) ? round(v, decimals) : null)),
    };
  }
  const first = series.elapsed[0] as number;
  const span = (series.elapsed[n - 1] as number) - first + 1;
  const elapsed: number[] = [];
  const values: (number | null)[] = [];
  let i = 0;
  for (let bucket = 0; bucket < maxPoints && i < n; bucket++) {
    const end = first + (span * (bucket + 1)) / maxPoints;
    let times = 0;
    let count = 0;
    let sum = 0;
    let valued = 0;
    for (; i < n && (series.elapsed[i] as number) < end; i++) {
      times += series.elapsed[i] as number;
      count++;
      const v = series.values[i];
      if (hasValue(v)) {
        sum += v;
        valued++;
      }
    }
    if (count === 0) continue;
    elapsed.push(Math.round(times / count));
    values.push(valued === 0 ? null : round(sum / valued, decimals));
  }
  return { elapsed, values };
}
