import type { Readable } from 'node:stream';
import { z } from 'zod';
import type { ActivityRow } from '../../shared/db/schema/tracking.ts';
import { pacedStream } from '../../shared/runtime/paced-stream.ts';
import { ACTIVITY_LIMITS } from '../../shared/tracking/activities/content.ts';
import type { ActivityContent } from '../../shared/tracking/activities/data.ts';
import { DUPLICATE_POLICIES } from '../../shared/tracking/activities/duplicates.ts';
import { activityFields } from '../../shared/tracking/activities/fields.ts';
import { jsonWithStreamsChunks } from '../../shared/tracking/activities/json.ts';
import { ACTIVITY_ORDERS, type ActivityFilter } from '../../shared/tracking/activities/list.ts';
import { deviceReferenceId } from '../../shared/tracking/devices/reported.ts';
import { MAX_EQUIPMENTS_PER_ACTIVITY } from '../../shared/tracking/gear/activity-gear.ts';
import { TRACKING_PREFIX } from '../../shared/tracking/iri.ts';
import { MAX_MAP_HIDDEN_ENDS, VISIBILITIES } from '../../shared/tracking/sharing/visibility.ts';
import type { HydraView } from '../http/formats/format.ts';
import { contextIri, itemIri } from '../http/formats/hydra.ts';
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
 * The shapes of /v2/activities (docs/tracking-activities.md): the Activity as read (its schema, its
 * Hydra view and the document with its streams), the create and update bodies, the list query and
 * the item parameters. The resource itself, with its routes, is activities.ts.
 */
/** The collection's path below the tracking prefix. */
export const ACTIVITIES_PATH = '/activities';

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

/** Extensions: moving time and pauses, computed from the streams at every write (docs/tracking-activities.md). */
const movingDoc = {
  movingTime: z.number().int().nullable().meta({
    description:
      "seconds in motion under the sport's rule; `duration − movingTime` is the time of all pauses (v2.26's datatype 30, Active time)",
  }),
  pauses: z
    .array(z.object({ start: z.number().int(), duration: z.number().int() }))
    .nullable()
    .meta({
      description: 'the longest 100 pauses, in time order: elapsed second of the start, seconds',
      example: [{ start: 1260, duration: 45 }],
    }),
  movingSpeedAvg: z
    .number()
    .nullable()
    .meta({ description: 'm/h (as datatype 9, Speed avg) over the moving time; null without a distance' }),
  movingPace: z
    .number()
    .nullable()
    .meta({ description: 'seconds per km over the moving time; null without a distance' }),
};

/** An Activity, the spec's fields in the spec's order. */
export const activitySchema = z
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
    equipments: z.array(iriString('/v2/user_equipments/ab12')).meta({
      description: "the caller's gear the activity was done with (docs/tracking-gear-goals-challenges.md)",
    }),
    createdAt: dateTimeOut,
    updatedAt: dateTimeOut,
    ...movingDoc,
    visibility: z.enum(VISIBILITIES).meta({
      description:
        'extension: who sees the activity beside you: `private` (you alone), `followers` (the users you share with), `public` (any signed-in user) (docs/tracking-sharing-users.md)',
    }),
    mapVisibility: z.enum(VISIBILITIES).meta({
      description: 'extension: who sees its map (track, start point); never wider than `visibility`',
    }),
    mapHiddenEnds: z.number().int().meta({
      description: 'extension: metres of track hidden at each end from everyone but you',
      example: 500,
    }),
    ...streamsDoc,
  })
  .meta({ id: 'Activity' });

/** The visibility members of a create or a PUT (docs/tracking-sharing-users.md). */
const visibilityFields = {
  visibility: z
    .enum(VISIBILITIES)
    .optional()
    .meta({ description: '`private`, `followers` or `public`; left out at the creation: your `defaultVisibility`' }),
  mapVisibility: z
    .enum(VISIBILITIES)
    .optional()
    .meta({ description: 'who sees the map; left out at the creation: your `defaultMapVisibility`' }),
  mapHiddenEnds: z
    .number()
    .int()
    .min(0)
    .max(MAX_MAP_HIDDEN_ENDS)
    .optional()
    .meta({
      description: `metres of track hidden at each end, 0 to ${MAX_MAP_HIDDEN_ENDS}; left out at the creation: your \`defaultMapHiddenEnds\``,
    }),
};

export const activityView: HydraView<ActivityRow, typeof activitySchema> = {
  type: 'Activity',
  path: `${TRACKING_PREFIX}${ACTIVITIES_PATH}`,
  id: (a) => a.id,
  fields: activityFields,
};

/**
 * One activity with its `datastream` and `locations`: JSON-LD (`@context`, `@id`, `@type` first)
 * or API Platform's plain JSON, as a stream of chunks written from the columns while it is sent,
 * one chunk per turn of the event loop (an activity at the limits is megabytes of JSON: other
 * requests run between its chunks).
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
  return pacedStream(jsonWithStreamsChunks(head, found.content));
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
 * A stream member (`datastream`, `locations`): an object whose samples shared/tracking/activities/content.ts
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
/** A member of the device block: an IRI of `collection` or its integer id, checked but kept as sent. */
const deviceReference = (collection: 'device_models' | 'firmwares', example: string) =>
  z
    .union([z.string().max(255), z.number()])
    .refine(
      (value) => deviceReferenceId(value, collection) !== undefined,
      `must be the IRI or the integer id of a ${collection === 'firmwares' ? 'Firmware' : 'DeviceModel'}, such as ${example} or 1`,
    )
    .nullable()
    .optional()
    .meta({ description: `IRI (${example}) or integer id`, example });

