import { Readable } from 'node:stream';
import type { Context } from 'koa';
import { z } from 'zod';
import { type ActivityBody, parseActivityBody } from '../../shared/tracking/activity-body.ts';
import { ACTIVITY_LIMITS, summariesFromJson } from '../../shared/tracking/activity-content.ts';
import type { ActivityContent } from '../../shared/tracking/activity-data.ts';
import { activityFields } from '../../shared/tracking/activity-fields.ts';
import { jsonWithStreamsChunks } from '../../shared/tracking/activity-json.ts';
import { ACTIVITY_ORDERS, listActivities } from '../../shared/tracking/activity-list.ts';
import {
  type ActivityInput,
  type ActivityRow,
  createActivity,
  deleteActivity,
  findActivityContent,
  updateActivity,
} from '../../shared/tracking/activity-store.ts';
import { iri, TRACKING_PREFIX } from '../../shared/tracking/iri.ts';
import type { AppContext } from '../context.ts';
import type { RouteBodyLimit } from '../http/body.ts';
import type { HydraView } from '../http/formats/format.ts';
import { contextIri, itemIri } from '../http/formats/hydra.ts';
import { Resource } from '../http/resource.ts';
import type { ApiRouter } from '../http/route.ts';
import {
  activityFileRepresentations,
  activityFiles,
  activityImportPool,
  type Exported,
  poolFailure,
} from './activity-files.ts';
import { trackingCallerOf } from './identity.ts';
import {
  dateFilterOf,
  dateFilterShape,
  dateTime,
  dateTimeOut,
  integerIriOf,
  integerRefOf,
  iriOf,
  listFilterOf,
  listFilterShape,
  orderOf,
  orderShape,
  pagingShape,
  refOf,
  writeBody,
} from './schemas.ts';

/**
 * /v2/activities (docs/tracking-activities.md): the caller's activities with their summaries,
 * datastream and GPS track. Rules and storage live in shared/tracking/activity-*.ts.
 */

const PATH = '/activities';

/**
 * Bodies up to this size (a 1-hour activity at 1 Hz is about 0.6 MB) are parsed on the event loop,
 * in about 5 ms at most; larger ones, up to ACTIVITY_BODY_LIMIT (60 ms for 24 hours, up to half a
 * second if it leaves the fast path of shared/tracking/activity-body-scan.ts), in an import thread.
 * Measured on 2 cores (bench/README.md, tracking-ingest): the thread's round trip adds about 3 ms
 * of CPU per 1-hour activity, for the same throughput.
 */
const INLINE_BODY_BYTES = 1024 * 1024;

/** The streams of the create being handled, parsed with its body (the body itself holds the rest). */
const parsedStreams = new WeakMap<Context, Omit<ActivityBody, 'body'>>();

/**
 * POST /v2/activities takes ACTIVITY_BODY_LIMIT instead of BODY_LIMIT (a 24-hour stream is about
 * 10 MB), and reads its JSON itself (shared/tracking/activity-body.ts; over INLINE_BODY_BYTES in an
 * import thread): the body the route validates, and the input guard walks, is the rest of it, its
 * streams already columns.
 */
