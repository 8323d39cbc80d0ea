import type { DistanceSeries } from './distance-series.ts';

/** The fastest stretch of an activity over a distance: seconds, and where it starts and ends (elapsed seconds). */
export interface BestWindow {
  seconds: number;
  start: number;
  end: number;
}

/** Durations closer than this are equal (interpolation rounding), and the earlier start wins. */
const TIE_SECONDS = 1e-9;
/** Windows tried before the passes, for a first best to prune with. */
const GUESSES = 64;

/**
 * The shortest time in which the series covers `length` metres, in O(n) at worst; null when it
 * never does.
 *
 * Between samples the athlete is taken to move at constant speed (linear interpolation of time at
 * the window's edges), so distance is a piecewise linear function of time; the duration of a
 * window whose two edges stay within the same two segments is then linear, so the minimum has an
 * edge on a sample. Hence two passes with pointers that only move one way:
 * - windows starting on each sample, in time order; the end is interpolated where the distance
 *   first reaches start + length;
 * - windows ending on each sample, latest first; the start is interpolated where the distance last
 *   is end - length.
 * Pruning keeps the passes short. With `fastest` the series' fastest step, pace(k) = t[k] -
 * d[k] / fastest never decreases, and moving a window's start from sample a to a later b shortens
 * the window by at most pace(b) - pace(a) (its end must cover the extra distance, no faster than
 * `fastest`); the same backwards for its end. Once a window lasts `slack` seconds more than the
 * best, the starts whose pace is less than `slack` further cannot win, and the pass jumps over
 * them. The pointers move by searches started where they are expected (a jump of the start moves
 * the end by about as many samples), galloping from there; pace is computed where read.
 * Ties go to the earliest start. Pauses count: the clock runs while the athlete stands still.
 */
export function bestTimeOver(series: DistanceSeries, length: number): BestWindow | null {
  const { time: t, distance: d } = series;
  const n = Math.min(t.length, d.length);
  if (n < 2 || !(length > 0) || !(series.fastest > 0)) return null;
  const first = d[0] as number;
  const last = d[n - 1] as number;
  if (last - first < length) return null;
  const inverse = 1 / series.fastest;
  const paceAt = (k: number) => (t[k] as number) - (d[k] as number) * inverse;
  // Pace gained per sample on average: where a jump of the start is expected to land.
  const perSample = Math.max((paceAt(n - 1) - paceAt(0)) / (n - 1), 1e-9);

  let best = Number.POSITIVE_INFINITY;
  let bestStart = 0;
  let bestEnd = 0;

  // A first guess from a few windows spread over the activity, so the passes prune from the start.
  const stride = Math.max(1, Math.floor(n / GUESSES));
  for (let i = 0, j = 1; i < n - 1; i += stride) {
    const target = (d[i] as number) + length;
    if (target > last) break;
    j = firstAtLeast(d, j <= i ? i + 1 : j, j + stride, n - 1, target);
    const d0 = d[j - 1] as number;
    const t0 = t[j - 1] as number;
    const seconds = t0 + (((t[j] as number) - t0) * (target - d0)) / ((d[j] as number) - d0) - (t[i] as number);
    if (seconds < best - TIE_SECONDS) {
      best = seconds;
      bestStart = t[i] as number;
      bestEnd = seconds + bestStart;
    }
  }

  // Windows starting on sample i; j: the first sample at or past the target.
  let j = 0;
  let i = 0;
  let moved = 1;
  while (i < n - 1) {
    const ti = t[i] as number;
    const target = (d[i] as number) + length;
    if (target > last) break;
    j = j <= i ? firstAtLeast(d, i + 1, i + 1, n - 1, target) : firstAtLeast(d, j, j + moved, n - 1, target);
    const d0 = d[j - 1] as number;
    const t0 = t[j - 1] as number;
    const end = t0 + (((t[j] as number) - t0) * (target - d0)) / ((d[j] as number) - d0);
    const seconds = end - ti;
    if (seconds < best - TIE_SECONDS || (seconds <= best + TIE_SECONDS && ti < bestStart)) {
      best = seconds;
      bestStart = ti;
      bestEnd = end;
    }
    const slack = seconds - best - TIE_SECONDS;
    const next =
      slack > 0
        ? firstPaceAtLeast(t, d, inverse, i + 1, i + Math.ceil(slack / perSample), n - 1, paceAt(i) + slack)
        : i + 1;
    moved = next - i;
    i = next;
  }

  // Windows ending on sample k, latest first; s: the last sample at or before the target.
  let s = n;
  let k = n - 1;
  moved = 1;
  while (k >= 1) {
    const tk = t[k] as number;
    const target = (d[k] as number) - length;
    if (target < first) break;
    s = s >= k ? lastAtMost(d, k - 1, k - 1, 0, target) : lastAtMost(d, s, s - moved, 0, target);
    const d0 = d[s] as number;
    const t0 = t[s] as number;
    const start = t0 + (((t[s + 1] as number) - t0) * (target - d0)) / ((d[s + 1] as number) - d0);
    const seconds = tk - start;
    if (seconds < best - TIE_SECONDS || (seconds <= best + TIE_SECONDS && start < bestStart)) {
      best = seconds;
      bestStart = start;
      bestEnd = tk;
    }
    const slack = seconds - best - TIE_SECONDS;
    const next =
      slack > 0 ? lastPaceAtMost(t, d, inverse, k - 1, k - Math.ceil(slack / perSample), 1, paceAt(k) - slack) : k - 1;
    moved = k - next;
    k = Math.max(next, 0);
  }
  return best === Number.POSITIVE_INFINITY ? null : { seconds: best, start: bestStart, end: bestEnd };
}

