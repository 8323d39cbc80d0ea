import { distanceKm } from '../../places/geojson.ts';
import { DATATYPE, type Datastream, type Track } from '../activity-data.ts';

/**
 * An activity's distance over time, as the distance records read it: `time` (elapsed seconds)
 * strictly ascending, `distance` (metres from the first sample) never decreasing.
 */
export interface DistanceSeries {
  time: Int32Array;
  distance: Float64Array;
  /** The fastest step, m/s (0 when standing still): bounds how fast a window's edge can move. */
  fastest: number;
  /** Set by paceOf (best-time.ts), once for all the distances timed. */
  pace?: Float64Array;
}

/**
 * From the datastream's distance channel (cumulative metres, NaN where a sample has none). Only
 * forward steps a body can make count: a decrease (a counter reset, sensor noise) and a step faster
 * than `maxSpeed` (a glitch) add nothing, and counting resumes from the new value. A guard can only
 * lose distance, so it can make a time slower, never faster. Null under two usable samples. A
 * channel that needs no guard (the usual case) is used as it is, without a copy.
 */
export function distanceFromStream(datastream: Datastream, maxSpeed: number): DistanceSeries | null {
  const values = datastream.channels.get(DATATYPE.DISTANCE);
  if (!values) return null;
  const elapsed = datastream.elapsed;
  const n = Math.min(values.length, elapsed.length);
  const clean = cleanFastest(elapsed, values, n, maxSpeed);
  if (clean >= 0)
    return n >= 2 ? { time: elapsed.subarray(0, n), distance: values.subarray(0, n), fastest: clean } : null;
  const time = new Int32Array(n);
  const distance = new Float64Array(n);
  let m = 0;
  let total = 0;
  let fastest = 0;
  let lastTime = Number.NEGATIVE_INFINITY;
  let lastValue = 0;
  for (let i = 0; i < n; i++) {
    const value = values[i] as number;
    const t = elapsed[i] as number;
    if (!Number.isFinite(value) || t <= lastTime) continue;
    if (m > 0) {
      const step = value - lastValue;
      const dt = t - lastTime;
      if (step > 0 && step <= maxSpeed * dt) {
        total += step;
        if (step > fastest * dt) fastest = step / dt;
      }
    }
    time[m] = t;
    distance[m] = total;
    m++;
    lastTime = t;
    lastValue = value;
  }
  return m >= 2 ? { time: time.subarray(0, m), distance: distance.subarray(0, m), fastest } : null;
}

/**
 * The fastest step of a channel that needs no guard (every value finite, times ascending, steps
 * forward and within the speed cap), or -1 when it needs one.
 */
function cleanFastest(elapsed: Int32Array, values: Float64Array, n: number, maxSpeed: number): number {
  if (n === 0) return 0;
  let lastTime = elapsed[0] as number;
  let lastValue = values[0] as number;
  // x - x is 0 for a finite x, NaN for NaN and the infinities.
  if (lastValue - lastValue !== 0) return -1;
  let fastest = 0;
  for (let i = 1; i < n; i++) {
    const t = elapsed[i] as number;
    const value = values[i] as number;
    const step = value - lastValue;
    const dt = t - lastTime;
    // A NaN step fails every comparison.
    if (!(dt > 0 && step >= 0 && step <= maxSpeed * dt)) return -1;
    if (step > fastest * dt) fastest = step / dt;
    lastTime = t;
    lastValue = value;
  }
  return fastest;
}

const EARTH_RADIUS_M = 6_371_008.8;
const RAD = Math.PI / 180;
/** Beyond this step (degrees, about 1 km), the flat approximation gives way to the haversine. */
const FLAT_STEP_DEG = 0.01;
/** The cosine of the latitude is recomputed when the latitude moves this much (about 55 m). */
const COS_REFRESH_DEG = 0.0005;

/**
 * Metres between consecutive GPS points. At 1 Hz a step is a few metres, where the equirectangular
 * formula agrees with the haversine to far better than GPS accuracy, for a fraction of its cost
 * (no trigonometry per point: the latitude's cosine is cached while the latitude barely moves).
 */
class StepMeter {
  #cosLatitude = 1;
  #latitude = Number.NaN;

  metres(lat1: number, lon1: number, lat2: number, lon2: number): number {
    const dLat = lat2 - lat1;
    let dLon = lon2 - lon1;
    if (dLon > 180) dLon -= 360;
    else if (dLon < -180) dLon += 360;
    if (Math.abs(dLat) > FLAT_STEP_DEG || Math.abs(dLon) > FLAT_STEP_DEG)
      return distanceKm([lon1, lat1], [lon2, lat2]) * 1000;
    const mid = lat1 + dLat / 2;
    if (!(Math.abs(mid - this.#latitude) <= COS_REFRESH_DEG)) {
      this.#latitude = mid;
      this.#cosLatitude = Math.cos(mid * RAD);
    }
    const x = dLon * this.#cosLatitude;
    return Math.sqrt(x * x + dLat * dLat) * RAD * EARTH_RADIUS_M;
  }
}

const validPosition = (lat: number, lon: number) => lat >= -90 && lat <= 90 && lon >= -180 && lon <= 180;

/**
 * From the GPS track: cumulative great-circle distance (elevation ignored). A point that could only
 * be reached from the last kept point faster than `maxSpeed` is a spike and is dropped, so the next
 * good point is measured from the last kept one. When two dropped points in a row agree with each
 * other, the track really is elsewhere (the first fix was wrong, or the athlete was carried): the
 * second becomes the new reference and the jump adds nothing. Null under two usable points.
 */
export function distanceFromTrack(track: Track, maxSpeed: number): DistanceSeries | null {
  const { elapsed, latitude, longitude } = track;
  const n = Math.min(elapsed.length, latitude.length, longitude.length);
  const time = new Int32Array(n);
  const distance = new Float64Array(n);
  const meter = new StepMeter();
  let m = 0;
  let total = 0;
  let fastest = 0;
  let lastTime = Number.NEGATIVE_INFINITY;
  // The last kept point, and the last dropped one (-1: none since the last kept point).
  let kept = -1;
  let dropped = -1;
  for (let i = 0; i < n; i++) {
    const t = elapsed[i] as number;
    const lat = latitude[i] as number;
    const lon = longitude[i] as number;
    if (!(t > lastTime) || !validPosition(lat, lon)) continue;
    lastTime = t;
    if (kept >= 0) {
      const step = meter.metres(latitude[kept] as number, longitude[kept] as number, lat, lon);
      const dt = t - (elapsed[kept] as number);
      if (step <= maxSpeed * dt) {
        total += step;
        if (step > fastest * dt) fastest = step / dt;
      } else {
        const agrees =
          dropped >= 0 &&
          meter.metres(latitude[dropped] as number, longitude[dropped] as number, lat, lon) <=
            maxSpeed * (t - (elapsed[dropped] as number));
        if (!agrees) {
          dropped = i;
          continue;
        }
      }
    }
    kept = i;
    dropped = -1;
    time[m] = t;
    distance[m] = total;
    m++;
  }
  return m >= 2 ? { time: time.subarray(0, m), distance: distance.subarray(0, m), fastest } : null;
}
