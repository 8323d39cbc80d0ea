import { runSteps } from '../../runtime/paced-stream.ts';
import type { Track } from '../activities/data.ts';

/** A drawing area in pixels and the margin kept free around the track. */
export interface Viewport {
  width: number;
  height: number;
  padding: number;
}

/** A track's points in pixel coordinates (y down), in track order. */
export interface ProjectedTrack {
  x: Float64Array;
  y: Float64Array;
}

const DEG = Math.PI / 180;
/** Below this, cos(latitude) would squash a polar track to a vertical line (or divide by 0). */
const MIN_COS_LATITUDE = 0.02;

/**
 * Longitudes made continuous along the track: a step of more than 180° is taken as a crossing of
 * the antimeridian (179.9 → -179.9 is 0.2° east, not 359.8° west), so the drawing stays in one piece.
 */
export function unwrapLongitudes(longitude: Float64Array): Float64Array {
  const out = new Float64Array(longitude.length);
  for (let i = 0; i < longitude.length; i++) {
    const lon = longitude[i] as number;
    out[i] = i === 0 ? lon : lon - 360 * Math.round((lon - (out[i - 1] as number)) / 360);
  }
  return out;
}

/**
 * The track's valid points (finite, latitude within ±90) projected into the viewport.
 *
 * A local equirectangular projection (x = longitude · cos(middle latitude), y = latitude) rather
 * than Web Mercator: at the size of one activity both look the same, and this one has no infinity
 * at the poles. The track keeps its aspect ratio and is centred; a track with no extent (one
 * point, or every point equal) lands in the middle.
 */
export const projectTrack = (track: Track, viewport: Viewport): ProjectedTrack =>
  runSteps(projectTrackSteps(track, viewport));

/** Points between two pauses of `projectTrackSteps`. */
const SLICE = 16_384;

/** `projectTrack`, yielding between slices of its passes (shared/runtime/paced-stream.ts). */
export function* projectTrackSteps(track: Track, viewport: Viewport): Generator<void, ProjectedTrack> {
  const all = track.latitude.length;
  const lat = new Float64Array(all);
  const valid = new Float64Array(all);
  let n = 0;
  for (let i = 0; i < all; i++) {
    const la = track.latitude[i] as number;
    const lo = track.longitude[i] as number;
    if (Number.isFinite(la) && Number.isFinite(lo) && Math.abs(la) <= 90) {
      lat[n] = la;
      valid[n++] = lo;
    }
    if (i % SLICE === SLICE - 1) yield;
  }
  if (n === 0) return { x: new Float64Array(0), y: new Float64Array(0) };
  const lon = unwrapLongitudes(valid.subarray(0, n));
  yield;

  let minLat = Infinity;
  let maxLat = -Infinity;
  let minLon = Infinity;
  let maxLon = -Infinity;
  for (let i = 0; i < n; i++) {
    minLat = Math.min(minLat, lat[i] as number);
    maxLat = Math.max(maxLat, lat[i] as number);
    minLon = Math.min(minLon, lon[i] as number);
    maxLon = Math.max(maxLon, lon[i] as number);
  }
  const xScale = Math.max(MIN_COS_LATITUDE, Math.cos(((minLat + maxLat) / 2) * DEG));
  const spanX = (maxLon - minLon) * xScale;
  const spanY = maxLat - minLat;
  const innerW = Math.max(1, viewport.width - 2 * viewport.padding);
  const innerH = Math.max(1, viewport.height - 2 * viewport.padding);
  const largest = Math.max(spanX / innerW, spanY / innerH);
  const scale = largest > 0 ? 1 / largest : 0;
  const offsetX = (viewport.width - spanX * scale) / 2;
  const offsetY = (viewport.height - spanY * scale) / 2;

  const x = new Float64Array(n);
  const y = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    x[i] = offsetX + ((lon[i] as number) - minLon) * xScale * scale;
    y[i] = offsetY + (maxLat - (lat[i] as number)) * scale;
    if (i % SLICE === SLICE - 1) yield;
  }
  return { x, y };
}
