import type { DistanceSeries } from './distance-series.ts';

/** The fastest stretch of an activity over a distance: seconds, and where it starts and ends (elapsed seconds). */
export interface BestWindow {
  seconds: number;
  start: number;
  end: number;
}

/** Durations closer than this are equal (interpolation rounding), and the earlier start wins. */
const TIE_SECONDS = 1e-9;
/** Windows tried before the pass, for a first best to prune with. */
const GUESSES = 64;

/**
 * The shortest time in which the series covers `length` metres, in O(n) at worst; null when it
 * never does.
 *
 * Between samples the athlete is taken to move at constant speed (linear interpolation of time at
 * the window's edges), so distance is a piecewise linear function of time; the duration of a
 * window whose two edges stay within the same two segments is then linear, so the minimum has an
 * edge on a sample. Hence one pass over the starts, in time order, with pointers that only move
 * forward: at each start sample i, the window starting there (its end interpolated where the
 * distance first reaches d[i] + length), then the windows ending on a sample whose start lies
 * between samples i - 1 and i (each end sample belongs to one such segment: O(n) in all).
 *
 * Pruning keeps the pass short. With `fastest` the series' fastest step, pace(k) = t[k] -
 * d[k] / fastest never decreases, and moving a window's start from a to a later b shortens the
 * window by at most pace(b) - pace(a) (its end must cover the extra distance, no faster than
 * `fastest`). Once a window lasts `slack` seconds more than the best, the starts whose pace is
 * less than `slack` further cannot win, and the pass jumps over them to the first sample past
 * them, whose segment it then examines. The pointers move by searches started where they are
 * expected (where the pace gained over the last jump would take it; a jump of the start moves the
 * end by about as many samples), galloping from there; pace is computed where read.
 * Ties go to the earliest start. Pauses count: the clock runs while the athlete stands still.
 */
export function bestTimeOver(series: DistanceSeries, length: number): BestWindow | null {
  const { time: t, distance: d } = series;
  const n = Math.min(t.length, d.length);
  if (n < 2 || !(length > 0) || !(series.fastest > 0)) return null;
  if ((d[n - 1] as number) - (d[0] as number) < length) return null;
  const inverse = 1 / series.fastest;
  // Pace gained per sample on average: where the first jump of the start is expected to land.
  const perSample = Math.max((pace(t, d, inverse, n - 1) - pace(t, d, inverse, 0)) / (n - 1), 1e-9);
  const best: BestWindow = { seconds: Number.POSITIVE_INFINITY, start: 0, end: 0 };
  // Two functions of one loop each: V8 optimizes those predictably, where a function of several
  // long loops was compiled on the fly (on-stack replacement) in pieces.
  guessBest(t, d, n, length, best);
  sweep(t, d, n, length, inverse, perSample, best);
  return best.seconds === Number.POSITIVE_INFINITY ? null : best;
}

const pace = (t: Int32Array, d: Float64Array, inverse: number, k: number) =>
  (t[k] as number) - (d[k] as number) * inverse;

/** A first best from a few windows spread over the activity, so the pass prunes from the start. */
function guessBest(t: Int32Array, d: Float64Array, n: number, length: number, best: BestWindow): void {
  const last = d[n - 1] as number;
  const stride = Math.max(1, Math.floor(n / GUESSES));
  for (let i = 0, j = 1; i < n - 1; i += stride) {
    const target = (d[i] as number) + length;
    if (target > last) break;
    j = firstAtLeast(d, j <= i ? i + 1 : j, j + stride, n - 1, target);
    const d0 = d[j - 1] as number;
    const t0 = t[j - 1] as number;
    const seconds = t0 + (((t[j] as number) - t0) * (target - d0)) / ((d[j] as number) - d0) - (t[i] as number);
    if (seconds < best.seconds - TIE_SECONDS) {
      best.seconds = seconds;
      best.start = t[i] as number;
      best.end = seconds + best.start;
    }
  }
}

/** bestTimeOver's pass: i, the start sample; j, the first sample at or past d[i] + length. */
function sweep(
  t: Int32Array,
  d: Float64Array,
  n: number,
  length: number,
  inverse: number,
  perSample: number,
  best: BestWindow,
): void {
  const last = d[n - 1] as number;
  let { seconds: bestSeconds, start: bestStart, end: bestEnd } = best;
  let j = 0;
  let i = 0;
  let moved = 1;
  let lastPace = Number.POSITIVE_INFINITY;
  for (;;) {
    const ti = t[i] as number;
    const di = d[i] as number;
    const target = di + length;
    const reachable = target <= last;
    if (reachable)
      j = j <= i ? firstAtLeast(d, i + 1, i + 1, n - 1, target) : firstAtLeast(d, j, j + moved, n - 1, target);
    // The windows ending on samples k whose start lies strictly between samples i - 1 and i:
    // d[i-1] + length < d[k] < d[i] + length, latest first (the pass jumped over the earlier ones).
    if (i > 0) {
      const dp = d[i - 1] as number;
      if (di > dp) {
        const tp = t[i - 1] as number;
        const from = dp + length;
        for (let k = (reachable ? j : n) - 1; k >= 0 && (d[k] as number) > from; k--) {
          const tk = t[k] as number;
          const start = tp + ((ti - tp) * ((d[k] as number) - length - dp)) / (di - dp);
          const seconds = tk - start;
          if (seconds < bestSeconds - TIE_SECONDS || (seconds <= bestSeconds + TIE_SECONDS && start < bestStart)) {
            bestSeconds = seconds;
            bestStart = start;
            bestEnd = tk;
          }
        }
      }
    }
    if (!reachable) break;
    const d0 = d[j - 1] as number;
    const t0 = t[j - 1] as number;
    const end = t0 + (((t[j] as number) - t0) * (target - d0)) / ((d[j] as number) - d0);
    const seconds = end - ti;
    if (seconds < bestSeconds - TIE_SECONDS || (seconds <= bestSeconds + TIE_SECONDS && ti < bestStart)) {
      bestSeconds = seconds;
      bestStart = ti;
      bestEnd = end;
    }
    const slack = seconds - bestSeconds - TIE_SECONDS;
    const paceI = ti - di * inverse;
    let next = i + 1;
    if (slack > 0) {
      // The pace gained per sample over the last jump (else on average): where this one lands.
      const gain = paceI > lastPace ? (paceI - lastPace) / moved : perSample;
      next = firstPaceAtLeast(t, d, inverse, i + 1, i + Math.ceil(slack / gain), n - 1, paceI + slack);
    }
    moved = next - i;
    lastPace = paceI;
    i = next;
  }
  best.seconds = bestSeconds;
  best.start = bestStart;
  best.end = bestEnd;
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
