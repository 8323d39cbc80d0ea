import { z } from 'zod';
import { MAX_INPUT_PIXELS } from '../../shared/media/image-input.ts';
import { storeUpload, trackingMediaStoragePath, trackingMediaUrl } from '../../shared/tracking/activities/uploads.ts';
import type { AppContext } from '../context.ts';
import { accessMiddleware } from '../http/access.ts';
import { errorResponse } from '../http/error-schemas.ts';
import { decodeUploadedImage, documentMultipartUpload, receiveFile, uploadedFile } from '../http/multipart-file.ts';
import type { ApiRouter, ResponseSpec } from '../http/route.ts';
import { sendStorageFile } from '../http/storage-files.ts';
import { trackingCaller } from './identity.ts';

const SUMMARY = 'Upload a photo';

const uploadedSchema = z
  .object({ url: z.string().meta({ format: 'uri', example: 'https://sports.example/v2/media/uploads/Ab/AbCd.jpg' }) })
  .meta({ id: 'TrackingUpload' });

/**
 * POST /v2/upload (a photo, answered with its URL, for an activity's `images` or `thumbnail`) and
 * GET /v2/media/<path>, which serves the stored photos without credentials.
 */
export function uploadRoute(router: ApiRouter, app: AppContext): void {
  const { config, db } = app;
  const description =
    'multipart/form-data with exactly one file part named `file`: a PNG, JPEG or BMP photo, recognised by its ' +
    `bytes (the file name and declared type are ignored), at most ${config.UPLOAD_MAX_BYTES} bytes and ${MAX_INPUT_PIXELS} pixels. ` +
    'The photo is re-encoded (metadata such as GPS position removed, EXIF orientation applied; BMP becomes PNG) and ' +
    'answered as `{url}`, an absolute URL anyone can fetch. Missing or empty `file`: 400; several files: 422; ' +
    'not an image: 415; corrupt or too many pixels: 422; too large: 413.';
  const responses: Record<number, ResponseSpec> = {
    200: { description: 'The URL of the stored photo', schema: uploadedSchema, contentType: 'application/ld+json' },
    400: errorResponse('hydra', 'Missing or empty file, unreadable multipart body'),
    401: errorResponse('hydra', 'Missing or invalid x-api-key or token'),
    413: errorResponse('hydra', 'File over the size limit'),
    415: errorResponse('hydra', 'Not multipart/form-data, or not a PNG, JPEG or BMP image'),
    422: errorResponse('hydra', 'Several files, corrupt image, too many pixels'),
  };
  router.add({
    method: 'post',
    path: '/upload',
    summary: SUMMARY,
    description,
    security: ['bearer', 'apiKey'],
    // Credentials first: nothing of the body is read for an unknown caller.
    middleware: [...accessMiddleware(app, 'bearer+key'), receiveFile(config.UPLOAD_MAX_BYTES)],
    responses,
    handler: async (ctx) => {
      const user = await trackingCaller(app, ctx.state.principal);
      const image = await decodeUploadedImage(uploadedFile(ctx, { fields: ['file'], missingStatus: 400 }));
      const stored = await storeUpload(db, config.STORAGE_DIR, user.id, image);
      ctx.status = 200;
      ctx.type = 'application/ld+json';
      ctx.body = { url: trackingMediaUrl(config.PUBLIC_URL, stored.path) };
    },
  });
  documentMultipartUpload(app.registry, {
    path: '/v2/upload',
    method: 'post',
    summary: SUMMARY,
    description,
    tags: ['tracking'],
    security: ['bearer', 'apiKey'],
    fileDescription: 'the photo: PNG, JPEG or BMP, under 3 MB',
    responses,
  });

  router.router.get('/media/*path', (ctx) =>
    sendStorageFile(ctx, config.STORAGE_DIR, trackingMediaStoragePath(String(ctx.params.path ?? ''))),
  );
  app.registry.add('/v2/media/:path', 'get', {
    summary: 'A stored photo',
    description:
      'The files /v2/upload answered with (no credentials: their names are random). Cacheable for a year; ETag and Last-Modified answer conditional requests with 304.',
    tags: ['tracking'],
    requestParams: { path: z.object({ path: z.string().meta({ example: 'uploads/Ab/AbCd.jpg' }) }) },
    responses: {
      200: { description: 'The image', content: { 'image/png': {}, 'image/jpeg': {} } },
      404: {
        description: 'No such file',
        content: { 'application/ld+json': { schema: errorResponse('hydra', '').schema } },
      },
    },
  });
}
