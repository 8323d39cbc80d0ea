import type { Track } from '../activities/data.ts';

/** Mean Earth radius (IUGG), in metres. */
const EARTH_RADIUS_M = 6_371_008.8;
const RAD = Math.PI / 180;

/**
 * Cumulative distance (m) at each track point, point to point along the great circle: what a file
 * without distances (most GPX) gets as its distance stream. Gaps between segments count as
 * walked in a straight line, as the file gives no better path.
 */
export function cumulativeDistance(track: Track): Float64Array {
  const n = track.elapsed.length;
  const out = new Float64Array(n);
  let total = 0;
  for (let i = 1; i < n; i++) {
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
