import type { Context } from 'koa';
import type { z } from 'zod';
import { ACTIVITY_LIMITS, summariesFromJson } from '../../shared/tracking/activities/content.ts';
import { ACTIVITY_ORDERS, listActivities } from '../../shared/tracking/activities/list.ts';
import {
  type ActivityInput,
  createActivity,
  deleteActivity,
  findActivityContent,
  updateActivity,
} from '../../shared/tracking/activities/store.ts';
import type { ActivityBody } from '../../shared/tracking/body/activity-body.ts';
import { parseActivityBody } from '../../shared/tracking/body/parse.ts';
import { iri, TRACKING_PREFIX } from '../../shared/tracking/iri.ts';
import type { AppContext } from '../context.ts';
import type { RouteBodyLimit } from '../http/body.ts';
import { Resource } from '../http/resource.ts';
import type { ApiRouter } from '../http/route.ts';
import {
  activityFileRepresentations,
  activityFiles,
  activityImportPool,
  type Exported,
  poolFailure,
} from './activity-files.ts';
import {
  ACTIVITIES_PATH,
  activityDocument,
  activitySchema,
  activityView,
  createBody,
  idParams,
  listQuery,
  updateBody,
} from './activity-schemas.ts';
import { trackingCallerOf } from './identity.ts';
import { dateFilterOf, listFilterOf, orderOf } from './schemas.ts';

/**
 * /v2/activities (docs/tracking-activities.md): the caller's activities with their summaries,
 * datastream and GPS track. Its shapes are activity-schemas.ts; rules and storage live in
 * shared/tracking/activities/.
 */

/**
 * Bodies up to this size (a 1-hour activity at 1 Hz is about 0.6 MB) are parsed on the event loop,
 * in about 5 ms at most; larger ones, up to ACTIVITY_BODY_LIMIT (60 ms for 24 hours, up to half a
 * second if it leaves the fast path of shared/tracking/body/scan.ts), in an import thread.
 * Measured on 2 cores (bench/README.md, tracking-ingest): the thread's round trip adds about 3 ms
 * of CPU per 1-hour activity, for the same throughput.
 */
const INLINE_BODY_BYTES = 1024 * 1024;

/** The streams of the create being handled, parsed with its body (the body itself holds the rest). */
const parsedStreams = new WeakMap<Context, Omit<ActivityBody, 'body'>>();

/**
 * POST /v2/activities takes ACTIVITY_BODY_LIMIT instead of BODY_LIMIT (a 24-hour stream is about
 * 10 MB), and reads its JSON itself (shared/tracking/body/parse.ts; over INLINE_BODY_BYTES in an
 * import thread): the body the route validates, and the input guard walks, is the rest of it, its
 * streams already columns.
 */
export function activityBodyLimits(app: AppContext): RouteBodyLimit[] {
  return [
    {
      method: 'POST',
      path: `${TRACKING_PREFIX}${ACTIVITIES_PATH}`,
      limitBytes: app.config.activityBodyLimitBytes,
      read: async (bytes, ctx) => {
        try {
          const { body, ...streams } =
            bytes.length <= INLINE_BODY_BYTES
              ? parseActivityBody(bytes)
              : await activityImportPool(app).parseBody(bytes);
          parsedStreams.set(ctx, streams);
          return body;
        } catch (error) {
          throw poolFailure(error);
        }
      },
    },
  ];
}

/** A JSON create body as the store takes it, with the streams its reader made columns. */
function activityInputFromJson(
  body: z.output<typeof createBody>,
  { datastream, track }: Omit<ActivityBody, 'body'>,
): ActivityInput {
  const summaries = summariesFromJson(body.dataSummaries as Record<string, unknown>);
  return {
    userId: body.user as string,
    userDeviceId: body.userDevice ?? null,
    connectorId: body.connector ?? null,
    manual: body.manual,
    comment: body.comment ?? null,
    userSession: body.userSession ?? null,
    images: body.images ?? [],
    tags: body.tags ?? null,
    location: body.location ?? null,
    content: {
      sportId: body.sport as number,
      name: body.name ?? null,
      startdate: body.startdate as Date,
      duration: body.duration as number,
      summaries,
      datastream,
      track,
    },
  };
}