export function activityBodyLimits(app: AppContext): RouteBodyLimit[] {
  return [
    {
      method: 'POST',
      path: `${TRACKING_PREFIX}${PATH}`,
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

const iriString = (example: string) => z.string().meta({ format: 'iri-reference', example });

const streamsDoc = {
  datastream: z
    .record(z.string(), z.record(z.string(), z.number()))
    .optional()
    .meta({
      description:
        'Only on GET of one activity. Elapsed second (string key) to `{datatype id: number}`; a sample without values is `{}`.',
      example: { '0': { '1': 92, '5': 0 }, '1': { '1': 95, '5': 3.1 } },
    }),
  locations: z
    .record(z.string(), z.object({ latitude: z.number(), longitude: z.number(), elevation: z.number().nullable() }))
    .optional()
    .meta({
      description:
        'Only on GET of one activity. Elapsed second (string key) to a GPS point; `{}` for a stationary activity.',
      example: { '0': { latitude: 50.6292, longitude: 3.0573, elevation: 21.5 } },
    }),
};

/** An Activity, the spec's fields in the spec's order. */
const activitySchema = z
  .object({
    id: z.string(),
    name: z.string().nullable(),
    user: iriString('/v2/users/a1b2c3'),
    sport: iriString('/v2/sports/121'),
    userDevice: iriString('/v2/user_devices/ab12').nullable(),
    startdate: dateTimeOut,
    duration: z.number().int().meta({ description: 'total seconds' }),
    latitude: z.number().nullable().meta({ description: 'of the first GPS point, null without a track' }),
    longitude: z.number().nullable(),
    elevation: z.number().nullable(),
    manual: z.boolean().meta({ description: 'true when no device is declared' }),
    comment: z.string().nullable(),
    connector: iriString('/v2/connectors/1').nullable(),
    userSession: z.string().nullable(),
    correctedElevation: z.boolean(),
    images: z.array(z.string()),
    thumbnail: z.string().nullable().meta({ description: 'set by the thumbnail job or a PUT' }),
    dataSummaries: z.record(z.string(), z.number()).meta({ example: { '5': 10230, '24': 3600 } }),
    tags: z.array(z.string()).nullable(),
    trackFlag: z.boolean(),
    datastreamFlag: z.boolean(),
    globalChallenge: z.string().nullable(),
    availableDatatypes: z.array(z.number().int()),
    createdAt: dateTimeOut,
    updatedAt: dateTimeOut,
    ...streamsDoc,
  })
  .meta({ id: 'Activity' });

export const activityView: HydraView<ActivityRow, typeof activitySchema> = {
  type: 'Activity',
  path: `${TRACKING_PREFIX}${PATH}`,
  id: (a) => a.id,
  fields: activityFields,
};

/**
 * One activity with its `datastream` and `locations`: JSON-LD (`@context`, `@id`, `@type` first)
 * or API Platform's plain JSON, as a stream of chunks written from the columns while it is sent
 * (a 24-hour activity is about 13 MB: other requests run between its chunks).
 */
export function activityDocument(found: { row: ActivityRow; content: ActivityContent }, jsonLd: boolean): Readable {
  const view = activityView;
  const head = jsonLd
    ? {
        '@context': contextIri(view),
        '@id': itemIri(view, found.row),
        '@type': activityView.type,
        ...activityFields(found.row),
      }
    : activityFields(found.row);
  return Readable.from(jsonWithStreamsChunks(head, found.content), { objectMode: false });
}

const L = ACTIVITY_LIMITS;
const httpUrl = z
  .string()
  .max(L.urlLength)
  .refine((v) => {
    if (!/^https?:\/\//i.test(v)) return false;
    try {
      new URL(v);
      return true;
    } catch {
      return false;
    }
  }, 'must be an http(s) URL');
/**
 * A stream member (`datastream`, `locations`): an object whose samples shared/tracking/activity-content.ts
 * checks, naming each bad one; here only its shape, without copying its (up to 604,801) members.
 */
const streamObject = (description: string, example: unknown, sample: Record<string, unknown>) =>
  z
    .custom<Record<string, unknown>>(
      (v) => typeof v === 'object' && v !== null && !Array.isArray(v),
      'must be an object keyed by elapsed seconds',
    )
    // On the custom schema itself: what it documents in /openapi.json (zod cannot describe it).
    .meta({ description, example, override: { type: 'object', additionalProperties: sample } })
    .nullable()
    .optional();
const reference = z
  .union([z.string().max(255), z.number()])
  .nullable()
  .optional();

/** The spec's `location` object of a create: accepted, checked and stored as sent (no field reads it back). */
const locationObject = z
  .strictObject({
    elapsed_time: z.number().int().min(0).max(L.maxSeconds).optional(),
    latitude: z.number().min(-90).max(90).nullable().optional(),
    longitude: z.number().min(-180).max(180).nullable().optional(),
    elevation: z.number().nullable().optional(),
    device: z
      .strictObject({ firmware: reference, model: reference, sn: z.string().max(128).nullable().optional() })
      .nullable()
      .optional(),
    manual: z.boolean().optional(),
  })
  .nullable()
  .optional();

const name = z.string().max(L.nameLength).nullable();
const comment = z.string().max(L.commentLength).nullable();
const tags = z.array(z.string().min(1).max(L.tagLength)).max(L.maxTags).nullable();
const images = z.array(httpUrl).max(L.maxImages);

const createFields = {
  name: name.optional(),
  user: iriOf('users').meta({ description: "the caller's own user IRI" }),
  sport: integerIriOf('sports'),
  userDevice: iriOf('user_devices')
    .nullable()
    .optional()
    .meta({ description: 'one of your devices; required unless the activity is manual' }),
  connector: integerIriOf('connectors').nullable().optional().meta({ description: 'required with a userDevice' }),
  startdate: dateTime,
  duration: z
    .number()
    .int()
    .min(0)
    .max(L.maxSeconds)
    .meta({ description: `total seconds, 0 to ${L.maxSeconds}` }),
  manual: z.boolean().optional().meta({ description: 'optional; must agree with userDevice (manual ⇔ no device)' }),
  comment: comment.optional(),
  userSession: z.string().min(1).max(L.userSessionLength).nullable().optional(),
  images: images.optional(),
  tags: tags.optional(),
  location: locationObject,
  dataSummaries: z
    .record(z.string(), z.unknown())
    .meta({ description: 'datatype id (string key) to a number', example: { '5': 10230, '24': 3600 } }),
  datastream: streamObject(
    `elapsed second (string key, 0 to ${L.maxSeconds}) to {datatype id: number}`,
    { '0': { '1': 92 }, '1': { '1': 95, '5': 3.1 } },
    { type: 'object', additionalProperties: { type: 'number' } },
  ),
  locations: streamObject(
    `elapsed second (string key, 0 to ${L.maxSeconds}) to {latitude, longitude, elevation (number or null)}`,
    { '0': { latitude: 50.6292, longitude: 3.0573, elevation: 21.5 } },
    {
      type: 'object',
      required: ['latitude', 'longitude'],
      properties: {
        latitude: { type: 'number', minimum: -90, maximum: 90 },
        longitude: { type: 'number', minimum: -180, maximum: 180 },
        elevation: { type: ['number', 'null'] },
      },
      additionalProperties: false,
    },
  ),
};

/** Fields a client reads but never writes: sent back, they are ignored. */
const READ_ONLY = [
  'id',
  'latitude',
  'longitude',
  'elevation',
  'correctedElevation',
  'thumbnail',
  'trackFlag',
  'datastreamFlag',
  'globalChallenge',
  'availableDatatypes',
  'createdAt',
  'updatedAt',
];

const createBody = writeBody('Activity', createFields, READ_ONLY);

const updateFields = {
  name: name.optional(),
  sport: integerIriOf('sports').optional(),
  comment: comment.optional(),
  tags: tags.optional(),
  images: images.optional(),
  thumbnail: httpUrl.nullable().optional(),
};

/** Set at the creation, read-only afterwards: a PUT sending back what it read is not refused for them. */
const FIXED_AFTER_CREATION = Object.keys(createFields).filter((k) => !(k in updateFields));
const updateBody = writeBody('Activity', updateFields, [
  ...READ_ONLY.filter((k) => k !== 'thumbnail'),
  ...FIXED_AFTER_CREATION,
]);

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

const trackFlag = z
  .enum(['true', 'false', '1', '0'])
  .transform((v) => v === 'true' || v === '1')
  .optional();

const listQuery = z.object({
  ...listFilterShape('user', refOf('users')),
  ...listFilterShape('sport', integerRefOf('sports')),
  ...dateFilterShape('startdate'),
  ...dateFilterShape('createdAt'),
  trackFlag,
  ...orderShape(ACTIVITY_ORDERS),
  ...pagingShape,
});

const idParams = z.object({ id: z.string().regex(/^[A-Za-z0-9_-]{1,64}$/) });

/** /v2/activities: the caller's activities (create, list, read with streams, update, delete). */
export function activitiesResource(router: ApiRouter, app: AppContext): void {
  const { db } = app;
  const detail = (jsonLd: boolean) => (found: Exported) => activityDocument(found, jsonLd);
  // Files (docs/tracking-files.md): declared first, so their routes are matched before the JSON ones.
  const files = activityFiles(router, app, activityView);
  new Resource(router, app, {
    path: PATH,
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
      description: `The body is JSON (application/ld+json or application/json), at most ACTIVITY_BODY_LIMIT (default 32 MB; 413 above). \`user\` must be the caller's IRI; \`userDevice\` one of the caller's devices, and then \`connector\` is required; \`sport\`, \`connector\` and every datatype must exist. Elapsed seconds are whole, 0 to ${L.maxSeconds}. The answer is the activity without its streams (GET it for them).`,
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
