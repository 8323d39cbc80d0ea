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

/** Elevation changes smaller than this are GPS or barometer noise, not climbing. */
export const ASCENT_THRESHOLD_M = 2;
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

/** Total climb and descent with a noise threshold: the reference moves only once a change exceeds it. */
export function ascentDescent(elevation: Float64Array): { ascent: number; descent: number } | undefined {
  let ref = Number.NaN;
  let ascent = 0;
  let descent = 0;
  for (const e of elevation) {
    if (Number.isNaN(e)) continue;
    if (Number.isNaN(ref)) {
      ref = e;
      continue;
    }
    const diff = e - ref;
    if (diff >= ASCENT_THRESHOLD_M) {
      ascent += diff;
      ref = e;
    } else if (diff <= -ASCENT_THRESHOLD_M) {
      descent -= diff;
      ref = e;
    }
  }
  return Number.isNaN(ref) ? undefined : { ascent, descent };
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
 * comes from the file's own totals when it has them (calories always do). Averages are over
 * samples; cadence and RPM averages leave out zeros (stops), power averages keep them.
 */
export function computeSummaries(
  datastream: Datastream,
  duration: number,
  declared: DeclaredTotals,
  cadenceDatatype: number,
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
  const climb = elevation ? ascentDescent(elevation) : undefined;
  put(DATATYPE.ASCENT, climb ? climb.ascent : declared.ascent);
  put(DATATYPE.DESCENT, climb ? climb.descent : declared.descent);

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
