import multer from '@koa/multer';
import type { Middleware } from 'koa';
import { z } from 'zod';
import { ImageInputError, normalizeImage } from '../../shared/media/image-input.ts';
import { randomName, removeStorageFile, writeStorageFile } from '../../shared/media/storage.ts';
import { type ActivityRow, activityJson, findActivity, type Viewer } from '../../shared/places/activities.ts';
import { activityImagePath, setActivityImage } from '../../shared/places/images.ts';
import type { AppContext } from '../context.ts';
import { hasRole, requireBearer } from '../http/auth.ts';
import { errorResponse } from '../http/error-schemas.ts';
import {
  badRequest,
  HttpError,
  notFound,
  payloadTooLarge,
  unprocessable,
  unsupportedMediaType,
} from '../http/errors.ts';
import { ApiRouter, type ResponseSpec } from '../http/route.ts';
import type { ServiceModule } from '../service-module.ts';
import { mediaRouter } from './media.ts';

const UPLOAD_PATH = '/places/:place_id/activities/:activity_id/images';
const UPLOAD_SUMMARY = 'Upload the picture of an activity';

/** Field names the picture may be sent in (`file` is the documented one, `image` an alias). */
export const PICTURE_FIELDS = ['file', 'image'] as const;

/** Room for the multipart framing around the file when checking Content-Length up front. */
const MULTIPART_OVERHEAD_BYTES = 64 * 1024;

const params = z.object({
  place_id: z.string().meta({ description: 'uuid of the place' }),
  activity_id: z.string().meta({ description: 'sport id of the activity at this place' }),
});

/** Documents the multipart body; the file part itself is checked by pictureFile (multer keeps it out of the body). */
const multipartBody = z
  .object({
    file: z.string().meta({ format: 'binary', description: 'the picture: PNG, JPEG or BMP (alias field: image)' }),
  })
  .partial()
  .loose();

const activitySchema = z
  .object({
    sport_id: z.number().int(),
    tags: z.array(z.string()),
    photo_reference: z.string().nullable(),
    user: z.object({}).loose().nullable(),
    attributes: z.record(z.string(), z.union([z.number(), z.string()])),
    image: z.object({ url: z.string(), thumbnail_url: z.string().nullable() }),
  })
  .meta({ id: 'ActivityWithImage' });

/** What multer's memory storage gives for each file part (the fields we use). */
interface UploadedFile {
  fieldname: string;
  size: number;
  buffer: Buffer;
}

declare module 'koa' {
  interface DefaultState {
    activity?: ActivityRow;
    viewer?: Viewer;
  }
}

function mib(bytes: number): string {
  return `${(bytes / (1024 * 1024)).toFixed(1)} MB`;
}

/** 404 before any upload byte is read when the place or its activity does not exist (or is not visible). */
function loadActivity(app: AppContext): Middleware {
  return async (ctx, next) => {
    const principal = ctx.state.principal;
    const viewer: Viewer | undefined = principal && {
      accountId: principal.accountId,
      staff: hasRole(principal, 'staff'),
    };
    const placeId = String(ctx.params.place_id ?? '');
    const sportId = /^\d{1,9}$/.test(String(ctx.params.activity_id)) ? Number(ctx.params.activity_id) : Number.NaN;
    const activity = Number.isNaN(sportId) ? undefined : await findActivity(app.db, placeId, sportId, viewer);
    if (!activity) throw notFound(`No activity with sport id ${ctx.params.activity_id} at place ${placeId}`);
    ctx.state.activity = activity;
    ctx.state.viewer = viewer;
    await next();
  };
}

/**
 * Reads exactly one file part into memory, never more than UPLOAD_MAX_BYTES of it: a declared
 * Content-Length over the limit is refused before reading, and multer stops buffering at the
 * limit (the rest is drained, not stored).
 */