/**
 * In the non-decreasing `a`, the first index in [from, limit] whose value is at least `x` (limit
 * when none before it), searched from `guess`: galloping forward from it, or back towards `from`.
 */
function firstAtLeast(a: Float64Array, from: number, guess: number, limit: number, x: number): number {
  let g = guess < from ? from : guess > limit ? limit : guess;
  if ((a[g] as number) >= x) {
    // The answer is in [from, g]: gallop back to a value below x.
    if (g === from) return g;
    let hi = g;
    let step = 1;
    let lo = g - 1;
    while (lo > from && (a[lo] as number) >= x) {
      hi = lo;
      step *= 2;
      lo = hi - step;
    }
    if (lo <= from) {
      if ((a[from] as number) >= x) return from;
      lo = from;
    }
    // a[lo] < x <= a[hi]
    while (hi - lo > 1) {
      const mid = (lo + hi) >>> 1;
      if ((a[mid] as number) < x) lo = mid;
      else hi = mid;
    }
    return hi;
  }
  // a[g] < x: gallop forward.
  let lo = g;
  let step = 1;
  let hi = g + 1;
  while (hi < limit && (a[hi] as number) < x) {
    lo = hi;
    step *= 2;
    hi = lo + step;
  }
  if (hi >= limit) {
    hi = limit;
    g = lo;
  }
  // a[lo] < x; a[hi] >= x, or hi is the limit.
  while (hi - lo > 1) {
    const mid = (lo + hi) >>> 1;
    if ((a[mid] as number) < x) lo = mid;
    else hi = mid;
  }
  return hi;
}

/**
 * In the non-decreasing `a`, the last index in [floor, from] whose value is at most `x` (floor - 1
 * when none), searched from `guess`: galloping backward from it, or forward towards `from`.
 */
function lastAtMost(a: Float64Array, from: number, guess: number, floor: number, x: number): number {
  if (from < floor) return floor - 1;
  const g = guess > from ? from : guess < floor ? floor : guess;
  if ((a[g] as number) <= x) {
    // The answer is in [g, from]: gallop forward to a value above x.
    if (g === from) return g;
    let lo = g;
    let step = 1;
    let hi = g + 1;
    while (hi < from && (a[hi] as number) <= x) {
      lo = hi;
      step *= 2;
      hi = lo + step;
    }
    if (hi >= from) {
      if ((a[from] as number) <= x) return from;
      hi = from;
    }
    // a[lo] <= x < a[hi]
    while (hi - lo > 1) {
      const mid = (lo + hi) >>> 1;
      if ((a[mid] as number) <= x) lo = mid;
      else hi = mid;
    }
    return lo;
  }
  // a[g] > x: gallop backward.
  let hi = g;
  let step = 1;
  let lo = g - 1;
  while (lo >= floor && (a[lo] as number) > x) {
    hi = lo;
    step *= 2;
    lo = hi - step;
  }
  if (lo < floor) lo = floor - 1;
  // a[hi] > x; a[lo] <= x, or lo is below the floor.
  while (hi - lo > 1) {
    const mid = (lo + hi) >>> 1;
    if ((a[mid] as number) > x) hi = mid;
    else lo = mid;
  }
  return lo;
}

