import { type ActivityContent, DATATYPE, type Datastream, type Track } from '../activities/data.ts';

/** One chart of the share page: values over elapsed seconds, null where there is no value. */
export interface ChartSeries {
  elapsed: number[];
  values: (number | null)[];
}

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
export function shareCharts(
  content: ActivityContent,
  maxPoints = MAX_CHART_POINTS,
  options: { pace?: boolean } = {},
): ShareCharts {
  const { datastream, track } = content;
  const speedChannel = channel(datastream, DATATYPE.SPEED_CURRENT, 1 / 1000);
  const speed = speedChannel ?? trackSpeed(track);
  const heartRate = channel(datastream, DATATYPE.HR_CURRENT, 1);
  const elevation =
    channel(datastream, DATATYPE.ELEVATION_CURRENT, 1) ??
    nonEmpty({ elapsed: Array.from(track.elapsed), values: Array.from(track.elevation, finiteOrNull) });
  return {
    speed: speed && downsample(speed, maxPoints, 1),
    // Buckets average the speed, then invert it: over equal times that is distance over time.
    pace: options.pace && speed ? paceOf(downsample(speed, maxPoints, 3)) : null,
    heartRate: heartRate && downsample(heartRate, maxPoints, 0),
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

function finiteOrNull(v: number): number | null {
  return Number.isFinite(v) ? v : null;
}

function nonEmpty(series: ChartSeries): ChartSeries | null {
  return series.values.some((v) => v !== null) ? series : null;
}

function channel(datastream: Datastream, datatype: number, factor: number): ChartSeries | null {
  const values = datastream.channels.get(datatype);
  if (!values) return null;
  return nonEmpty({
    elapsed: Array.from(datastream.elapsed),
    values: Array.from(values, (v) => (Number.isFinite(v) ? v * factor : null)),
  });
}

/** Great-circle distance in metres. */
export function haversine(lat1: number, lon1: number, lat2: number, lon2: number): number {
  const a =
    Math.sin(((lat2 - lat1) * DEG) / 2) ** 2 +
    Math.cos(lat1 * DEG) * Math.cos(lat2 * DEG) * Math.sin(((lon2 - lon1) * DEG) / 2) ** 2;
  return 2 * EARTH_RADIUS_M * Math.asin(Math.min(1, Math.sqrt(a)));
}

/** km/h at each GPS point, over the window of points up to 10 s before it. */
function trackSpeed(track: Track): ChartSeries | null {
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
  }
  const elapsed: number[] = [];
  const values: (number | null)[] = [];
  let from = 0;
  for (let i = 1; i < n; i++) {
    const t = track.elapsed[i] as number;
    while (from < i - 1 && t - (track.elapsed[from + 1] as number) >= SPEED_WINDOW_S) from++;
    const seconds = t - (track.elapsed[from] as number);
    elapsed.push(t);
    values.push(seconds > 0 ? (((cumulative[i] as number) - (cumulative[from] as number)) / seconds) * 3.6 : null);
  }
  return nonEmpty({ elapsed, values });
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
export function downsample(series: ChartSeries, maxPoints: number, decimals: number): ChartSeries {
  const n = series.elapsed.length;
  if (n <= maxPoints) {
    return { elapsed: series.elapsed, values: series.values.map((v) => (v === null ? null : round(v, decimals))) };
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
      if (v !== null && v !== undefined) {
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
