import { Readable } from 'node:stream';
import type { Context, Middleware } from 'koa';
import compose from 'koa-compose';
import { z } from 'zod';
import type { FieldError } from '../../shared/errors.ts';
import { ACTIVITY_LIMITS } from '../../shared/tracking/activities/content.ts';
import type { ActivityContent } from '../../shared/tracking/activities/data.ts';
import { type ActivityRow, findActivityContent } from '../../shared/tracking/activities/store.ts';
import { DEFAULT_IMPORT_SPORT_ID } from '../../shared/tracking/formats/file-sports.ts';
import { gpxChunks } from '../../shared/tracking/formats/gpx-export.ts';
import { ImportError } from '../../shared/tracking/formats/import-error.ts';
import {
  ACTIVITY_FILE_MEDIA_TYPES,
  EXPORT_MEDIA_TYPES,
  GENERIC_FILE_MEDIA_TYPES,
  isActivityFileMediaType,
} from '../../shared/tracking/formats/import-file.ts';
import { tcxChunks } from '../../shared/tracking/formats/tcx-export.ts';
import { type FileImportFields, importActivity } from '../../shared/tracking/imports/activity-import.ts';
import { ActivityImportPool, ImportPoolBusyError, importMemoryMb } from '../../shared/tracking/imports/pool.ts';
import { iri, TRACKING_PREFIX } from '../../shared/tracking/iri.ts';
import type { AppContext } from '../context.ts';
import { accessMiddleware } from '../http/access.ts';
import { errorResponse } from '../http/error-schemas.ts';
import { HttpError, payloadTooLarge, unprocessable, unsupportedMediaType } from '../http/errors.ts';
import type { AnyHydraView } from '../http/formats/format.ts';
import { hydraSerializer } from '../http/formats/hydra.ts';
import { hostileInput, textProblem } from '../http/input-guard.ts';
import { receiveFile, type UploadedFile, uploadedFile } from '../http/multipart-file.ts';
import { negotiate, notAcceptable } from '../http/negotiation.ts';
import { readRawBody } from '../http/raw-body.ts';
import type { Representation } from '../http/resource.ts';
import type { ApiRouter } from '../http/route.ts';
import { parseInput } from '../http/validate.ts';
import { trackingCaller } from './identity.ts';
import { integerRefOf, refOf } from './schemas.ts';

/**
 * Activity files over HTTP (docs/tracking-files.md): POST /v2/activities with a GPX, TCX or FIT
 * file (raw body or multipart) creates the activity; GET /v2/activities/{id} with `Accept:
 * application/gpx+xml` or `application/tcx+xml`, or at `{id}.gpx` / `{id}.tcx`, streams the export.
 * The reading itself is shared/tracking/imports/activity-import.ts, in worker threads.
 */

/** The activity JSON path's own path and the v2.26 OpenAPI's file-only twin. */
const PATH = '/activities';
const FILE_IMPORT_PATH = '/file_import/activities';

const FILE_TYPES = [...Object.values(ACTIVITY_FILE_MEDIA_TYPES).flat(), ...GENERIC_FILE_MEDIA_TYPES];
const CREATED_TYPES = ['application/ld+json', 'application/json'];

/** The fields a file import takes: in the query string, or as form fields beside a multipart file. */
const fieldShape = {
  sport: integerRefOf('sports')
    .optional()
    .meta({ description: `wins over the file's sport; without either, /v2/sports/${DEFAULT_IMPORT_SPORT_ID}` }),
  name: z.string().min(1).max(ACTIVITY_LIMITS.nameLength).optional().meta({ description: "replaces the file's name" }),
  comment: z.string().max(ACTIVITY_LIMITS.commentLength).optional(),
  userDevice: refOf('user_devices').optional().meta({ description: 'one of your devices: the activity is not manual' }),
  connector: integerRefOf('connectors').optional().meta({ description: 'default /v2/connectors/3 (file-import)' }),
};
type Fields = z.output<z.ZodObject<typeof fieldShape>>;
const FIELD_NAMES = Object.keys(fieldShape) as (keyof Fields)[];
const queryFields = z.object(fieldShape);
/** A multipart body: the file and the fields (a misspelt one is a 422 naming it, never silently dropped). */
const formFields = z.object(fieldShape);

const idParams = z.object({ id: z.string().regex(/^[A-Za-z0-9_-]{1,64}$/) });

// ---------------------------------------------------------------- the pool

const pools = new WeakMap<Pick<AppContext, 'config'>, ActivityImportPool>();