/** firstAtLeast over pace(k) = t[k] - d[k] * inverse, computed where read (no array to fill and cache). */
function firstPaceAtLeast(
  t: Int32Array,
  d: Float64Array,
  inverse: number,
  from: number,
  guess: number,
  limit: number,
  x: number,
): number {
  let g = guess < from ? from : guess > limit ? limit : guess;
  if ((t[g] as number) - (d[g] as number) * inverse >= x) {
    // The answer is in [from, g]: gallop back to a value below x.
    if (g === from) return g;
    let hi = g;
    let step = 1;
    let lo = g - 1;
    while (lo > from && (t[lo] as number) - (d[lo] as number) * inverse >= x) {
      hi = lo;
      step *= 2;
      lo = hi - step;
    }
    if (lo <= from) {
      if ((t[from] as number) - (d[from] as number) * inverse >= x) return from;
      lo = from;
    }
    // a[lo] < x <= a[hi]
    while (hi - lo > 1) {
      const mid = (lo + hi) >>> 1;
      if ((t[mid] as number) - (d[mid] as number) * inverse < x) lo = mid;
      else hi = mid;
    }
    return hi;
  }
  // a[g] < x: gallop forward.
  let lo = g;
  let step = 1;
  let hi = g + 1;
  while (hi < limit && (t[hi] as number) - (d[hi] as number) * inverse < x) {
    lo = hi;
    step *= 2;
    hi = lo + step;
  }
  if (hi >= limit) {
    hi = limit;
    g = lo;
  }
  // a[lo] < x; a[hi] >= x, or hi is the limit.
  while (hi - lo > 1) {
    const mid = (lo + hi) >>> 1;
    if ((t[mid] as number) - (d[mid] as number) * inverse < x) lo = mid;
    else hi = mid;
  }
  return hi;
}

/** lastAtMost over pace(k) = t[k] - d[k] * inverse, computed where read (no array to fill and cache). */
function lastPaceAtMost(
  t: Int32Array,
  d: Float64Array,
  inverse: number,
  from: number,
  guess: number,
  floor: number,
  x: number,
): number {
  if (from < floor) return floor - 1;
  const g = guess > from ? from : guess < floor ? floor : guess;
  if ((t[g] as number) - (d[g] as number) * inverse <= x) {
    // The answer is in [g, from]: gallop forward to a value above x.
    if (g === from) return g;
    let lo = g;
    let step = 1;
    let hi = g + 1;
    while (hi < from && (t[hi] as number) - (d[hi] as number) * inverse <= x) {
      lo = hi;
      step *= 2;
      hi = lo + step;
    }
    if (hi >= from) {
      if ((t[from] as number) - (d[from] as number) * inverse <= x) return from;
      hi = from;
    }
    // a[lo] <= x < a[hi]
    while (hi - lo > 1) {
      const mid = (lo + hi) >>> 1;
      if ((t[mid] as number) - (d[mid] as number) * inverse <= x) lo = mid;
      else hi = mid;
    }
    return lo;
  }
  // a[g] > x: gallop backward.
  let hi = g;
  let step = 1;
  let lo = g - 1;
  while (lo >= floor && (t[lo] as number) - (d[lo] as number) * inverse > x) {
    hi = lo;
    step *= 2;
    lo = hi - step;
  }
  if (lo < floor) lo = floor - 1;
  // a[hi] > x; a[lo] <= x, or lo is below the floor.
  while (hi - lo > 1) {
    const mid = (lo + hi) >>> 1;
    if ((t[mid] as number) - (d[mid] as number) * inverse > x) hi = mid;
    else lo = mid;
  }
  return lo;
}
