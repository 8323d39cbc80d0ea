/**
 * Downsampling of an activity's streams for charts (docs/tracking-activities.md, "Streams by
 * datatype and resolution"): Largest-Triangle-Three-Buckets (S. Steinarsson, "Downsampling Time
 * Series for Visual Representation", 2013), which keeps the peaks and troughs a chart draws where
 * averaging or every-nth sampling flattens them. It returns positions, not values, so that every
 * channel of one answer is sampled at the same elapsed seconds.
 */

/** The resolutions a streams read accepts: how many samples each keeps at most. */
export const RESOLUTIONS = { low: 100, medium: 1000, high: 10_000, full: Number.POSITIVE_INFINITY } as const;
export type Resolution = keyof typeof RESOLUTIONS;

/** 0 to n − 1 (a loop: TypedArray.from with a mapping function takes V8's slow path). */
function everyPosition(n: number): Uint32Array {
  const out = new Uint32Array(n);
  for (let i = 0; i < n; i++) out[i] = i;
  return out;
}

/**
 * The positions (ascending indices) LTTB keeps of the series (x, y) to draw it with `threshold`
 * points (every position when it has no more): the first and the last, and between them one per
 * bucket, the one whose triangle with the previous point kept and the next bucket's average is
 * the largest. The reference algorithm, on positions; `y` has no NaN.
 */
export function lttb(x: ArrayLike<number>, y: ArrayLike<number>, threshold: number): Uint32Array {
  const n = x.length;
  if (threshold >= n) return everyPosition(n);
  if (threshold < 3) return threshold <= 1 ? Uint32Array.of(0) : Uint32Array.of(0, n - 1);
  const out = new Uint32Array(threshold);
  const every = (n - 2) / (threshold - 2);
  let a = 0;
  for (let bucket = 0; bucket < threshold - 2; bucket++) {
    // The next bucket's average point (the last sample alone for the last bucket).
    const nextStart = Math.floor((bucket + 1) * every) + 1;
    const nextEnd = Math.min(Math.floor((bucket + 2) * every) + 1, n);
    let avgX = 0;
    let avgY = 0;
    for (let j = nextStart; j < nextEnd; j++) {
      avgX += x[j] as number;
      avgY += y[j] as number;
    }
    avgX /= nextEnd - nextStart;
    avgY /= nextEnd - nextStart;
    const ax = x[a] as number;
    const ay = y[a] as number;
    let best = -1;
    let chosen = Math.floor(bucket * every) + 1;
    const end = Math.floor((bucket + 1) * every) + 1;
    for (let j = chosen; j < end; j++) {
      const area = Math.abs((ax - avgX) * ((y[j] as number) - ay) - (ax - (x[j] as number)) * (avgY - ay));
      if (area > best) {
        best = area;
        chosen = j;
      }
    }
    out[bucket + 1] = chosen;
    a = chosen;
  }
  out[threshold - 1] = n - 1;
  return out;
}

/**
 * The positions to answer `channels` (each aligned on `x`, NaN where a sample has no value of
 * it) with about `threshold` samples: each channel with values gets an equal share of the
 * threshold (two at least), runs LTTB on its own samples, and the positions of all are merged.
 * So every channel keeps its own peaks, whatever the others' units or noise (a sum of areas would
 * let the noisiest channel choose), and all are answered at the same positions, which are at most
 * `threshold` (or two per channel, when there are more than threshold / 2 channels). Every
 * position when there are no more samples than the threshold; evenly spread ones without channels.
 */
export function sharedPositions(
  x: ArrayLike<number>,
  channels: readonly Float64Array[],
  threshold: number,
): Uint32Array {
  const n = x.length;
  if (threshold >= n) return everyPosition(n);
  const series = channels.filter((values) => values.some((v) => !Number.isNaN(v)));
  if (series.length === 0) return lttb(x, new Float64Array(n), threshold);
  const share = Math.max(2, Math.floor(threshold / series.length));
  const kept = new Uint8Array(n);
  const at = new Uint32Array(n);
  const xs = new Float64Array(n);
  const ys = new Float64Array(n);
  for (const values of series) {
    // The channel's own samples.
    let m = 0;
    for (let i = 0; i < n; i++) {
      const v = values[i] as number;
      if (Number.isNaN(v)) continue;
      at[m] = i;
      xs[m] = x[i] as number;
      ys[m++] = v;
    }
    for (const p of lttb(xs.subarray(0, m), ys.subarray(0, m), share)) kept[at[p] as number] = 1;
  }
  let count = 0;
  for (const k of kept) count += k;
  const out = new Uint32Array(count);
  let o = 0;
  for (let i = 0; i < n; i++) if (kept[i]) out[o++] = i;
  return out;
}
