import { runSteps } from '../../runtime/paced-stream.ts';
import type { Track } from '../activities/data.ts';
import { type ProjectedTrack, projectTrackSteps } from './projection.ts';
import { simplifyPolylineSteps } from './simplify.ts';

/** The look shared by the track thumbnails, the placeholders and the share page's map. */
export const PALETTE = {
  background: '#eef1f4',
  grid: '#dde3e9',
  casing: '#ffffff',
  track: '#d9480f',
  start: '#2b8a3e',
  end: '#c92a2a',
  pictogram: '#8a96a3',
} as const;

export interface TrackSvgOptions {
  width: number;
  height: number;
  /** Most vertices the drawn line may keep: the tolerance grows until it fits (default 4000). */
  maxVertices?: number;
}

/** Pixels a dropped point may move the line by: half a pixel is invisible. */
const BASE_TOLERANCE = 0.5;

/** A number as the SVG writes it: one decimal, no trailing zero (deterministic, and short). */
export function svgNumber(value: number): string {
  const rounded = Math.round(value * 10) / 10;
  return Object.is(rounded, -0) ? '0' : String(rounded);
}

/** Beyond this the tolerance stops growing: a coarser line would no longer look like the track. */
const MAX_TOLERANCE = 4;

/**
 * The line simplified until it holds at most `maxVertices` points: the tolerance doubles from half
 * a pixel up to 4 px; a line still too long (noise: points all over the area) then keeps every
 * k-th vertex, so it is still drawn across the whole area rather than collapsing to a dot.
 */
export const simplifiedLine = (line: ProjectedTrack, maxVertices: number): ProjectedTrack =>
  runSteps(simplifiedLineSteps(line, maxVertices));

function* simplifiedLineSteps(line: ProjectedTrack, maxVertices: number): Generator<void, ProjectedTrack> {
  let tolerance = BASE_TOLERANCE;
  let simplified = yield* simplifyPolylineSteps(line, tolerance);
  while (simplified.x.length > maxVertices && tolerance < MAX_TOLERANCE) {
    tolerance *= 2;
    simplified = yield* simplifyPolylineSteps(line, tolerance);
  }
  const n = simplified.x.length;
  if (n <= maxVertices) return simplified;
  const stride = Math.ceil((n - 1) / (maxVertices - 1));
  const kept: number[] = [];
  for (let i = 0; i < n - 1; i += stride) kept.push(i);
  kept.push(n - 1);
  return {
    x: Float64Array.from(kept, (i) => simplified.x[i] as number),
    y: Float64Array.from(kept, (i) => simplified.y[i] as number),
  };
}

/** `M x y L x y ...` of a line. */
export function pathData(line: ProjectedTrack): string {
  const parts: string[] = [];
  for (let i = 0; i < line.x.length; i++)
    parts.push(`${i === 0 ? 'M' : 'L'}${svgNumber(line.x[i] as number)} ${svgNumber(line.y[i] as number)}`);
  return parts.join('');
}

/** The card every drawing sits on: a flat background with a faint grid (no map tiles: offline). */
export function backdrop(width: number, height: number): string {
  const step = Math.max(20, Math.round(Math.min(width, height) / 8));
  const lines: string[] = [];
  for (let x = step; x < width; x += step) lines.push(`M${x} 0V${height}`);
  for (let y = step; y < height; y += step) lines.push(`M0 ${y}H${width}`);
  return (
    `<rect width="${width}" height="${height}" fill="${PALETTE.background}"/>` +
    `<path d="${lines.join('')}" stroke="${PALETTE.grid}" stroke-width="1" fill="none"/>`
  );
}

/**
 * A GPS track drawn as a standalone SVG document: the simplified line over a plain backdrop,
 * with a start (green) and an end (red) marker. Numbers are rounded to 0.1 px, so the same track
 * always gives the same text. Points that are not coordinates (NaN, |latitude| > 90) are skipped;
 * a track without any draws the backdrop only.
 */
export const trackSvg = (track: Track, options: TrackSvgOptions): string => runSteps(trackSvgSteps(track, options));

/** `trackSvg` in slices: it yields between them, so a page writer can let other work run (paced-stream.ts). */
export function* trackSvgSteps(track: Track, options: TrackSvgOptions): Generator<void, string> {
  const { width, height } = options;
  const unit = Math.max(1, Math.min(width, height) / 100);
  const padding = Math.round(unit * 8);
  const projected = yield* projectTrackSteps(track, { width, height, padding });
  const line = yield* simplifiedLineSteps(projected, options.maxVertices ?? 4000);
  const n = line.x.length;
  const parts = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" role="img" aria-label="GPS track">`,
    backdrop(width, height),
  ];
  if (n > 1) {
    const d = pathData(line);
    const stroke = `fill="none" stroke-linecap="round" stroke-linejoin="round"`;
    parts.push(
      `<path d="${d}" ${stroke} stroke="${PALETTE.casing}" stroke-width="${svgNumber(unit * 2.4)}"/>`,
      `<path d="${d}" ${stroke} stroke="${PALETTE.track}" stroke-width="${svgNumber(unit * 1.2)}"/>`,
    );
  }
  const marker = (i: number, fill: string) =>
    `<circle cx="${svgNumber(line.x[i] as number)}" cy="${svgNumber(line.y[i] as number)}" r="${svgNumber(unit * 2)}" fill="${fill}" stroke="${PALETTE.casing}" stroke-width="${svgNumber(unit * 0.7)}"/>`;
  if (n > 1) parts.push(marker(n - 1, PALETTE.end));
  if (n > 0) parts.push(marker(0, PALETTE.start));
  parts.push('</svg>');
  return parts.join('');
}
