import { DATATYPE, type Datastream } from '../activities/data.ts';

/** What a file states for the whole activity (TCX laps, a FIT session): used where the streams are silent. */
export interface DeclaredTotals {
  /** m */
  distance?: number;
  /** kcal */
  calories?: number;
  /** m */
  ascent?: number;
  /** m */
  descent?: number;
  heartRateAvg?: number;
  heartRateMax?: number;
  /** m/s */
  speedMax?: number;
  powerAvg?: number;
  powerMax?: number;
  cadenceAvg?: number;
  cadenceMax?: number;
}

/**
 * Elevation gain and loss (docs/tracking-activities.md, "Elevation gain"): a climb counts once the
 * elevation has turned back down by this much from its top (and a descent once it turned up by as
 * much from its bottom), and then counts whole, from the last turn to the top. Smaller wiggles are
 * GPS or barometer noise. Unlike a dead band, a smooth climb loses nothing at its top.
 */
export const ASCENT_HYSTERESIS_M = 0.5;
/** Without a speed stream, the top speed is the best distance over at least this many seconds... */
const SPEED_WINDOW_MIN_S = 10;
/** ...and at most this many (longer spans cross a pause). */
const SPEED_WINDOW_MAX_S = 30;

const round2 = (x: number) => Math.round(x * 100) / 100;

interface Stats {
  count: number;
  sum: number;
  min: number;
  max: number;
  last: number;
}

function statsOf(values: Float64Array | undefined, skipZeros = false): Stats | undefined {
  if (!values) return undefined;
  let count = 0;
  let sum = 0;
  let min = Number.POSITIVE_INFINITY;
  let max = Number.NEGATIVE_INFINITY;
  let last = Number.NaN;
  for (const v of values) {
    if (Number.isNaN(v) || (skipZeros && v === 0)) continue;
    count++;
    sum += v;
    if (v < min) min = v;
    if (v > max) max = v;
    last = v;
  }
  return count ? { count, sum, min, max, last } : undefined;
}

/** The finite values of `elevation` in [from, to), each averaged with its neighbours (0.3, 0.4, 0.3, as gpxpy). */
function smoothed(elevation: Float64Array, from: number, to: number): number[] {
  const raw: number[] = [];
  for (let i = from; i < to; i++) {
    const e = elevation[i] as number;
    if (!Number.isNaN(e)) raw.push(e);
  }
  return raw.map((e, i) =>
    i === 0 || i === raw.length - 1 ? e : 0.3 * (raw[i - 1] as number) + 0.4 * e + 0.3 * (raw[i + 1] as number),
  );
}

/**
 * Total climb and descent: hysteresis (ASCENT_HYSTERESIS_M) over the lightly smoothed series.
 * `stretches` (sample indexes) begin new tracks or segments of the file: each is measured alone,
 * so the jump from one to the next is no climb (as gpxpy). Undefined without any elevation.
 */
export function ascentDescent(
  elevation: Float64Array,
  stretches: readonly number[] = [],
): { ascent: number; descent: number } | undefined {
  let ascent = 0;
  let descent = 0;
  let any = false;
  const bounds = [0, ...stretches, elevation.length];
  for (let k = 0; k + 1 < bounds.length; k++) {
    const values = smoothed(elevation, bounds[k] as number, bounds[k + 1] as number);
    if (!values.length) continue;
    any = true;
    // turn: the last confirmed turning point; peak: the extreme since, in the current direction.
    let turn = values[0] as number;
    let peak = turn;
    let direction = 0;
    for (const e of values) {
      if (direction === 0) {
        if (e > peak && e - turn >= ASCENT_HYSTERESIS_M) direction = 1;
        else if (e < peak && turn - e >= ASCENT_HYSTERESIS_M) direction = -1;
        if (direction !== 0) peak = e;
      } else if (direction === 1) {
        if (e > peak) peak = e;
        else if (peak - e >= ASCENT_HYSTERESIS_M) {
          ascent += peak - turn;
          turn = peak;
          peak = e;
          direction = -1;
        }
      } else if (e < peak) peak = e;
      else if (e - peak >= ASCENT_HYSTERESIS_M) {
        descent += turn - peak;
        turn = peak;
        peak = e;
        direction = 1;
      }
    }
    if (direction === 1) ascent += peak - turn;
    else if (direction === -1) descent += turn - peak;
  }
  return any ? { ascent, descent } : undefined;
}