/** The app's import threads (started on the first import; idle threads do not keep the process up). */
export function activityImportPool(app: Pick<AppContext, 'config'>): ActivityImportPool {
  let pool = pools.get(app);
  if (!pool) {
    const { config } = app;
    pool = new ActivityImportPool({
      threads: config.IMPORT_THREADS,
      timeoutMs: config.IMPORT_TIMEOUT_S * 1000,
      maxQueue: config.IMPORT_QUEUE,
      maxMemoryMb: importMemoryMb(Math.max(config.activityFileLimitBytes, config.activityBodyLimitBytes)),
    });
    pools.set(app, pool);
  }
  return pool;
}

// ---------------------------------------------------------------- reading the request

const tooLarge = (limit: number) =>
  payloadTooLarge(`The file is larger than the limit of ${limit} bytes (ACTIVITY_FILE_LIMIT)`);

/** Form fields hold text the input guard never saw (it runs before the multipart parser). */
function formTextProblems(form: Record<string, unknown>): FieldError[] {
  const errors: FieldError[] = [];
  for (const [name, value] of Object.entries(form))
    for (const text of [name, ...(Array.isArray(value) ? value : [value])].filter((v) => typeof v === 'string')) {
      const problem = textProblem(text);
      if (problem) errors.push({ path: `body.${textProblem(name) ? 'field' : name}`, message: problem });
    }
  return errors;
}

interface ReceivedFile {
  bytes: Uint8Array;
  contentType: string | undefined;
  /** Where the file was in the request: refusals name it. */
  path: 'body' | 'body.file';
  fields: Fields;
}

/** The file and the fields of a file import, read within the limit, or a 4xx saying what is wrong. */
async function receiveImport(ctx: Context, limit: number): Promise<ReceivedFile> {
  const query = parseInput(queryFields, ctx.query, 'query');
  if (!ctx.is('multipart/form-data')) {
    if (!isActivityFileMediaType(ctx.get('content-type')))
      throw unsupportedMediaType(
        `Send an activity as JSON (application/ld+json or application/json), or a GPX, TCX or FIT file as the body with one of ${FILE_TYPES.join(', ')}, or as multipart/form-data with a part named "file"`,
      );
    const bytes = await readRawBody(ctx, { limit, tooLarge: () => tooLarge(limit) });
    if (bytes.length === 0) throw unprocessable([{ path: 'body', message: 'the file is empty' }], 'No file was sent');
    return { bytes, contentType: ctx.get('content-type'), path: 'body', fields: query };
  }
  await receiveFile(limit)(ctx, async () => {});
  const file = uploadedFile(ctx, { fields: ['file'] }) as UploadedFile & { mimetype?: string };
  const form = ((ctx.request as { body?: unknown }).body ?? {}) as Record<string, unknown>;
  const hostile = formTextProblems(form);
  if (hostile.length) throw hostileInput(hostile);
  const unknown = Object.keys(form).filter((name) => !FIELD_NAMES.includes(name as keyof Fields));
  if (unknown.length)
    throw unprocessable(
      unknown.map((name) => ({
        path: `body.${name}`,
        message: `no such field (fields: file, ${FIELD_NAMES.join(', ')})`,
      })),
    );
  const sent = parseInput(formFields, form, 'body');
  const twice = FIELD_NAMES.filter((name) => sent[name] !== undefined && query[name] !== undefined);
  if (twice.length)
    throw unprocessable(twice.map((name) => ({ path: `body.${name}`, message: `is also in the query: send it once` })));
  return {
    bytes: file.buffer,
    contentType: file.mimetype,
    path: 'body.file',
    fields: { ...query, ...sent },
  };
}

// ---------------------------------------------------------------- errors

const busy = () =>
  new HttpError(503, 'Service Unavailable', 'Every import thread is busy; retry in 5 s', [], { 'Retry-After': '5' });

/** The pool's own refusals, for a file or a JSON body: every thread busy (503), too long or too big (413). */
export function poolFailure(error: unknown): unknown {
  if (error instanceof ImportPoolBusyError) return busy();
  if (error instanceof ImportError && error.code === 'too-large') return payloadTooLarge(error.message);
  return error;
}

/**
 * An importer's refusal as the status its code says. Its violation is on the file: `file` in a
 * multipart body, the whole body (an empty propertyPath, as API Platform writes it) otherwise.
 */
function importFailure(error: unknown, file: ReceivedFile): unknown {
  if (error instanceof ImportPoolBusyError || (error instanceof ImportError && error.code === 'too-large'))
    return poolFailure(error);
  if (error instanceof ImportError) {
    if (error.code === 'unsupported-format') return unsupportedMediaType(error.message);
    return unprocessable([{ path: file.path, message: error.message }], 'The file cannot be imported');
  }
  return error;
}

