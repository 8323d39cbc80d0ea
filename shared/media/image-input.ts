import { fileTypeFromBuffer } from 'file-type';
import sharp, { type Sharp } from 'sharp';
import { BmpDecodeError, type BmpDecodePool, bmpDecodePool, type DecodedBmp } from './bmp-decode-pool.ts';

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

/** BMP compression methods by their header value, to name the refused ones. */
const BMP_COMPRESSION: Record<number, string> = {
  1: 'RLE8',
  2: 'RLE4',
  3: 'BITFIELDS',
  4: 'JPEG',
  5: 'PNG',
  6: 'ALPHABITFIELDS',
  11: 'CMYK',
  12: 'CMYKRLE8',
  13: 'CMYKRLE4',
};

/** Bits per pixel bmp-js decodes correctly (uncompressed; 16 bits as X1R5G5B5). */
const BMP_DEPTHS = [1, 4, 8, 16, 24, 32];

/** Where a BMP's parts are, as read from its headers and checked against its length. */
export interface BmpLayout {
  width: number;
  height: number;
  bitsPerPixel: number;
  /** Header bytes after the 14-byte file header (40 for BITMAPINFOHEADER, 108 V4, 124 V5). */
  headerSize: number;
  /** Palette entries the file holds (depths up to 8 only; 0 otherwise). */
  paletteColors: number;
  /** Where the pixel rows start (the file header's bfOffBits). */
  pixelOffset: number;
  /** Bytes per row, padded to 4. */
  stride: number;
}

const undecodable = (message: string) => new ImageInputError('undecodable', message);

/**
 * Reads a BMP's headers and refuses, before anything is allocated, what cannot be an image of the
 * size it claims: bmp-js allocates width × height × 4 bytes from the header alone, so a tiny
 * RLE8 file can claim a huge picture. Only uncompressed (BI_RGB) files are accepted: a
 * compressed one can claim any size in a few bytes, and bmp-js reads BI_BITFIELDS wrongly (masks
 * at a fixed place, 32-bit channels in the wrong order). Its pixel rows must all be in the file.
 */
export function bmpLayout(data: Uint8Array): BmpLayout {
  const file = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  if (file.length < 54 || file.toString('latin1', 0, 2) !== 'BM') throw undecodable('the BMP file is truncated');
  const pixelOffset = file.readUInt32LE(10);
  const headerSize = file.readUInt32LE(14);
  if (headerSize < 40)
    throw undecodable(`BMP files with a ${headerSize}-byte (OS/2) header are not accepted; send a PNG or a JPEG`);
  const width = file.readInt32LE(18);
  const height = Math.abs(file.readInt32LE(22));
  const bitsPerPixel = file.readUInt16LE(28);
  const compression = file.readUInt32LE(30);
  if (width <= 0 || height <= 0) throw undecodable('the BMP header has an invalid size');
  if (width * height > MAX_INPUT_PIXELS) throw undecodable(`the image is larger than ${MAX_INPUT_PIXELS} pixels`);
  if (compression !== 0)
    throw undecodable(
      `compressed BMP files (${BMP_COMPRESSION[compression] ?? `compression ${compression}`}) are not accepted, only uncompressed ones; send a PNG or a JPEG`,
    );
  if (!BMP_DEPTHS.includes(bitsPerPixel))
    throw undecodable(`BMP files with ${bitsPerPixel} bits per pixel are not accepted (only ${BMP_DEPTHS.join(', ')})`);
  let paletteColors = 0;
  if (bitsPerPixel <= 8) {
    paletteColors = file.readUInt32LE(46) || 2 ** bitsPerPixel;
    if (paletteColors > 2 ** bitsPerPixel)
      throw undecodable(`the BMP palette has more colours than ${bitsPerPixel} bits per pixel can index`);
  }
  const stride = Math.ceil((width * bitsPerPixel) / 32) * 4;
  if (pixelOffset < 14 + headerSize + paletteColors * 4)
    throw undecodable('the BMP pixel data starts inside its headers');
  if (pixelOffset + stride * height > file.length)
    throw undecodable(
      `the BMP file is truncated: its header claims ${width} × ${height} pixels, ${stride * height} bytes of pixels from byte ${pixelOffset}, but the file has ${file.length} bytes`,
    );
  return { width, height, bitsPerPixel, headerSize, paletteColors, pixelOffset, stride };
}

/**
 * The file rewritten as bmp-js reads it (it ignores the header size and the pixel offset: a V4 or
 * V5 header, or a gap before the pixels, would shift every pixel): a 40-byte header, a full
 * palette (missing entries black) and the pixel rows, in a buffer of its own to move to a thread.
 */
function bmpForDecoder(data: Uint8Array, layout: BmpLayout): Uint8Array {
  const paletteBytes = layout.bitsPerPixel <= 8 ? 4 * 2 ** layout.bitsPerPixel : 0;
  const pixelBytes = layout.stride * layout.height;
  const out = Buffer.from(new ArrayBuffer(54 + paletteBytes + pixelBytes));
  out.set(data.subarray(0, 54));
  out.writeUInt32LE(out.length, 2);
  out.writeUInt32LE(54 + paletteBytes, 10);
  out.writeUInt32LE(40, 14);
  out.writeUInt32LE(0, 46); // colours used: 0 means all 2^bits, as written
  const palette = 14 + layout.headerSize;
  out.set(data.subarray(palette, palette + layout.paletteColors * 4), 54);
  out.set(data.subarray(layout.pixelOffset, layout.pixelOffset + pixelBytes), 54 + paletteBytes);
  return new Uint8Array(out.buffer);
}

/**
 * Decodes a BMP (sharp cannot) into raw R,G,B pixels that sharp can read, after bmpLayout's
 * checks, in a worker thread (bmp-decode-pool.ts); `threadId` names that thread.
 */
export async function decodeBmp(
  data: Uint8Array,
  pool: BmpDecodePool = bmpDecodePool(),
): Promise<{ pixels: Buffer; width: number; height: number; threadId: number }> {
  const layout = bmpLayout(data);
  const { width, height } = layout;
  let decoded: DecodedBmp;
  try {
    decoded = await pool.decode({ bytes: bmpForDecoder(data, layout), width, height });
  } catch (error) {
    if (error instanceof BmpDecodeError) throw undecodable('the BMP file could not be decoded');
    throw error;
  }
  const { pixels, threadId } = decoded;
  return { pixels: Buffer.from(pixels.buffer, pixels.byteOffset, pixels.byteLength), width, height, threadId };
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
    const { pixels, width, height } = await decodeBmp(data);
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
