import bmp from 'bmp-js';
import { fileTypeFromBuffer } from 'file-type';
import sharp, { type Sharp } from 'sharp';

/** Image types accepted for uploads, recognised by their magic bytes (never by name or declared type). */
export const ACCEPTED_IMAGE_TYPES = ['image/png', 'image/jpeg', 'image/bmp'] as const;
export type AcceptedImageType = (typeof ACCEPTED_IMAGE_TYPES)[number];

/**
 * Largest picture we decode, in pixels (about 40 megapixels: every phone camera fits). It bounds
 * the memory a decode may take, whatever a header claims (decompression bombs).
 */
export const MAX_INPUT_PIXELS = 40_000_000;

/** Why an upload is not a usable image; `kind` picks the HTTP status (415 or 422). */
export class ImageInputError extends Error {
  readonly kind: 'unsupported-type' | 'undecodable' | 'empty';
  constructor(kind: ImageInputError['kind'], message: string) {
    super(message);
    this.kind = kind;
  }
}

/** The stored form of an uploaded picture: re-encoded, metadata stripped, upright. */
export interface NormalizedImage {
  data: Buffer;
  /** File extension of `data` (png or jpg). */
  ext: 'png' | 'jpg';
  contentType: 'image/png' | 'image/jpeg';
  width: number;
  height: number;
  /** What the upload was, by content. */
  sourceType: AcceptedImageType;
}

/** Detects the image type from the content; undefined when it is none of png, jpeg, bmp. */
export async function sniffImageType(data: Uint8Array): Promise<AcceptedImageType | undefined> {
  if (data.length === 0) return undefined;
  const type = await fileTypeFromBuffer(data);
  const mime = type?.mime as string | undefined;
  if (mime === 'image/x-ms-bmp') return 'image/bmp';
  return (ACCEPTED_IMAGE_TYPES as readonly string[]).includes(mime ?? '') ? (mime as AcceptedImageType) : undefined;
}

/**
 * Reads a BMP header's size and checks the pixel count before bmp-js allocates width × height × 4
 * bytes: a 100-byte file may claim to be 60000 × 60000.
 */
export function bmpDimensions(data: Buffer): { width: number; height: number; bitsPerPixel: number } {
  if (data.length < 54 || data.toString('latin1', 0, 2) !== 'BM') throw new ImageInputError('undecodable', 'not a BMP');
  const width = data.readInt32LE(18);
  const height = Math.abs(data.readInt32LE(22));
  const bitsPerPixel = data.readUInt16LE(28);
  if (width <= 0 || height <= 0) throw new ImageInputError('undecodable', 'the BMP header has an invalid size');
  return { width, height, bitsPerPixel };
}

/** Decodes a BMP (sharp cannot) into raw RGB pixels that sharp can read. */
export function decodeBmp(data: Buffer): { pixels: Buffer; width: number; height: number } {
  const { width, height } = bmpDimensions(data);
  if (width * height > MAX_INPUT_PIXELS)
    throw new ImageInputError('undecodable', `the image is larger than ${MAX_INPUT_PIXELS} pixels`);
  let decoded: { data: Buffer; width: number; height: number };
  try {
    decoded = bmp.decode(data);
  } catch {
    throw new ImageInputError('undecodable', 'the BMP file could not be decoded');
  }
  // bmp-js yields A,B,G,R per pixel (and A is 0 for 24-bit files): keep R,G,B.
  const n = width * height;
  if (decoded.data.length < n * 4) throw new ImageInputError('undecodable', 'the BMP file is truncated');
  const pixels = Buffer.allocUnsafe(n * 3);
  for (let i = 0, o = 0; i < n * 4; i += 4, o += 3) {
    pixels[o] = decoded.data[i + 3] as number;
    pixels[o + 1] = decoded.data[i + 2] as number;
    pixels[o + 2] = decoded.data[i + 1] as number;
  }
  return { pixels, width, height };
}

/**
 * Turns an upload into what we store: PNG stays PNG, JPEG stays JPEG (quality 90), BMP becomes
 * PNG. Everything is decoded and re-encoded, which proves the file is a whole image, applies the
 * EXIF orientation, and strips metadata (a phone photo's GPS position must not be published).
 */
export async function normalizeImage(data: Buffer): Promise<NormalizedImage> {
  if (data.length === 0) throw new ImageInputError('empty', 'the file is empty');
  const sourceType = await sniffImageType(data);
  if (!sourceType)
    throw new ImageInputError('unsupported-type', 'the file is not a PNG, JPEG or BMP image (checked by content)');
  let pipeline: Sharp;
  if (sourceType === 'image/bmp') {
    const { pixels, width, height } = decodeBmp(data);
    pipeline = sharp(pixels, { raw: { width, height, channels: 3 } });
  } else {
    pipeline = sharp(data, { limitInputPixels: MAX_INPUT_PIXELS, failOn: 'error' }).rotate();
  }
  const jpeg = sourceType === 'image/jpeg';
  try {
    const out = await (jpeg ? pipeline.jpeg({ quality: 90 }) : pipeline.png({ compressionLevel: 6 })).toBuffer({
      resolveWithObject: true,
    });
    return {
      data: out.data,
      ext: jpeg ? 'jpg' : 'png',
      contentType: jpeg ? 'image/jpeg' : 'image/png',
      width: out.info.width,
      height: out.info.height,
      sourceType,
    };
  } catch (error) {
    const message = error instanceof Error ? error.message : '';
    if (/pixel limit/i.test(message))
      throw new ImageInputError('undecodable', `the image is larger than ${MAX_INPUT_PIXELS} pixels`);
    throw new ImageInputError('undecodable', 'the image could not be decoded (truncated or corrupt file)');
  }
}
