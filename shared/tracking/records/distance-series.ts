import { distanceKm } from '../../places/geojson.ts';
import { DATATYPE, type Datastream, type Track } from '../activities/data.ts';

/**
 * An activity's distance over time, as the distance records read it: `time` (elapsed seconds)
 * strictly ascending, `distance` (metres from the first sample) never decreasing.
 */
export interface DistanceSeries {
  time: Int32Array;
  distance: Float64Array;
  /** The fastest step, m/s (0 when standing still): bounds how fast a window's edge can move. */
  fastest: number;
}

/**
 * Arrays a series is written into, grown as needed and reused: a fresh 690 kB array for each
 * 24-hour track cost as much as computing its distances (page faults, zeroing, collections). A
 * series built in them is valid until their next use.
 */
export class SeriesBuffers {
  private times = new Int32Array(0);
  private distances = new Float64Array(0);
  time(n: number): Int32Array {
    if (this.times.length < n) this.times = new Int32Array(Math.max(n, this.times.length * 2));
    return this.times;
  }
  distance(n: number): Float64Array {
    if (this.distances.length < n) this.distances = new Float64Array(Math.max(n, this.distances.length * 2));
    return this.distances;
  }
}

/**
 * A step faster than the cap is judged over this many seconds around it: with whole-second
 * timestamps a real stroke or stride often lands as a one-second step beyond the cap (the device
 * rounded its times), while a glitch still shows over the window.
 */
export const SPEED_WINDOW_S = 5;

/**
 * From the datastream's distance channel (cumulative metres, NaN where a sample has none). Only
 * forward steps a body can make count: a decrease (a counter reset, sensor noise) adds nothing,
 * nor does a step faster than `maxSpeed` whose surroundings are too (the step, plus the other
 * forward steps over at least SPEED_WINDOW_S seconds around it each taken at most at the cap):
 * a glitch. Counting resumes from
 * the new value. A guard can only lose distance, so it can make a time slower, never faster.
 * Null under two usable samples. A channel that needs no guard (the usual case) is used as it
 * is, without a copy.
 */
