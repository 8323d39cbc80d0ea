import multer from '@koa/multer';
import type { Context, Middleware } from 'koa';
import { ImageInputError, type NormalizedImage, normalizeImage } from '../../shared/media/image-input.ts';
import { badRequest, HttpError, payloadTooLarge, unprocessable, unsupportedMediaType } from './errors.ts';

/**
 * Picture uploads as multipart/form-data with one file part, shared by every service that takes
 * one (places activity pictures, tracking /v2/upload): reading the part within the size limit,
 * the checks on what was sent, the decoding of the image, and the OpenAPI entry.
 */

/** Room for the multipart framing around the file when checking Content-Length up front. */
const MULTIPART_OVERHEAD_BYTES = 64 * 1024;

/** What multer's memory storage gives for each file part (the fields we use). */
export interface UploadedFile {
  fieldname: string;
  /** The part's declared type (only a hint: readers decide by the bytes). */
  mimetype: string;
  size: number;
  buffer: Buffer;
}

function mib(bytes: number): string {
  return `${(bytes / (1024 * 1024)).toFixed(1)} MB`;
}

const tooLarge = (maxBytes: number) =>
  payloadTooLarge(`The file is larger than the limit of ${maxBytes} bytes (${mib(maxBytes)})`);

/**
 * Reads exactly one file part into memory, never more than `maxBytes` of it: a declared
 * Content-Length over the limit is refused before reading, and multer stops buffering at the
 * limit (the rest is drained, not stored).
 */
export function receiveFile(maxBytes: number): Middleware {
  const upload = multer({
    storage: multer.memoryStorage(),
    limits: { fileSize: maxBytes, files: 1, fields: 20, fieldSize: 16 * 1024, parts: 21, headerPairs: 100 },
  }).any();
  return async (ctx, next) => {
    if (!ctx.is('multipart/form-data'))
      throw unsupportedMediaType(`Send the picture as multipart/form-data with one file part named "file"`);
    const declared = Number(ctx.get('content-length'));
    if (Number.isFinite(declared) && declared > maxBytes + MULTIPART_OVERHEAD_BYTES) {
      ctx.set('Connection', 'close'); // do not read (or drain) the rest of a huge body
      throw tooLarge(maxBytes);
    }
    try {
      await upload(ctx, async () => {});
    } catch (error) {
      throw multipartError(error, maxBytes);
    }
    await next();
  };
}

function multipartError(error: unknown, maxBytes: number): HttpError {
  if (error instanceof HttpError) return error;
  const e = error as { code?: string; field?: string; message?: string };
  switch (e.code) {
    case 'LIMIT_FILE_SIZE':
      return tooLarge(maxBytes);
    case 'LIMIT_FILE_COUNT':
      return unprocessable([{ path: 'body.file', message: 'exactly one file is allowed per request' }]);
    case 'LIMIT_FIELD_VALUE':
    case 'LIMIT_FIELD_KEY':
    case 'LIMIT_FIELD_COUNT':
    case 'LIMIT_PART_COUNT':
      return payloadTooLarge('The multipart body has too many or too large text fields');
    default:
      return badRequest(`The multipart body could not be read${e.message ? ` (${e.message})` : ''}`);
  }
}

/**
 * The one file of the request (after receiveFile), or an error saying what is wrong with the
 * parts sent: none, in a field other than `fields`, or empty. Those answer `missingStatus`
 * (422 by default; the tracking service's reference answers 400 "Missing file").
 */
export function uploadedFile(
  ctx: Context,
  options: { fields: readonly string[]; missingStatus?: 400 | 422 },
): UploadedFile {
  const files = (ctx.request as { files?: unknown }).files;
  const file = (Array.isArray(files) ? files : [])[0] as UploadedFile | undefined;
  const missing = (path: string, message: string, detail?: string) =>
    options.missingStatus === 400
      ? badRequest(detail ?? 'Missing file', [{ path, message }])
      : unprocessable([{ path, message }], detail);
  if (!file) throw missing('body.file', 'a file part named "file" is required', 'No file was sent');
  if (!options.fields.includes(file.fieldname))
    throw missing(`body.${file.fieldname}`, 'unexpected file field; send the picture in the field "file"');
  if (file.size === 0) throw missing('body.file', 'the file is empty');
  return file;
}

/**
 * The picture re-encoded for storage (shared/media/image-input.ts): not an accepted type by its
 * bytes is a 415; empty, truncated, corrupt or over the pixel limit is a 422 naming the field.
 */
export async function decodeUploadedImage(file: UploadedFile): Promise<NormalizedImage> {
  try {
    return await normalizeImage(file.buffer);
  } catch (error) {
    if (!(error instanceof ImageInputError)) throw error;
    if (error.kind === 'unsupported-type')
      throw unsupportedMediaType(`Unsupported image type: ${error.message}; send png, jpg or bmp`);
    throw unprocessable([{ path: `body.${file.fieldname}`, message: error.message }], 'The image is not usable');
  }
}
