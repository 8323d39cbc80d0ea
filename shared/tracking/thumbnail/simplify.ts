import { runSteps } from '../../runtime/paced-stream.ts';
import type { ProjectedTrack } from './projection.ts';

/**
 * Douglas-Peucker works on pieces of at most this many points: its worst case is quadratic (a
 * spiral keeps every point), and a day at 1 Hz is 86,400 points. Cutting the line into pieces
 * costs one kept vertex per piece, which no eye sees at thumbnail size.
 */
const PIECE = 4096;

/**
 * The polyline with every point dropped that moves it by less than `tolerance` pixels: first
 * the points closer than the tolerance to the last one kept (cheap, linear), then
 * Douglas-Peucker on what is left. First and last points are always kept; the result is in
 * track order.
 */
export const simplifyPolyline = (line: ProjectedTrack, tolerance: number): ProjectedTrack =>
  runSteps(simplifyPolylineSteps(line, tolerance));

/** `simplifyPolyline`, yielding after the radial pass and after each piece (paced-stream.ts). */
export function* simplifyPolylineSteps(line: ProjectedTrack, tolerance: number): Generator<void, ProjectedTrack> {
  const radial = radialFilter(line, tolerance);
  const n = radial.length;
  if (n === 0) return { x: new Float64Array(0), y: new Float64Array(0) };
  const kept: number[] = [];
  for (let start = 0; start < n - 1; start += PIECE - 1) {
    yield;
    const end = Math.min(n - 1, start + PIECE - 1);
    douglasPeucker(line, radial, start, end, tolerance * tolerance, kept);
  }
  kept.push(radial[n - 1] as number);
  return {
    x: Float64Array.from(kept, (i) => line.x[i] as number),
    y: Float64Array.from(kept, (i) => line.y[i] as number),
  };
}

/** Indices of the points at least `tolerance` from the previous kept one (and the last point). */
function radialFilter(line: ProjectedTrack, tolerance: number): number[] {
  const n = line.x.length;
  if (n === 0) return [];
  const kept = [0];
  const squared = tolerance * tolerance;
  let px = line.x[0] as number;
  let py = line.y[0] as number;
  for (let i = 1; i < n; i++) {
    const x = line.x[i] as number;
    const y = line.y[i] as number;
    if ((x - px) ** 2 + (y - py) ** 2 >= squared) {
      kept.push(i);
      px = x;
      py = y;
    }
  }
  if (kept[kept.length - 1] !== n - 1) kept.push(n - 1);
  return kept;
}

/**
 * Douglas-Peucker over `points[from..to]` (indices into the line), iteratively (a recursion
 * could go thousands deep): appends the kept indices of [from, to) to `out`, in order.
 */
function douglasPeucker(
  line: ProjectedTrack,
  points: readonly number[],
  from: number,
  to: number,
  squaredTolerance: number,
  out: number[],
): void {
  const keep = new Uint8Array(to - from + 1);
  keep[0] = 1;
  keep[to - from] = 1;
  const stack: number[] = [from, to];
  while (stack.length > 0) {
    const last = stack.pop() as number;
    const first = stack.pop() as number;
    let farthest = -1;
    let maxDistance = squaredTolerance;
    for (let i = first + 1; i < last; i++) {
      const d = squaredSegmentDistance(line, points[i] as number, points[first] as number, points[last] as number);
      if (d > maxDistance) {
        maxDistance = d;
        farthest = i;
      }
    }
    if (farthest >= 0) {
      keep[farthest - from] = 1;
      stack.push(first, farthest, farthest, last);
    }
  }
  for (let i = from; i < to; i++) if (keep[i - from]) out.push(points[i] as number);
}

/** Squared distance from point p to the segment a-b. */
function squaredSegmentDistance(line: ProjectedTrack, p: number, a: number, b: number): number {
  let x = line.x[a] as number;
  let y = line.y[a] as number;
  const dx = (line.x[b] as number) - x;
  const dy = (line.y[b] as number) - y;
  if (dx !== 0 || dy !== 0) {
    const t = (((line.x[p] as number) - x) * dx + ((line.y[p] as number) - y) * dy) / (dx * dx + dy * dy);
    if (t > 1) {
      x = line.x[b] as number;
      y = line.y[b] as number;
    } else if (t > 0) {
      x += dx * t;
      y += dy * t;
    }
  }
  return ((line.x[p] as number) - x) ** 2 + ((line.y[p] as number) - y) ** 2;
}