/** The best speed (m/s) over 10 to 30 s spans of the distance stream; undefined when no span fits. */
export function topSpeedFromDistance(elapsed: Int32Array, distance: Float64Array): number | undefined {
  const t: number[] = [];
  const d: number[] = [];
  for (let i = 0; i < elapsed.length; i++) {
    const v = distance[i] as number;
    if (!Number.isNaN(v)) {
      t.push(elapsed[i] as number);
      d.push(v);
    }
  }
  let best: number | undefined;
  let j = 0;
  for (let i = 0; i < t.length; i++) {
    if (j <= i) j = i + 1;
    while (j < t.length && (t[j] as number) - (t[i] as number) < SPEED_WINDOW_MIN_S) j++;
    if (j >= t.length) break;
    const span = (t[j] as number) - (t[i] as number);
    if (span > SPEED_WINDOW_MAX_S) continue;
    const speed = ((d[j] as number) - (d[i] as number)) / span;
    if (best === undefined || speed > best) best = speed;
  }
  return best;
}

/**
 * The activity's `dataSummaries`, computed from its streams; a figure the streams cannot give
 * comes from the file's own totals when it has them (calories always do, and ascent and descent
 * when the file states them). `stretches` are the samples that begin a new track or segment. Averages are over
 * samples; cadence and RPM averages leave out zeros (stops), power averages keep them.
 */
export function computeSummaries(
  datastream: Datastream,
  duration: number,
  declared: DeclaredTotals,
  cadenceDatatype: number,
  stretches: readonly number[] = [],
): Map<number, number> {
  const out = new Map<number, number>();
  const put = (datatype: number, value: number | undefined) => {
    if (value !== undefined && Number.isFinite(value)) out.set(datatype, round2(value));
  };
  const channel = (datatype: number) => datastream.channels.get(datatype);
  put(DATATYPE.DURATION, duration);

  const distance = statsOf(channel(DATATYPE.DISTANCE));
  const totalDistance = distance ? distance.max : declared.distance;
  put(DATATYPE.DISTANCE, totalDistance);
  if (totalDistance !== undefined && duration > 0) put(DATATYPE.SPEED_AVG, (totalDistance / duration) * 3600);

  const speed = statsOf(channel(DATATYPE.SPEED_CURRENT));
  const distanceChannel = channel(DATATYPE.DISTANCE);
  const topSpeed = speed
    ? speed.max / 3600
    : ((distanceChannel && topSpeedFromDistance(datastream.elapsed, distanceChannel)) ?? declared.speedMax);
  put(DATATYPE.SPEED_MAX, topSpeed === undefined ? undefined : topSpeed * 3600);

  const hr = statsOf(channel(DATATYPE.HR_CURRENT));
  put(DATATYPE.HR_AVG, hr ? hr.sum / hr.count : declared.heartRateAvg);
  put(DATATYPE.HR_MAX, hr ? hr.max : declared.heartRateMax);

  const elevation = channel(DATATYPE.ELEVATION_CURRENT);
  const ele = statsOf(elevation);
  if (ele) {
    put(DATATYPE.ELEVATION_MAX, ele.max);
    put(DATATYPE.ELEVATION_MIN, ele.min);
  }
  // The device's own totals win (it sums its altitude more finely than the samples it recorded),
  // but a 0 where the samples climb is a writer that leaves the field at 0 (Zwift's descent).
  const climb = elevation ? ascentDescent(elevation, stretches) : undefined;
  const stated = (value: number | undefined, measured: number | undefined) =>
    value !== undefined && (value > 0 || !measured) ? value : measured;
  put(DATATYPE.ASCENT, stated(declared.ascent, climb?.ascent));
  put(DATATYPE.DESCENT, stated(declared.descent, climb?.descent));

  const cadence = statsOf(channel(cadenceDatatype), true);
  const [cadenceAvg, cadenceMax] =
    cadenceDatatype === DATATYPE.RPM_CURRENT ? [RPM_AVG, RPM_MAX] : [CADENCE_AVG, CADENCE_MAX];
  put(cadenceAvg, cadence ? cadence.sum / cadence.count : declared.cadenceAvg);
  put(cadenceMax, cadence ? cadence.max : declared.cadenceMax);

  const power = statsOf(channel(DATATYPE.POWER_CURRENT));
  put(POWER_AVG, power ? power.sum / power.count : declared.powerAvg);
  put(POWER_MAX, power ? power.max : declared.powerMax);

  if (declared.calories !== undefined && declared.calories > 0) put(DATATYPE.CALORIES, declared.calories);
  return out;
}

/** Summary datatypes of the referential that activities/data.ts does not name. */
export const CADENCE_MAX = 11;
export const CADENCE_AVG = 13;
export const RPM_MAX = 101;
export const RPM_AVG = 103;
export const POWER_MAX = 179;
export const POWER_AVG = 180;
