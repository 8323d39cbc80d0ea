import type { Track } from './data.ts';

/**
 * GET /v2/activities/{id}/splits (docs/tracking-activities.md, "Splits"): an activity cut every
 * kilometre or mile of its distance stream, in one pass over the samples. The time and the
 * elevation at each boundary are interpolated linearly between the two samples around it.
 */

export const SPLIT_UNITS = { km: 1000, mile: 1609.344 } as const;

export type SplitUnit = keyof typeof SPLIT_UNITS;

export interface Split {
  /** 1 for the first. */
  index: number;
  /** Metres covered: the unit's length, less for the last one. */
  distance: number;
  /** Seconds since the activity's start when the split begins. */
  start: number;
  /** Seconds the split took. */
  elapsedTime: number;
  /** Seconds per unit (per km or per mile), the last split's scaled up to a whole unit. */
  pace: number;
  /** Metres, end minus start; null without elevation at both ends. */
  elevationChange: number | null;
  /** Mean of the heart-rate samples inside the split; null when it has none. */
  averageHeartRate: number | null;
}

/** The channels a split reads, aligned with `elapsed` (NaN: no value at that sample). */
export interface SplitStreams {
  elapsed: ArrayLike<number>;
  distance: ArrayLike<number> | undefined;
  heartRate?: ArrayLike<number> | undefined;
  elevation?: ArrayLike<number> | undefined;
}

const valueAt = (channel: ArrayLike<number> | undefined, i: number): number => {
  const v = channel?.[i];
  return v === undefined || v === null ? Number.NaN : v;
};

/** a + f·(b − a), or the known one of a and b (NaN when neither is). */
const between = (a: number, b: number, f: number): number => {
  if (Number.isNaN(a)) return b;
  if (Number.isNaN(b)) return a;
  return a + f * (b - a);
};

/**
 * The splits of one unit. A sample belongs to the split its distance falls in, (start, end], the
 * first sample and those before it to the first split. Samples without a distance add their heart rate and elevation
 * to the split being filled; a distance below the largest seen so far (GPS noise) counts as that
 * largest. The last split ends at the last sample with a distance and is left out when it covers
 * nothing. Without a distance stream: no splits.
 */
export function computeSplits(streams: SplitStreams, unit: SplitUnit): Split[] {
  const length = SPLIT_UNITS[unit];
  const { elapsed, distance, heartRate, elevation } = streams;
  const splits: Split[] = [];
  if (!distance) return splits;

  let started = false;
  // The split being filled.
  let startTime = 0;
  let startDistance = 0;
  let startElevation = Number.NaN;
  let boundary = length;
  let hrSum = 0;
  let hrCount = 0;
  // The last sample with a distance, and the last elevation known.
  let prevTime = 0;
  let prevDistance = 0;
  let lastElevation = Number.NaN;

  const close = (endTime: number, endDistance: number, endElevation: number) => {
    const covered = endDistance - startDistance;
    const took = endTime - startTime;
    splits.push({
      index: splits.length + 1,
      distance: covered,
      start: startTime,
      elapsedTime: took,
      pace: (took * length) / covered,
      elevationChange:
        Number.isNaN(startElevation) || Number.isNaN(endElevation) ? null : endElevation - startElevation,
      averageHeartRate: hrCount ? hrSum / hrCount : null,
    });
    startTime = endTime;
    startDistance = endDistance;
    startElevation = endElevation;
    hrSum = 0;
    hrCount = 0;
  };

  for (let i = 0; i < elapsed.length; i++) {
    const time = elapsed[i] as number;
    const d = valueAt(distance, i);
    const e = valueAt(elevation, i);
    if (!Number.isNaN(d)) {
      if (!started) {
        started = true;
        startTime = time;
        startDistance = d;
        startElevation = e;
        while (boundary <= d) boundary += length;
      } else if (d > prevDistance) {
        // Boundaries passed before this sample: the time and elevation there, on the line between the two samples.
        while (boundary < d) {
          const f = (boundary - prevDistance) / (d - prevDistance);
          close(prevTime + f * (time - prevTime), boundary, between(lastElevation, e, f));
          boundary += length;
        }
      }
      prevTime = time;
      prevDistance = Math.max(prevDistance, d);
    }
    if (!Number.isNaN(e)) {
      lastElevation = e;
      if (Number.isNaN(startElevation)) startElevation = e;
    }
    const hr = valueAt(heartRate, i);
    if (!Number.isNaN(hr)) {
      hrSum += hr;
      hrCount++;
    }
    // A sample on a boundary closes its split.
    if (started && d === boundary) {
      close(time, boundary, lastElevation);
      boundary += length;
    }
  }
  if (started && prevDistance > startDistance) close(prevTime, prevDistance, lastElevation);
  return splits;
}

/**
 * The track's elevation at each of `elapsed`'s seconds, for an activity without an elevation
 * channel (datatype 14): interpolated linearly between the track points with an elevation around
 * it, NaN outside them. Undefined when the track has no elevation.
 */
export function elevationFromTrack(elapsed: ArrayLike<number>, track: Track): Float64Array | undefined {
  const at: number[] = [];
  const ele: number[] = [];
  for (let i = 0; i < track.elapsed.length; i++) {
    const e = track.elevation[i] as number;
    if (Number.isNaN(e)) continue;
    at.push(track.elapsed[i] as number);
    ele.push(e);
  }
  if (!at.length) return undefined;
  const out = new Float64Array(elapsed.length).fill(Number.NaN);
  let k = 0;
  for (let i = 0; i < elapsed.length; i++) {
    const t = elapsed[i] as number;
    while (k + 1 < at.length && (at[k + 1] as number) <= t) k++;
    const t0 = at[k] as number;
    if (t === t0) out[i] = ele[k] as number;
    else if (t > t0 && k + 1 < at.length) {
      const t1 = at[k + 1] as number;
      out[i] = (ele[k] as number) + (((ele[k + 1] as number) - (ele[k] as number)) * (t - t0)) / (t1 - t0);
    }
  }
  return out;
}
