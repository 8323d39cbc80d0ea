import type { Middleware } from 'koa';
import { z } from 'zod';
import { randomName, removeStorageFile, writeStorageFile } from '../../shared/media/storage.ts';
import { activityJson, findActivity, type PlaceActivityRow, type Viewer } from '../../shared/places/activities.ts';
import { activityImagePath, setActivityImage } from '../../shared/places/images.ts';
import type { AppContext } from '../context.ts';
import { hasRole } from '../http/auth.ts';
import { notFound } from '../http/errors.ts';
import { bodyInputs, multipartInput } from '../http/inputs.ts';
import { decodeUploadedImage } from '../http/multipart-file.ts';
import { addOperation } from '../http/operation.ts';
import { ApiRouter } from '../http/route.ts';
import type { ServiceModule } from '../service-module.ts';
import { mediaRouter } from './media.ts';

const UPLOAD_PATH = '/places/:place_id/activities/:activity_id/images';
const UPLOAD_SUMMARY = 'Upload the picture of an activity';

/** Field names the picture may be sent in (`file` is the documented one, `image` an alias). */
export const PICTURE_FIELDS = ['file', 'image'] as const;

const params = z.object({
  place_id: z.string().meta({ description: 'uuid of the place' }),
  activity_id: z.string().meta({ description: 'sport id of the activity at this place' }),
});

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

declare module 'koa' {
  interface DefaultState {
    activity?: PlaceActivityRow;
    viewer?: Viewer;
  }
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

export function picturesRouter(app: AppContext): ApiRouter {
  const { config } = app;
  const router = new ApiRouter({
    prefix: '/v1',
    errorFormat: 'problem',
    registry: app.registry,
    bodyLimitBytes: config.bodyLimitBytes,
    tag: 'places',
  });
  addOperation(router, app, {
    method: 'post',
    path: UPLOAD_PATH,
    params,
    access: 'bearer',
    middleware: [loadActivity(app)],
    tag: 'places',
    notFound: 'Unknown place or activity',
    status: 201,
    contentType: 'application/json',
    success: { 201: { description: 'The activity, with image.url', schema: activitySchema } },
    write: (_ctx, body) => body,
    spec: {
      summary: UPLOAD_SUMMARY,
      description:
        'multipart/form-data with exactly one file part named `file` (`image` is accepted too). PNG, JPEG or BMP, ' +
        `recognised by content (the file name and declared type are ignored); at most ${config.UPLOAD_MAX_BYTES} bytes. ` +
        'The picture replaces the previous one; a thumbnail is rendered in the background (image.thumbnail_url is ' +
        'null until then). Answers the activity with image.url.',
      body: bodyInputs(
        'Send the picture as multipart/form-data with one file part named "file"',
        multipartInput({
          fileFields: PICTURE_FIELDS,
          limitBytes: config.UPLOAD_MAX_BYTES,
          fileDescription: 'the picture: PNG, JPEG or BMP (alias field: image)',
        }),
      ),
      errors: { 413: 'File over the size limit', 415: 'Not a PNG, JPEG or BMP image' },
      handler: async ({ body, ctx }) => {
        const activity = ctx.state.activity as PlaceActivityRow;
        const image = await decodeUploadedImage(body.file);
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
        // The replaced picture is no longer referenced: remove it (best effort, after the commit).
        for (const old of [replaced.previousImage, replaced.previousThumbnail]) {
          if (old && old !== imagePath) await removeStorageFile(config.STORAGE_DIR, old).catch(() => {});
        }
        const updated = await findActivity(app.db, activity.place_uuid, activity.sport_id, ctx.state.viewer);
        if (!updated) throw notFound('The activity was deleted during the upload');
        const json = activityJson(updated, config);
        if (json.image.url) ctx.set('Location', json.image.url);
        return json;
      },
    },
  });
  return router;
}

/** The places pictures: upload under /v1 and the /media file server. */
export const placesPicturesService: ServiceModule = {
  name: 'places',
  errorFormat: 'problem',
  prefixes: ['/v1/places', '/media'],
  routers: (app) => [picturesRouter(app).router, mediaRouter(app).router],
};