/** Warnings in one header: a JSON array of sentences, non-ASCII escaped (header values are Latin-1). */
const warningsHeader = (warnings: string[]) =>
  JSON.stringify(warnings).replace(/[\u007f-\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);

// ---------------------------------------------------------------- exports

export type Exported = { row: ActivityRow; content: ActivityContent };

/** A GPX or TCX export streamed in chunks, offered as a download named after the activity. */
function exportBody(format: 'gpx' | 'tcx', found: Exported, ctx: Context): Readable {
  ctx.type = EXPORT_MEDIA_TYPES[format];
  ctx.set('Content-Disposition', `attachment; filename="activity-${found.row.id}.${format}"`);
  return Readable.from(format === 'gpx' ? gpxChunks(found.content) : tcxChunks(found.content));
}

/**
 * The GPX and TCX representations of an activity read (`{row, content}`), for the activity's GET
 * and the share's: keyed by their media type, as Resource operations take them.
 */
export const activityFileRepresentations: Record<string, Representation<Exported>> = {
  [EXPORT_MEDIA_TYPES.gpx]: (found, ctx) => exportBody('gpx', found, ctx),
  [EXPORT_MEDIA_TYPES.tcx]: (found, ctx) => exportBody('tcx', found, ctx),
};

// ---------------------------------------------------------------- routes

export interface ActivityFiles {
  /** Adds the file bodies to the OpenAPI entry of POST /v2/activities (call once it is declared). */
  document: () => void;
}

/**
 * Registers the file routes; call before the activities resource declares its own: POST
 * /v2/activities passes JSON (and bodiless) requests on to it and takes every other body, and
 * `{id}.gpx` / `{id}.tcx` must match before `{id}`. `view` writes the created activity.
 */
export function activityFiles(router: ApiRouter, app: AppContext, view: AnyHydraView): ActivityFiles {
  const { config, db } = app;
  const limit = config.activityFileLimitBytes;
  const serializer = hydraSerializer(view);
  const serializers = [serializer, ...(serializer.alternates ?? [])];

  const importFile: Middleware = async (ctx) => {
    const user = await trackingCaller(app, ctx.state.principal);
    const file = await receiveImport(ctx, limit);
    const fields: FileImportFields = {
      sportId: file.fields.sport,
      name: file.fields.name,
      comment: file.fields.comment,
      userDeviceId: file.fields.userDevice,
      connectorId: file.fields.connector,
    };
    const created = await importActivity(db, activityImportPool(app), user.id, file, fields).catch((error) => {
      throw importFailure(error, file);
    });
    app.relay.kick();
    if (created.warnings.length)
      app.logger.info({ activity: created.row.id, warnings: created.warnings }, 'activity file imported with warnings');
    const type = negotiate(ctx.get('accept'), CREATED_TYPES) ?? CREATED_TYPES[0];
    const chosen = serializers.find((s) => s.contentType === type) ?? serializer;
    ctx.status = 201;
    ctx.set('Location', `${config.PUBLIC_URL}${iri('activities', created.row.id)}`);
    ctx.set('Import-Format', created.format);
    ctx.set('Import-Sport-Source', created.sportSource);
    ctx.set('Import-Warnings', warningsHeader(created.warnings));
    ctx.body = chosen.item(created.row, {
      baseUrl: config.PUBLIC_URL,
      path: ctx.path,
      querystring: ctx.querystring,
      query: ctx.query as Record<string, string | string[] | undefined>,
    });
    ctx.type = type as string;
  };
  /** As the JSON create: a 406 costs no credential check, then the credentials, then the body. */
  const acceptable: Middleware = async (ctx, next) => {
    ctx.vary('Accept');
    if (negotiate(ctx.get('accept'), CREATED_TYPES) === undefined) throw notAcceptable(CREATED_TYPES);
    await next();
  };
  const fileImport = compose([acceptable, ...accessMiddleware(app, 'bearer+key'), importFile]);
  // ctx.is() is null without a body: such a request is the JSON route's (it says the body is missing).
  const sendsJson = (ctx: Context) => ctx.is(['json', 'application/*+json']) !== false;
  router.router.post(PATH, (ctx, next) => (sendsJson(ctx) ? next() : fileImport(ctx)));
  router.router.post(FILE_IMPORT_PATH, (ctx) => fileImport(ctx));

  for (const format of ['gpx', 'tcx'] as const)
    router.add({
      method: 'get',
      path: `${PATH}/:id.${format}`,
      summary: `One activity of the caller as ${format === 'gpx' ? 'GPX 1.1' : 'TCX v2'}`,
      description: `The same as GET /v2/activities/{id} with \`Accept: ${EXPORT_MEDIA_TYPES[format]}\` (the suffix wins over Accept), streamed, as a download (Content-Disposition) named \`activity-{id}.${format}\`.`,
      security: ['bearer', 'apiKey'],
      params: idParams,
      middleware: accessMiddleware(app, 'bearer+key'),
      responses: {
        200: {
          description: `The ${format.toUpperCase()} document`,
          alternates: { [EXPORT_MEDIA_TYPES[format]]: undefined },
        },
        401: errorResponse('hydra', 'Missing or invalid x-api-key or token'),
        404: errorResponse('hydra', 'No such activity (or not yours)'),
      },
      handler: async (ctx, { params }) => {
        const user = await trackingCaller(app, ctx.state.principal);
        ctx.body = exportBody(format, await findActivityContent(db, user.id, params.id), ctx);
      },
    });

  const fileDescription = `Besides JSON, POST /v2/activities takes a GPX 1.1 (or 1.0), TCX v2 or FIT file, at most ACTIVITY_FILE_LIMIT (${limit} bytes): as the raw body with its media type (${FILE_TYPES.join(', ')}; the bytes decide the format), with the optional fields in the query string, or as multipart/form-data with the file in a part named \`file\` and the fields as form fields. Fields: \`sport\` (IRI or id; wins over the file's, default /v2/sports/${DEFAULT_IMPORT_SPORT_ID}), \`name\` (replaces the file's), \`comment\`, \`userDevice\` (one of your devices: the activity is not manual), \`connector\` (default /v2/connectors/3, file-import). The file is read in a worker thread (at most IMPORT_TIMEOUT_S). Answers 201 with the activity, and the headers Import-Format, Import-Sport-Source (caller, file or fallback) and Import-Warnings (a JSON array of what was skipped). Refusals: 413 over the limit or what an activity may hold, 415 not a GPX, TCX or FIT file, 422 unsafe (DOCTYPE/ENTITY), malformed (cut short, bad CRC) or without an activity, 503 when every import thread is busy. See docs/tracking-files.md.`;
  const fileBody = z.string().meta({ format: 'binary', description: 'the GPX, TCX or FIT file' });
  const fileContent = Object.fromEntries(FILE_TYPES.map((type) => [type, { schema: fileBody }]));
  const multipart = {
    schema: z.object({ file: fileBody, ...fieldShape }).meta({ description: 'the file and the optional fields' }),
  };
  const fileErrors = {
    413: errorResponse('hydra', 'The file is over ACTIVITY_FILE_LIMIT, or holds more than an activity may'),
    415: errorResponse('hydra', 'Neither JSON nor a GPX, TCX or FIT file'),
    422: errorResponse('hydra', 'Invalid field, or a file that is unsafe, malformed or without an activity'),
    503: errorResponse('hydra', 'Every import thread is busy (Retry-After)'),
  };
  const asOpenApi = (responses: Record<number, { description: string; schema?: z.ZodType }>) =>
    Object.fromEntries(
      Object.entries(responses).map(([status, r]) => [
        status,
        {
          description: r.description,
          ...(r.schema ? { content: { 'application/ld+json': { schema: r.schema } } } : {}),
        },
      ]),
    );
  return {
    document: () => {
      const path = `${TRACKING_PREFIX}${PATH}`;
      app.registry.extend(path, 'post', (operation) => {
        const json = operation?.requestBody && 'content' in operation.requestBody ? operation.requestBody.content : {};
        return {
          ...operation,
          description: `${operation?.description ?? ''}\n\n${fileDescription}`,
          requestParams: { ...operation?.requestParams, query: queryFields },
          requestBody: {
            required: true,
            content: { ...json, ...fileContent, 'multipart/form-data': multipart },
          },
          responses: { ...operation?.responses, ...asOpenApi(fileErrors) },
        };
      });
      app.registry.extend(`${TRACKING_PREFIX}${FILE_IMPORT_PATH}`, 'post', () => ({
        summary: 'Create an activity from a GPX, TCX or FIT file (the v2.26 OpenAPI path)',
        description: `The file part of POST /v2/activities, at the path the v2.26 OpenAPI names: a file only (JSON is 415 here). ${fileDescription}`,
        tags: ['tracking'],
        security: [{ bearer: [], apiKey: [] }],
        requestParams: { query: queryFields },
        requestBody: { required: true, content: { ...fileContent, 'multipart/form-data': multipart } },
        responses: {
          201: { description: 'Created: the activity, as POST /v2/activities answers it' },
          ...asOpenApi({ 401: errorResponse('hydra', 'Missing or invalid x-api-key or token'), ...fileErrors }),
        },
      }));
    },
  };
}
