import type { z } from 'zod';
import { ACTIVITY_LIMITS, summariesFromJson } from '../../shared/tracking/activities/content.ts';
import { findActivityContent } from '../../shared/tracking/activities/content-read.ts';
import { DuplicateActivityError, type DuplicatePolicy } from '../../shared/tracking/activities/duplicates.ts';
import { listActivities } from '../../shared/tracking/activities/list.ts';
import {
  type ActivityInput,
  createActivity,
  deleteActivity,
  updateActivity,
} from '../../shared/tracking/activities/store.ts';
import type { ActivityBody } from '../../shared/tracking/body/activity-body.ts';
import { parseActivityBody } from '../../shared/tracking/body/parse.ts';
import { reportedDeviceOf } from '../../shared/tracking/devices/reported.ts';
import { iri } from '../../shared/tracking/iri.ts';
import type { AppContext } from '../context.ts';
import { Answer } from '../http/answer.ts';
import { HttpError, payloadTooLarge, unprocessable } from '../http/errors.ts';
import { bodyInputs, jsonInput } from '../http/inputs.ts';
import type { ApiRouter } from '../http/route.ts';
import {
  activityFileInputs,
  activityFileRepresentations,
  activityFileSuffixes,
  activityImportPool,
  type Exported,
  FILE_IMPORT_PATH,
  FILE_TYPES,
  fileFieldsQuery,
  fileFieldsSent,
  fileImportDescription,
  importActivityFile,
  poolFailure,
} from './activity-files.ts';
import {
  ACTIVITIES_PATH,
  activityDocument,
  activityFilterOf,
  activitySchema,
  activityView,
  createBody,
  duplicatesQuery,
  listQuery,
  updateBody,
} from './activity-schemas.ts';
import { jobAcceptedResponse } from './jobs.ts';
import { trackingResource } from './tracking-resource.ts';

/**
 * /v2/activities (docs/tracking-activities.md): the caller's activities with their summaries,
 * datastream and GPS track. Its shapes are activity-schemas.ts; rules and storage live in
 * shared/tracking/activities/.
 */

/**
 * JSON bodies up to this size (an hour at 1 Hz) are parsed on the event loop; larger ones, up to
 * ACTIVITY_BODY_LIMIT, in an import thread, where a long parse holds no other request
 * (shared/tracking/body/scan.ts; the trade-off is measured in bench/README.md, tracking-ingest).
 */
const INLINE_BODY_BYTES = 1024 * 1024;

/**
 * POST /v2/activities in JSON: up to ACTIVITY_BODY_LIMIT (a 24-hour stream is about 10 MB), read
 * by shared/tracking/body/parse.ts, which makes its streams columns: the body that is checked and
 * validated is the rest of it.
 */
function activityJsonInput(app: AppContext) {
  const limit = app.config.activityBodyLimitBytes;
  return jsonInput(createBody, {
    limitBytes: limit,
    tooLarge: () => payloadTooLarge(`The body is larger than ACTIVITY_BODY_LIMIT (${limit} bytes)`),
    parse: async (bytes) => {
      try {
        const { body, ...streams } =
          bytes.length <= INLINE_BODY_BYTES ? parseActivityBody(bytes) : await activityImportPool(app).parseBody(bytes);
        return { document: body, extra: { streams } };
      } catch (error) {
        throw poolFailure(error);
      }
    },
  });
}