function receiveFile(maxBytes: number): Middleware {
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
      throw payloadTooLarge(`The file is larger than the limit of ${maxBytes} bytes (${mib(maxBytes)})`);
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
      return payloadTooLarge(`The file is larger than the limit of ${maxBytes} bytes (${mib(maxBytes)})`);
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

/** The one picture of the request, or a 422 saying what is wrong with the parts sent. */
function pictureFile(files: unknown): UploadedFile {
  const list = (Array.isArray(files) ? files : []) as UploadedFile[];
  const file = list[0];
  if (!file)
    throw unprocessable([{ path: 'body.file', message: 'a file part named "file" is required' }], 'No file was sent');
  if (!(PICTURE_FIELDS as readonly string[]).includes(file.fieldname))
    throw unprocessable([
      { path: `body.${file.fieldname}`, message: 'unexpected file field; send the picture in the field "file"' },
    ]);
  if (file.size === 0) throw unprocessable([{ path: 'body.file', message: 'the file is empty' }]);
  return file;
}

export function picturesRouter(app: AppContext): ApiRouter {
  const { config } = app;
  const description =
    'multipart/form-data with exactly one file part named `file` (`image` is accepted too). PNG, JPEG or BMP, ' +
    `recognised by content (the file name and declared type are ignored); at most ${config.UPLOAD_MAX_BYTES} bytes. ` +
    'The picture replaces the previous one; a thumbnail is rendered in the background (image.thumbnail_url is ' +
    'null until then). Answers the activity with image.url.';
  const responses: Record<number, ResponseSpec> = {
    201: { description: 'The activity, with image.url', schema: activitySchema },
    401: errorResponse('problem', 'No or invalid access token'),
    404: errorResponse('problem', 'Unknown place or activity'),
    413: errorResponse('problem', 'File over the size limit'),
    415: errorResponse('problem', 'Not a PNG, JPEG or BMP image'),
    422: errorResponse('problem', 'No file, empty file, several files'),
  };
  const router = new ApiRouter({ prefix: '/v1', errorFormat: 'problem', registry: app.registry, tag: 'places' });
  router.add({
    method: 'post',
    path: UPLOAD_PATH,
    summary: UPLOAD_SUMMARY,
    description,
    security: ['bearer'],
    params,
    middleware: [requireBearer(app.verifier), loadActivity(app), receiveFile(config.UPLOAD_MAX_BYTES)],
    responses,
    handler: async (ctx) => {
      const activity = ctx.state.activity as ActivityRow;
      const file = pictureFile((ctx.request as { files?: unknown }).files);
      let image: Awaited<ReturnType<typeof normalizeImage>>;
      try {
        image = await normalizeImage(file.buffer);
      } catch (error) {
        if (!(error instanceof ImageInputError)) throw error;
        if (error.kind === 'unsupported-type')
          throw unsupportedMediaType(`Unsupported image type: ${error.message}; send png, jpg or bmp`);
        throw unprocessable([{ path: `body.${file.fieldname}`, message: error.message }], 'The image is not usable');
      }
      const imagePath = activityImagePath(activity.place_uuid, activity.sport_id, randomName(), image.ext);
      await writeStorageFile(config.STORAGE_DIR, imagePath, image.data);
      let replaced: Awaited<ReturnType<typeof setActivityImage>>;
      try {
        replaced = await setActivityImage(app.db, activity.id, imagePath);
      } catch (error) {
        await removeStorageFile(config.STORAGE_DIR, imagePath).catch(() => {});
        throw error;
      }
      if (!replaced) {
        await removeStorageFile(config.STORAGE_DIR, imagePath).catch(() => {});
        throw notFound('The activity was deleted during the upload');
      }
      app.relay.kick();
      // The replaced picture is no longer referenced: remove it (best effort, after the commit).
      for (const old of [replaced.previousImage, replaced.previousThumbnail]) {
        if (old && old !== imagePath) await removeStorageFile(config.STORAGE_DIR, old).catch(() => {});
      }
      const updated = await findActivity(app.db, activity.place_uuid, activity.sport_id, ctx.state.viewer);
      if (!updated) throw notFound('The activity was deleted during the upload');
      const body = activityJson(updated, config);
      ctx.status = 201;
      if (body.image.url) ctx.set('Location', body.image.url);
      ctx.body = body;
    },
  });
  // ApiRouter documents JSON bodies only (and answers 415 to others): declare this operation's
  // multipart body here, replacing the operation it registered.
  app.registry.add(`/v1${UPLOAD_PATH}`, 'post', {
    summary: UPLOAD_SUMMARY,
    description,
    tags: ['places'],
    security: [{ bearer: [] }],
    requestParams: { path: params },
    requestBody: { required: true, content: { 'multipart/form-data': { schema: multipartBody } } },
    responses: Object.fromEntries(
      Object.entries(responses).map(([status, r]) => [
        status,
        { description: r.description, content: { [r.contentType ?? 'application/json']: { schema: r.schema } } },
      ]),
    ),
  });
  return router;
}

/** The places pictures: upload under /v1 and the /media file server. */
export const placesPicturesService: ServiceModule = {
  name: 'places',
  errorFormat: 'problem',
  prefixes: ['/v1/places', '/media'],
  routers: (app) => [picturesRouter(app).router, mediaRouter(app.config)],
};
