import type { DistanceSeries } from './distance-series.ts';

/** The fastest stretch of an activity over a distance: seconds, and where it starts and ends (elapsed seconds). */
export interface BestWindow {
  seconds: number;
  start: number;
  end: number;
}

/** Durations closer than this are equal (interpolation rounding), and the earlier start wins. */
const TIE_SECONDS = 1e-9;

/**
 * The shortest time in which the series covers `length` metres, O(n) with two pointers; null when
 * it never does. Between samples the athlete is taken to move at constant speed (linear
 * interpolation of time at the window's edges), so distance is a piecewise linear function of time;
 * the duration of a window whose two edges stay within the same two segments is then linear, so the
 * minimum has one edge on a sample. Hence two passes: windows starting on each sample (the end
 * interpolated where the distance first reaches start + length) and windows ending on each sample
 * (the start interpolated where the distance last is end - length). Both pointers only move forward.
 * Ties go to the earliest start. Pauses count: the clock runs while the athlete stands still.
 */
export function bestTimeOver(series: DistanceSeries, length: number): BestWindow | null {
  const { time: t, distance: d } = series;
  const n = Math.min(t.length, d.length);
  if (n < 2 || !(length > 0)) return null;
  const first = d[0] as number;
  const last = d[n - 1] as number;
  if (last - first < length) return null;

  let best = Number.POSITIVE_INFINITY;
  let bestStart = 0;
  let bestEnd = 0;

  // Windows starting on sample i; j: the first sample at or past the target.
  let j = 1;
  for (let i = 0; i < n - 1; i++) {
    const target = (d[i] as number) + length;
    if (target > last) break;
    if (j <= i) j = i + 1;
    while ((d[j] as number) < target) j++;
    const d0 = d[j - 1] as number;
    const t0 = t[j - 1] as number;
    const end = t0 + (((t[j] as number) - t0) * (target - d0)) / ((d[j] as number) - d0);
    const seconds = end - (t[i] as number);
    // Starts come in time order: a tie keeps the earlier one.
    if (seconds < best - TIE_SECONDS) {
      best = seconds;
      bestStart = t[i] as number;
      bestEnd = end;
    }
  }

  // Windows ending on sample k; i: the last sample at or before the target.
  let i = 0;
  for (let k = 1; k < n; k++) {
    const target = (d[k] as number) - length;
    if (target < first) continue;
    while (i + 1 < k && (d[i + 1] as number) <= target) i++;
    const d0 = d[i] as number;
    const t0 = t[i] as number;
    const start = t0 + (((t[i + 1] as number) - t0) * (target - d0)) / ((d[i + 1] as number) - d0);
    const seconds = (t[k] as number) - start;
    if (seconds < best - TIE_SECONDS || (seconds <= best + TIE_SECONDS && start < bestStart)) {
      best = seconds;
      bestStart = start;
      bestEnd = t[k] as number;
    }
  }
  return best === Number.POSITIVE_INFINITY ? null : { seconds: best, start: bestStart, end: bestEnd };
}
