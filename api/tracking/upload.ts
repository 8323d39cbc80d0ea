import { z } from 'zod';
import { MAX_INPUT_PIXELS } from '../../shared/media/image-input.ts';
import { storeUpload, trackingMediaStoragePath, trackingMediaUrl } from '../../shared/tracking/activities/uploads.ts';
import type { AppContext } from '../context.ts';
import { errorResponse } from '../http/error-schemas.ts';
import { bodyInputs, multipartInput } from '../http/inputs.ts';
import { decodeUploadedImage } from '../http/multipart-file.ts';
import { addOperation } from '../http/operation.ts';
import type { ApiRouter } from '../http/route.ts';
import { sendStorageFile } from '../http/storage-files.ts';
import { trackingOperation } from './tracking-resource.ts';

const uploadedSchema = z
  .object({ url: z.string().meta({ format: 'uri', example: 'https://sports.example/v2/media/uploads/Ab/AbCd.jpg' }) })
  .meta({ id: 'TrackingUpload' });

/**
 * POST /v2/upload (a photo, answered with its URL, for an activity's `images` or `thumbnail`) and
 * GET /v2/media/<path>, which serves the stored photos without credentials.
 */
export function uploadRoute(router: ApiRouter, app: AppContext): void {
  const { config, db } = app;
  trackingOperation(router, app, {
    method: 'post',
    path: '/upload',
    status: 200,
    contentType: 'application/ld+json',
    success: { 200: { description: 'The URL of the stored photo', schema: uploadedSchema } },
    write: (_ctx, uploaded) => uploaded,
    spec: {
      summary: 'Upload a photo',
      idempotent: true,
      description:
        'multipart/form-data with exactly one file part named `file`: a PNG, JPEG or BMP photo, recognised by its ' +
        `bytes (the file name and declared type are ignored), at most ${config.UPLOAD_MAX_BYTES} bytes and ${MAX_INPUT_PIXELS} pixels. ` +
        'The photo is re-encoded (metadata such as GPS position removed, EXIF orientation applied; BMP becomes PNG) and ' +
        'answered as `{url}`, an absolute URL anyone can fetch. Missing or empty `file`: 400; several files: 422; ' +
        'not an image: 415; corrupt or too many pixels: 422; too large: 413.',
      body: bodyInputs(
        'Send the picture as multipart/form-data with one file part named "file"',
        multipartInput({
          fileFields: ['file'],
          missingStatus: 400,
          limitBytes: config.UPLOAD_MAX_BYTES,
          fileDescription: 'the photo: PNG, JPEG or BMP, under 3 MB',
        }),
      ),
      errors: {
        400: 'Missing or empty file, unreadable multipart body',
        413: 'File over the size limit',
        415: 'Not multipart/form-data, or not a PNG, JPEG or BMP image',
      },
      handler: async ({ body, caller: user }) => {
        const image = await decodeUploadedImage(body.file);
        const stored = await storeUpload(db, config.STORAGE_DIR, user.id, image);
        return { url: trackingMediaUrl(config.PUBLIC_URL, stored.path) };
      },
    },
  });
  addOperation(router, app, {
    method: 'get',
    path: '/media/*path',
    params: z.object({ path: z.string().meta({ example: 'uploads/Ab/AbCd.jpg' }) }),
    access: 'public',
    tag: 'tracking',
    success: { 200: { description: 'The image', alternates: { 'image/png': undefined, 'image/jpeg': undefined } } },
    writesResponse: true,
    spec: {
      summary: 'A stored photo',
      description:
        'The files /v2/upload answered with (no credentials: their names are random). Cacheable for a year; ETag and Last-Modified answer conditional requests with 304.',
      responses: { 404: errorResponse('hydra', 'No such file') },
      handler: ({ ctx, params }) => sendStorageFile(ctx, config.STORAGE_DIR, trackingMediaStoragePath(params.path)),
    },
  });
}