export function distanceFromStream(
  datastream: Datastream,
  maxSpeed: number,
  buffers = new SeriesBuffers(),
): DistanceSeries | null {
  const values = datastream.channels.get(DATATYPE.DISTANCE);
  if (!values) return null;
  const elapsed = datastream.elapsed;
  const n = Math.min(values.length, elapsed.length);
  const clean = cleanFastest(elapsed, values, n, maxSpeed);
  if (clean >= 0)
    return n >= 2 ? { time: elapsed.subarray(0, n), distance: values.subarray(0, n), fastest: clean } : null;
  // The usable samples (finite, time ascending), and their forward steps, each at most at the cap, summed up to each.
  const time = buffers.time(n);
  const raw: number[] = [];
  const forward: number[] = [];
  let m = 0;
  let lastTime = Number.NEGATIVE_INFINITY;
  for (let i = 0; i < n; i++) {
    const value = values[i] as number;
    const t = elapsed[i] as number;
    if (!Number.isFinite(value) || t <= lastTime) continue;
    const dt = t - lastTime;
    const step = m === 0 ? 0 : Math.min(Math.max(0, value - (raw[m - 1] as number)), maxSpeed * dt);
    forward.push(m === 0 ? 0 : (forward[m - 1] as number) + step);
    raw.push(value);
    time[m++] = t;
    lastTime = t;
  }
  if (m < 2) return null;
  const distance = buffers.distance(m);
  let total = 0;
  let fastest = 0;
  let a = 0;
  let b = 0;
  distance[0] = 0;
  for (let k = 1; k < m; k++) {
    const step = (raw[k] as number) - (raw[k - 1] as number);
    const dt = (time[k] as number) - (time[k - 1] as number);
    let counts = step > 0 && step <= maxSpeed * dt;
    if (step > 0 && !counts) {
      // The window: SPEED_WINDOW_S seconds centred on the step, from the last sample at or before
      // its start to the first at or after its end; at either end of the activity it reaches
      // further on the other side.
      const mid = ((time[k - 1] as number) + (time[k] as number)) / 2;
      const half = SPEED_WINDOW_S / 2;
      while (a + 1 < k && (time[a + 1] as number) <= mid - half) a++;
      if (b < k) b = k;
      while (b + 1 < m && (time[b] as number) < mid + half) b++;
      let from = a;
      let to = b;
      while ((time[to] as number) - (time[from] as number) < SPEED_WINDOW_S && (from > 0 || to < m - 1)) {
        if (to < m - 1) to++;
        else from--;
      }
      const span = (time[to] as number) - (time[from] as number);
      // The window's other steps at most at the cap each (a jump next door is no reason to drop this one), this one whole.
      const around = (forward[to] as number) - (forward[from] as number) - maxSpeed * dt + step;
      counts = span >= SPEED_WINDOW_S && around <= maxSpeed * span;
    }
    if (counts) {
      total += step;
      if (step > fastest * dt) fastest = step / dt;
    }
    distance[k] = total;
  }
  return { time: time.subarray(0, m), distance: distance.subarray(0, m), fastest };
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

const RAD = Math.PI / 180;
/** Metres per degree of arc on the mean Earth radius (the haversine's). */
const METRES_PER_DEGREE = 6_371_008.8 * RAD;
/** Beyond this step (degrees, about 1 km), the flat approximation gives way to the haversine. */
const FLAT_STEP_DEG = 0.01;
/**
 * The cosine of the latitude is recomputed when the latitude moves this much (about 55 m): the
 * error stays under 1e-4 of the distance up to latitude 85°, far below GPS accuracy.
 */
const COS_REFRESH_DEG = 0.0005;

const validPosition = (lat: number, lon: number) => lat >= -90 && lat <= 90 && lon >= -180 && lon <= 180;

/**
 * From the GPS track: cumulative great-circle distance (elevation ignored). A point that could only
 * be reached from the last kept point faster than `maxSpeed` is a spike and is dropped, so the next
 * good point is measured from the last kept one. When two dropped points in a row agree with each
 * other, the track really is elsewhere (the first fix was wrong, or the athlete was carried): the
 * second becomes the new reference and the jump adds nothing. Null under two usable points.
 */
export function distanceFromTrack(
  track: Track,
  maxSpeed: number,
  buffers = new SeriesBuffers(),
): DistanceSeries | null {
  const n = Math.min(track.elapsed.length, track.latitude.length, track.longitude.length);
  if (n < 2) return null;
  const distance = buffers.distance(n);
  // Most tracks need no guard: one plain pass, the elapsed seconds used as they are.
  const fastest = scanCleanTrack(track, n, maxSpeed, distance);
  if (fastest >= 0) return { time: track.elapsed.subarray(0, n), distance: distance.subarray(0, n), fastest };
  const time = buffers.time(n);
  const m = scanTrack(track, n, maxSpeed, time, distance);
  return m >= 2 ? { time: time.subarray(0, m), distance: distance.subarray(0, m), fastest: scannedFastest } : null;
}

/**
 * The track's cumulative distance when every point is valid, ascending in time, a short step (the
 * flat formula's range) and within the speed cap: its fastest step, or -1 at the first point that
 * needs scanTrack's care.
 */
function scanCleanTrack(track: Track, n: number, maxSpeed: number, distance: Float64Array): number {
  const { elapsed, latitude, longitude } = track;
  let lat0 = latitude[0] as number;
  let lon0 = longitude[0] as number;
  let t0 = elapsed[0] as number;
  if (!validPosition(lat0, lon0)) return -1;
  let cosAt = lat0;
  let cosLatitude = Math.cos(lat0 * RAD);
  let total = 0;
  let fastest = 0;
  distance[0] = 0;
  for (let i = 1; i < n; i++) {
    const t = elapsed[i] as number;
    const lat = latitude[i] as number;
    const lon = longitude[i] as number;
    const dLat = lat - lat0;
    const dLon = lon - lon0;
    const dt = t - t0;
    // NaN fails every comparison; a valid previous point and a short step keep this one in range
    // but for the poles and the antimeridian, which the range check catches.
    if (
      !(dt > 0 && dLat < FLAT_STEP_DEG && dLat > -FLAT_STEP_DEG && dLon < FLAT_STEP_DEG && dLon > -FLAT_STEP_DEG) ||
      !validPosition(lat, lon)
    )
      return -1;
    const mid = lat0 + dLat / 2;
    if (!(Math.abs(mid - cosAt) <= COS_REFRESH_DEG)) {
      cosAt = mid;
      cosLatitude = Math.cos(mid * RAD);
    }
    const x = dLon * cosLatitude;
    const step = Math.sqrt(x * x + dLat * dLat) * METRES_PER_DEGREE;
    if (step > maxSpeed * dt) return -1;
    if (step > fastest * dt) fastest = step / dt;
    total += step;
    distance[i] = total;
    lat0 = lat;
    lon0 = lon;
    t0 = t;
  }
  return fastest;
}

/**
 * The fastest step of the last scanTrack. The loop lives in its own function that ends with a
 * bare return, and hands this over through a module variable: V8 compiles a long loop on the fly
 * (on-stack replacement) during the first call, and code after the loop compiled then, before it
 * ever ran, made every later call fall back to the interpreter there.
 */
let scannedFastest = 0;

/** distanceFromTrack's loop: fills `time` and `distance`, returns how many points were kept. */
function scanTrack(track: Track, n: number, maxSpeed: number, time: Int32Array, distance: Float64Array): number {
  const { elapsed, latitude, longitude } = track;
  let m = 0;
  let total = 0;
  let fastest = 0;
  let lastTime = Number.NEGATIVE_INFINITY;
  // The last kept point, and the last dropped one (-1: none since the last kept point).
  let kept = -1;
  let keptLat = 0;
  let keptLon = 0;
  let keptTime = 0;
  let dropped = -1;
  // At 1 Hz a step is a few metres, where the equirectangular formula agrees with the haversine
  // far better than GPS accuracy, for a fraction of its cost: the latitude's cosine is cached while
  // the latitude moves less than COS_REFRESH_DEG; long steps take the haversine.
  let cosLatitude = 1;
  let cosAt = Number.NaN;
  for (let i = 0; i < n; i++) {
    const t = elapsed[i] as number;
    const lat = latitude[i] as number;
    const lon = longitude[i] as number;
    if (!(t > lastTime) || !validPosition(lat, lon)) continue;
    lastTime = t;
    if (kept >= 0) {
      const dLat = lat - keptLat;
      let dLon = lon - keptLon;
      if (dLon > 180) dLon -= 360;
      else if (dLon < -180) dLon += 360;
      let step: number;
      if (dLat > FLAT_STEP_DEG || dLat < -FLAT_STEP_DEG || dLon > FLAT_STEP_DEG || dLon < -FLAT_STEP_DEG) {
        step = distanceKm([keptLon, keptLat], [lon, lat]) * 1000;
      } else {
        const mid = keptLat + dLat / 2;
        if (!(Math.abs(mid - cosAt) <= COS_REFRESH_DEG)) {
          cosAt = mid;
          cosLatitude = Math.cos(mid * RAD);
        }
        const x = dLon * cosLatitude;
        step = Math.sqrt(x * x + dLat * dLat) * METRES_PER_DEGREE;
      }
      const dt = t - keptTime;
      if (step <= maxSpeed * dt) {
        total += step;
        if (step > fastest * dt) fastest = step / dt;
      } else {
        const agrees =
          dropped >= 0 &&
          distanceKm([longitude[dropped] as number, latitude[dropped] as number], [lon, lat]) * 1000 <=
            maxSpeed * (t - (elapsed[dropped] as number));
        if (!agrees) {
          dropped = i;
          continue;
        }
      }
    }
    kept = i;
    keptLat = lat;
    keptLon = lon;
    keptTime = t;
    dropped = -1;
    time[m] = t;
    distance[m] = total;
    m++;
  }
  scannedFastest = fastest;
  return m;
}
