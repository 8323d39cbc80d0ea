import sharp from 'sharp';
import type { Track } from '../activities/data.ts';
import { placeholderSvg, type SportFamily } from './placeholder.ts';
import { trackSvg } from './track-svg.ts';

export type ThumbnailFormat = 'png' | 'webp';

/** Size of every activity thumbnail, in pixels (3:2, like a phone's activity card). */
export const THUMBNAIL_WIDTH = 600;
export const THUMBNAIL_HEIGHT = 400;

/** The spec's limit for a thumbnail, "less than 300 KB", counted strictly: 300,000 bytes. */
export const THUMBNAIL_MAX_BYTES = 300_000;

export const CONTENT_TYPES: Record<ThumbnailFormat, string> = { png: 'image/png', webp: 'image/webp' };

export interface RenderedThumbnail {
  data: Buffer;
  format: ThumbnailFormat;
  contentType: string;
  width: number;
  height: number;
}

/** WebP qualities tried in turn until the file fits (the first one almost always does). */
const WEBP_QUALITIES = [80, 60, 40, 20];

/**
 * Rasterizes one of our SVG drawings. PNG is written with a palette (at most 256 colours, 8 bits
 * a pixel): 600 × 400 pixels are then at most 240,400 bytes before compression, so a PNG stays
 * under the limit whatever the track looks like. WebP is lossy; its quality steps down if a
 * drawing ever comes out too big. Same SVG, same bytes (nothing random, no timestamps).
 */
export async function renderSvg(svg: string, format: ThumbnailFormat): Promise<RenderedThumbnail> {
  const input = Buffer.from(svg);
  const qualities = format === 'png' ? [0] : WEBP_QUALITIES;
  for (const quality of qualities) {
    const image = sharp(input, { failOn: 'error' });
    const encoded =
      format === 'png'
        ? image.png({ palette: true, colours: 256, dither: 0, compressionLevel: 9, effort: 10 })
        : image.webp({ quality, effort: 4, smartSubsample: true });
    const { data, info } = await encoded.toBuffer({ resolveWithObject: true });
    if (data.length < THUMBNAIL_MAX_BYTES)
      return { data, format, contentType: CONTENT_TYPES[format], width: info.width, height: info.height };
  }
  throw new Error(`a ${format} thumbnail did not fit in ${THUMBNAIL_MAX_BYTES} bytes`);
}

/**
 * Vertices a rasterized line keeps at most: drawing cost grows with the line's length, and a
 * real track simplified at half a pixel keeps far fewer (a 24-hour walk: about 2,600).
 */
const RASTER_MAX_VERTICES = 2000;

/** The thumbnail of a GPS track. */
export function renderTrackThumbnail(track: Track, format: ThumbnailFormat = 'png'): Promise<RenderedThumbnail> {
  return renderSvg(
    trackSvg(track, { width: THUMBNAIL_WIDTH, height: THUMBNAIL_HEIGHT, maxVertices: RASTER_MAX_VERTICES }),
    format,
  );
}

/** The thumbnail of an activity without a track: its sport family's pictogram. */
export function renderPlaceholder(family: SportFamily, format: ThumbnailFormat = 'png'): Promise<RenderedThumbnail> {
  return renderSvg(placeholderSvg(family, THUMBNAIL_WIDTH, THUMBNAIL_HEIGHT), format);
}