/**
 * The spec's `location` object of a create, stored as sent. Its `device` block names the device
 * that recorded the activity: the caller's device of that model and serial, registered if new.
 */
const locationObject = z
  .strictObject({
    elapsed_time: z.number().int().min(0).max(L.maxSeconds).optional(),
    latitude: z.number().min(-90).max(90).nullable().optional(),
    longitude: z.number().min(-180).max(180).nullable().optional(),
    elevation: z.number().nullable().optional(),
    device: z
      .strictObject({
        firmware: deviceReference('firmwares', '/v2/firmwares/2').meta({
          description: 'IRI (/v2/firmwares/2) or integer id: a firmware of the model; needed to register the device',
        }),
        model: deviceReference('device_models', '/v2/device_models/1'),
        sn: z.string().max(128).nullable().optional().meta({ description: 'the serial: 1 to 128 of a-z, A-Z, 0-9, -' }),
      })
      .nullable()
      .optional()
      .meta({
        description:
          "The device that recorded the activity: the caller's device of this model and serial (found, or registered for the caller with this firmware). The activity is then not manual and needs a `connector`. All members null: no device.",
      }),
    manual: z.boolean().optional().meta({ description: 'stored as sent; must not be true beside a device block' }),
  })
  .nullable()
  .optional();

const name = z.string().max(L.nameLength).nullable();
const comment = z.string().max(L.commentLength).nullable();
const tags = z.array(z.string().min(1).max(L.tagLength)).max(L.maxTags).nullable();
const images = z.array(httpUrl).max(L.maxImages);
const equipments = z.array(iriOf('user_equipments')).max(MAX_EQUIPMENTS_PER_ACTIVITY);
const dataSummaries = z
  .record(z.string(), z.unknown())
  .meta({ description: 'datatype id (string key) to a number', example: { '5': 10230, '24': 3600 } });

const createFields = {
  name: name.optional(),
  user: iriOf('users').meta({ description: "the caller's own user IRI" }),
  sport: integerIriOf('sports'),
  userDevice: iriOf('user_devices')
    .nullable()
    .optional()
    .meta({ description: 'one of your devices; required unless the activity is manual' }),
  connector: integerIriOf('connectors')
    .nullable()
    .optional()
    .meta({ description: 'required with a userDevice or a location.device block' }),
  startdate: dateTime,
  duration: z
    .number()
    .int()
    .min(0)
    .max(L.maxSeconds)
    .meta({ description: `total seconds, 0 to ${L.maxSeconds}` }),
  manual: z
    .boolean()
    .optional()
    .meta({ description: 'optional; must agree with the device (manual ⇔ no userDevice nor location.device)' }),
  comment: comment.optional(),
  userSession: z.string().min(1).max(L.userSessionLength).nullable().optional(),
  images: images.optional(),
  tags: tags.optional(),
  location: locationObject,
  dataSummaries,
  equipments: equipments.optional().meta({
    description: `your gear (at most ${MAX_EQUIPMENTS_PER_ACTIVITY}); left out, your gear auto-assigned to the sport; [] for none`,
  }),
  ...visibilityFields,
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
  'movingTime',
  'pauses',
  'movingSpeedAvg',
  'movingPace',
];

export const createBody = writeBody('Activity', createFields, READ_ONLY);

const updateFields = {
  name: name.optional(),
  sport: integerIriOf('sports').optional(),
  comment: comment.optional(),
  tags: tags.optional(),
  images: images.optional(),
  thumbnail: httpUrl.nullable().optional(),
  dataSummaries: dataSummaries.optional().meta({ description: 'replaces the summaries whole' }),
  equipments: equipments.optional().meta({ description: 'replaces the gear ([] for none)' }),
  ...visibilityFields,
};

/** Set at the creation, read-only afterwards: a PUT sending back what it read is not refused for them. */
const FIXED_AFTER_CREATION = Object.keys(createFields).filter((k) => !(k in updateFields));
export const updateBody = writeBody('Activity', updateFields, [
  ...READ_ONLY.filter((k) => k !== 'thumbnail'),
  ...FIXED_AFTER_CREATION,
]);

const trackFlag = z
  .enum(['true', 'false', '1', '0'])
  .transform((v) => v === 'true' || v === '1')
  .optional();

export const listQuery = z.object({
  ...listFilterShape('user', refOf('users')),
  ...listFilterShape('sport', integerRefOf('sports')),
  ...dateFilterShape('startdate'),
  ...dateFilterShape('createdAt'),
  ...dateFilterShape('updatedAt'),
  trackFlag,
  ...orderShape(ACTIVITY_ORDERS),
  ...pagingShape,
});

/** The activity list's filter from its parsed query (the caller's list and a friend's). */
export function activityFilterOf(query: z.output<typeof listQuery>, querystring: string): ActivityFilter {
  return {
    users: listFilterOf<string>(query, 'user'),
    sports: listFilterOf<number>(query, 'sport'),
    startdate: dateFilterOf(query, 'startdate'),
    createdAt: dateFilterOf(query, 'createdAt'),
    updatedAt: dateFilterOf(query, 'updatedAt'),
    trackFlag: query.trackFlag,
    order: orderOf(query, querystring, ACTIVITY_ORDERS),
  };
}

/** The query parameter of both creates that decides what a duplicate gets (docs/tracking-activities.md, "Duplicates"). */
export const duplicatesQuery = {
  duplicates: z.enum(DUPLICATE_POLICIES).optional().meta({
    description:
      "What to do when the new activity duplicates one of yours (same file's SHA-256, or same start to the second and same duration): `refuse` (the default) answers 409 naming it in `Location` and `hydra:description`; `keep` stores this one too.",
  }),
};
