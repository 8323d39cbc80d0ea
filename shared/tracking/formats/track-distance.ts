import type { Track } from '../activities/data.ts';

/** Mean Earth radius (IUGG), in metres. */
const EARTH_RADIUS_M = 6_371_008.8;
const RAD = Math.PI / 180;

/**
 * Cumulative distance (m) at each track point, point to point along the great circle: what a file
 * without distances (most GPX) gets as its distance stream. A point in `breaks` (the first of a
 * new track or segment) adds nothing: the straight line from the end of the last one is not
 * ground covered (gpxpy, and so FitTrackee, measure each segment alone).
 */
export function cumulativeDistance(track: Track, breaks?: ReadonlySet<number>): Float64Array {
  const n = track.elapsed.length;
  const out = new Float64Array(n);
  let total = 0;
  for (let i = 1; i < n; i++) {
    if (breaks?.has(i)) {
      out[i] = total;
      continue;
    }
    const lat1 = (track.latitude[i - 1] as number) * RAD;
    const lat2 = (track.latitude[i] as number) * RAD;
    const dLat = lat2 - lat1;
    const dLon = ((track.longitude[i] as number) - (track.longitude[i - 1] as number)) * RAD;
    const a = Math.sin(dLat / 2) ** 2 + Math.cos(lat1) * Math.cos(lat2) * Math.sin(dLon / 2) ** 2;
    total += 2 * EARTH_RADIUS_M * Math.asin(Math.min(1, Math.sqrt(a)));
    out[i] = total;
  }
  return out;
}
