import sharp from 'sharp';

/** Thumbnails fit in this box (px), never enlarged. */
export const THUMBNAIL_MAX_SIZE = 320;
export const THUMBNAIL_QUALITY = 80;

export interface Thumbnail {
  data: Buffer;
  width: number;
  height: number;
  contentType: 'image/jpeg';
}

/**
 * Renders the thumbnail of a stored original (PNG or JPEG, see image-input.ts): fits it in a
 * 320 × 320 box, flattens transparency on white, encodes a baseline JPEG. The same input always
 * gives the same bytes (the job may run twice). A 320 px JPEG at quality 80 is well under 300 KB.
 */
export async function renderThumbnail(original: Buffer): Promise<Thumbnail> {
  const { data, info } = await sharp(original, { failOn: 'error' })
    .resize({ width: THUMBNAIL_MAX_SIZE, height: THUMBNAIL_MAX_SIZE, fit: 'inside', withoutEnlargement: true })
    .flatten({ background: '#ffffff' })
    .jpeg({ quality: THUMBNAIL_QUALITY })
    .toBuffer({ resolveWithObject: true });
  return { data, width: info.width, height: info.height, contentType: 'image/jpeg' };
}

/** Where the thumbnail of a stored original goes: beside it, `<name>.thumb.jpg`. */
export function thumbnailPathFor(imagePath: string): string {
  return `${imagePath.replace(/\.[a-z0-9]+$/i, '')}.thumb.jpg`;
}