/** /v2/activities: the caller's activities (create, list, read with streams, update, delete). */
export function activitiesResource(router: ApiRouter, app: AppContext): void {
  const { db } = app;
  const detail = (jsonLd: boolean) => (found: Exported) => activityDocument(found, jsonLd);
  // Files (docs/tracking-files.md): declared first, so their routes are matched before the JSON ones.
  const files = activityFiles(router, app, activityView);
  new Resource(router, app, {
    path: ACTIVITIES_PATH,
    itemPath: '/:id',
    itemParams: idParams,
    format: 'hydra',
    item: activitySchema,
    hydra: activityView,
    access: { read: 'bearer+key', write: 'bearer+key' },
    caller: trackingCallerOf(app),
    notFound: 'No such activity (or not yours)',
    tag: 'tracking',
  })
    .list({
      summary: "The caller's activities (without their streams)",
      description:
        "Only the caller's activities. `user` / `user[]` and `sport` / `sport[]` take IRIs or bare ids; `startdate[...]` and `createdAt[...]` take `after`, `before` (inclusive), `strictly_after`, `strictly_before`; `trackFlag=true|false`; `order[startdate|createdAt|duration|id]=asc|desc` (default: startdate descending; ties by id). Paging: `page`, `limit` (default 30, at most 100).",
      query: listQuery,
      handler: async ({ query, ctx, caller: user }) => {
        const found = await listActivities(
          db,
          user.id,
          {
            users: listFilterOf<string>(query, 'user'),
            sports: listFilterOf<number>(query, 'sport'),
            startdate: dateFilterOf(query, 'startdate'),
            createdAt: dateFilterOf(query, 'createdAt'),
            trackFlag: query.trackFlag,
            order: orderOf(query, ctx.querystring, ACTIVITY_ORDERS),
          },
          query,
        );
        return { ...found, page: query.page, limit: query.limit };
      },
    })
    .create({
      summary: 'Store an activity with its summaries, datastream and GPS track',
      description: `The body is JSON (application/ld+json or application/json), at most ACTIVITY_BODY_LIMIT (default 32 MB; 413 above). \`user\` must be the caller's IRI; \`userDevice\` one of the caller's devices, and then \`connector\` is required; \`sport\`, \`connector\` and every datatype must exist. Elapsed seconds are whole, 0 to ${ACTIVITY_LIMITS.maxSeconds}. The answer is the activity without its streams (GET it for them).`,
      body: createBody,
      errors: { 413: 'The body is larger than ACTIVITY_BODY_LIMIT' },
      handler: async ({ body, ctx, caller }) => {
        const streams = parsedStreams.get(ctx);
        if (!streams) throw new Error('POST /v2/activities: the body was not read by its route reader');
        const input = activityInputFromJson(body, streams);
        return createActivity(db, caller.id, input);
      },
      location: (a) => iri('activities', a.id),
    })
    .get({
      summary: 'One activity of the caller, with its datastream and locations',
      representations: {
        'application/ld+json': detail(true),
        'application/json': detail(false),
        ...activityFileRepresentations,
      },
      handler: async ({ params, caller }) => findActivityContent(db, caller.id, params.id),
    })
    .update({
      summary: 'Change the name, comment, tags, images, thumbnail or sport of an activity of the caller',
      description:
        'The fields sent replace their values; the others stay. Every other Activity field is fixed at the creation: sent back, it is ignored. A change of sport must name an existing sport.',
      body: updateBody,
      handler: async ({ params, body, caller: user }) => {
        const row = await updateActivity(db, user.id, params.id, {
          ...(body.name !== undefined ? { name: body.name } : {}),
          ...(body.comment !== undefined ? { comment: body.comment } : {}),
          ...(body.tags !== undefined ? { tags: body.tags } : {}),
          ...(body.images !== undefined ? { images: body.images } : {}),
          ...(body.thumbnail !== undefined ? { thumbnail: body.thumbnail } : {}),
          ...(body.sport !== undefined ? { sportId: body.sport } : {}),
        });
        return row;
      },
    })
    .remove({
      summary: 'Delete an activity of the caller, with its streams and records',
      handler: async ({ params, caller }) => {
        await deleteActivity(db, caller.id, params.id);
      },
    });
  files.document();
}