/** A JSON create body as the store takes it, with the streams its reader made columns. */
function activityInputFromJson(
  body: z.output<typeof createBody>,
  { datastream, track }: Omit<ActivityBody, 'body'>,
  duplicates: DuplicatePolicy | undefined,
): ActivityInput {
  const summaries = summariesFromJson(body.dataSummaries as Record<string, unknown>);
  const reported = reportedDeviceOf(body.location?.device, 'body.location.device');
  if (reported.errors.length) throw unprocessable(reported.errors);
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
    reportedDevice: reported.device,
    duplicates,
    equipmentIds: body.equipments,
    visibility: { visibility: body.visibility, mapVisibility: body.mapVisibility, mapHiddenEnds: body.mapHiddenEnds },
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

/**
 * A duplicate's 409 (Hydra error): `hydra:description` and the `Location` header name the stored
 * activity, the header as a 201 names a created one.
 */
function duplicateConflict(publicUrl: string) {
  return (error: unknown): never => {
    if (!(error instanceof DuplicateActivityError)) throw error;
    throw new HttpError(409, 'Conflict', error.message, [], {
      Location: `${publicUrl}${iri('activities', error.existingId)}`,
    });
  };
}

/** The query of both creates: a file's fields (refused beside JSON) and `duplicates`. */
const createQuery = fileFieldsQuery.extend(duplicatesQuery);

/** /v2/activities: the caller's activities (create, list, read with streams, update, delete). */
export function activitiesResource(router: ApiRouter, app: AppContext): void {
  const { db } = app;
  const refuseDuplicate = duplicateConflict(app.config.PUBLIC_URL);
  const detail = (jsonLd: boolean) => (found: Exported) => activityDocument(found, jsonLd);
  const unsupported = `Send an activity as JSON (application/ld+json or application/json), or a GPX, TCX or FIT file as the body with one of ${FILE_TYPES.join(', ')}, or as multipart/form-data with a part named "file"`;
  const fileErrors = {
    409: 'The activity duplicates one of yours (same file, or same start and duration): `Location` names it; `duplicates=keep` stores it too',
    413: 'The body is over ACTIVITY_BODY_LIMIT, or the file over ACTIVITY_FILE_LIMIT (more samples, points or days than an activity may hold is a 422 naming the limit)',
    415: 'Neither JSON nor a GPX, TCX or FIT file',
    503: 'Every import thread is busy (Retry-After)',
  } as const;
  const fileDescription = fileImportDescription(app);
  const accepted = jobAcceptedResponse(
    'The file is read on the workers (Prefer: respond-async, or a file over IMPORT_ASYNC_ABOVE): the Job, `Location` naming it',
  );
  trackingResource(router, app, {
    path: ACTIVITIES_PATH,
    item: activitySchema,
    hydra: activityView,
    notFound: 'No such activity (or not yours)',
  })
    .list({
      summary: "The caller's activities (without their streams)",
      description:
        "Only the caller's activities. `user` / `user[]` and `sport` / `sport[]` take IRIs or bare ids; `startdate[...]`, `createdAt[...]` and `updatedAt[...]` take `after`, `before` (inclusive), `strictly_after`, `strictly_before`; `trackFlag=true|false`; `order[startdate|createdAt|updatedAt|duration|id]=asc|desc` (default: startdate descending; ties by id). Syncing (`updatedAt[after]` with `order[updatedAt]=asc`, and /v2/deleted_activities): docs/tracking-sync.md. Paging: `page`, `limit` (default 30, at most 100).",
      query: listQuery,
      handler: async ({ query, ctx, caller: user, principal }) => {
        const found = await app.reads.read(principal.accountId, ({ db }) =>
          listActivities(db, user.id, activityFilterOf(query, ctx.querystring), query),
        );
        return { ...found, page: query.page, limit: query.limit };
      },
    })
    .create({
      summary: 'Store an activity with its summaries, datastream and GPS track, or import it from a file',
      description: `The body is JSON (application/ld+json or application/json), at most ACTIVITY_BODY_LIMIT (default 32 MB; 413 above). \`user\` must be the caller's IRI; \`userDevice\` one of the caller's devices, or \`location.device\` \`{model, firmware, sn}\` a device found among the caller's by model and serial or registered for them, and then \`connector\` is required; \`sport\`, \`connector\` and every datatype must exist. \`equipments\` names the caller's gear (422 naming \`equipments[i]\` for gear that is not theirs); left out, the activity gets the caller's gear auto-assigned to its sport (\`sportsAutoAssigned\`, not retired, started by then), a file import too. Elapsed seconds are whole, 0 to ${ACTIVITY_LIMITS.maxSeconds}; an activity holds at most ${ACTIVITY_LIMITS.maxSamples} datastream samples and ${ACTIVITY_LIMITS.maxTrackPoints} locations (48 hours at 1 Hz; 422 naming the limit above). The answer is the activity without its streams (GET it for them). The query fields but \`duplicates\` are a file import's: with JSON, send them in the body.\n\nDuplicates: an activity of the caller with the same start (to the second, UTC) and the same duration, or imported from a file with the same SHA-256, is already stored: 409 naming it (\`Location\`, \`hydra:description\`), unless \`duplicates=keep\`.\n\n${fileDescription}`,
      query: createQuery,
      body: bodyInputs(unsupported, activityJsonInput(app), ...activityFileInputs(app)),
      errors: fileErrors,
      responses: accepted,
      handler: async ({ body, query, ctx, caller }) => {
        const { duplicates, ...fields } = query;
        if (body.kind !== 'json')
          return importActivityFile(app, caller.id, body, fields, ctx, duplicates).catch(refuseDuplicate);
        const misplaced = fileFieldsSent(fields);
        if (misplaced.length)
          throw unprocessable(
            misplaced.map((name) => ({
              path: `query.${name}`,
              message: 'is a file import field: send it in the JSON body',
            })),
          );
        return createActivity(db, caller.id, activityInputFromJson(body.value, body.streams, duplicates)).catch(
          refuseDuplicate,
        );
      },
      location: (a) => (a instanceof Answer ? '' : iri('activities', a.id)),
    })
    .create({
      at: FILE_IMPORT_PATH,
      summary: 'Create an activity from a GPX, TCX or FIT file (the v2.26 OpenAPI path)',
      description: `The file inputs of POST /v2/activities, at the path the v2.26 OpenAPI names: a file only (JSON is 415 here). Duplicates as on POST /v2/activities (409 unless \`duplicates=keep\`). ${fileDescription}`,
      query: createQuery,
      body: bodyInputs(
        `Send a GPX, TCX or FIT file as the body with one of ${FILE_TYPES.join(', ')}, or as multipart/form-data with a part named "file"`,
        ...activityFileInputs(app),
      ),
      errors: fileErrors,
      responses: accepted,
      handler: ({ body, query: { duplicates, ...fields }, ctx, caller }) =>
        importActivityFile(app, caller.id, body, fields, ctx, duplicates).catch(refuseDuplicate),
      location: (a) => (a instanceof Answer ? '' : iri('activities', a.id)),
    })
    .get({
      summary: 'One activity of the caller, with its datastream and locations',
      representations: {
        'application/ld+json': detail(true),
        'application/json': detail(false),
        ...activityFileRepresentations,
      },
      suffixes: activityFileSuffixes,
      handler: async ({ params, caller }) => findActivityContent(db, caller.id, params.id),
    })
    .update({
      summary:
        'Change the name, comment, tags, images, thumbnail, sport, summaries, gear or visibility of an activity of the caller',
      description:
        "The fields sent replace their values; the others stay. Every other Activity field is fixed at the creation: sent back, it is ignored. A change of sport must name an existing sport; `dataSummaries` replaces the summaries whole (their datatypes must exist); `equipments` replaces the gear, each the caller's (422 naming `equipments[i]` otherwise). The records job moves the statistics, gear totals and challenges a moment later.",
      body: updateBody,
      handler: async ({ params, body, caller: user }) => {
        const row = await updateActivity(db, user.id, params.id, {
          ...(body.name !== undefined ? { name: body.name } : {}),
          ...(body.comment !== undefined ? { comment: body.comment } : {}),
          ...(body.tags !== undefined ? { tags: body.tags } : {}),
          ...(body.images !== undefined ? { images: body.images } : {}),
          ...(body.thumbnail !== undefined ? { thumbnail: body.thumbnail } : {}),
          ...(body.sport !== undefined ? { sportId: body.sport } : {}),
          ...(body.equipments !== undefined ? { equipmentIds: body.equipments } : {}),
          ...(body.visibility !== undefined ? { visibility: body.visibility } : {}),
          ...(body.mapVisibility !== undefined ? { mapVisibility: body.mapVisibility } : {}),
          ...(body.mapHiddenEnds !== undefined ? { mapHiddenEnds: body.mapHiddenEnds } : {}),
          ...(body.dataSummaries !== undefined
            ? { summaries: summariesFromJson(body.dataSummaries as Record<string, unknown>) }
            : {}),
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
}
