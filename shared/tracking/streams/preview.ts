import type { Datastream } from '../activities/data.ts';
import { sharedPositions } from './downsample.ts';

/**
 * The stored preview of a long activity's datastream (migration 0062): every channel at the
 * PREVIEW_SIZE positions sharedPositions keeps for all of them, so that a `low` streams read
 * (the chart a phone draws first) reads a few kilobytes instead of megabytes: it runs LTTB again
 * on the preview, for the channels asked. Written with the activity (streams never change).
 */

/** Positions in a preview; each channel of the activity has an equal share of them. */
export const PREVIEW_SIZE = 1000;
/** Activities with more samples than this get a preview (below, a full read is cheap enough). */
export const PREVIEW_MIN_SAMPLES = 4 * PREVIEW_SIZE;
/** The preview's row holding the elapsed seconds (datatype ids start at 1). */
export const PREVIEW_ELAPSED = 0;

/** The preview of a datastream, as rows: PREVIEW_ELAPSED → the seconds kept, datatype id → its values there. */
export function streamPreview(datastream: Datastream): Map<number, Float64Array> | undefined {
  const { elapsed, channels } = datastream;
  if (elapsed.length <= PREVIEW_MIN_SAMPLES || channels.size === 0) return undefined;
  const keep = sharedPositions(elapsed, [...channels.values()], PREVIEW_SIZE);
  const at = (from: ArrayLike<number>) => {
    const out = new Float64Array(keep.length);
    for (let k = 0; k < keep.length; k++) out[k] = from[keep[k] as number] as number;
    return out;
  };
  const rows = new Map<number, Float64Array>([[PREVIEW_ELAPSED, at(elapsed)]]);
  for (const [datatype, values] of channels) rows.set(datatype, at(values));
  return rows;
}
