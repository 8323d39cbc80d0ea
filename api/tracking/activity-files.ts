import type { Readable } from 'node:stream';
import type { Context } from 'koa';
import { z } from 'zod';
import type { ActivityRow } from '../../shared/db/schema/tracking.ts';
import { pacedStream } from '../../shared/runtime/paced-stream.ts';
import { ACTIVITY_LIMITS } from '../../shared/tracking/activities/content.ts';
import type { ActivityContent } from '../../shared/tracking/activities/data.ts';
import type { DuplicatePolicy } from '../../shared/tracking/activities/duplicates.ts';
import { DEFAULT_IMPORT_SPORT_ID } from '../../shared/tracking/formats/file-sports.ts';
import { gpxChunks } from '../../shared/tracking/formats/gpx-export.ts';
import { ImportError } from '../../shared/tracking/formats/import-error.ts';
import {
  ACTIVITY_FILE_MEDIA_TYPES,
  EXPORT_MEDIA_TYPES,
  GENERIC_FILE_MEDIA_TYPES,
} from '../../shared/tracking/formats/import-file.ts';
import { tcxChunks } from '../../shared/tracking/formats/tcx-export.ts';
import { type FileImportFields, importActivity } from '../../shared/tracking/imports/activity-import.ts';
import { ActivityImportPool, ImportPoolBusyError, importMemoryMb } from '../../shared/tracking/imports/pool.ts';
import { looksLikeZip } from '../../shared/tracking/imports/zip-reader.ts';
import { startBulkImportJob, startImportJob } from '../../shared/tracking/jobs/job-start.ts';
import type { AppContext } from '../context.ts';
import type { Answer } from '../http/answer.ts';
import { HttpError, payloadTooLarge, unprocessable, unsupportedMediaType } from '../http/errors.ts';
import { type BodyInput, fileInput, multipartInput } from '../http/inputs.ts';
import { rawBodyChunks } from '../http/raw-body.ts';
import type { Representation } from '../http/resource.ts';
import { jobAccepted } from './jobs.ts';
import { integerRefOf, refOf } from './schemas.ts';

/**
 * Activity files over HTTP (docs/tracking-files.md): the inputs of POST /v2/activities besides
 * JSON (a GPX, TCX or FIT file as the raw body or in multipart/form-data) and what they create;
 * the GPX and TCX representations of an activity. The reading itself is
 * shared/tracking/imports/activity-import.ts, in worker threads.
 */

/** The v2.26 OpenAPI's file-only twin of POST /v2/activities. */
export const FILE_IMPORT_PATH = '/file_import/activities';

export const FILE_TYPES = [...Object.values(ACTIVITY_FILE_MEDIA_TYPES).flat(), ...GENERIC_FILE_MEDIA_TYPES];

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
/** A file import's fields in the query string (a JSON create takes them in its body). */
export const fileFieldsQuery = z.object(fieldShape);

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

// ---------------------------------------------------------------- the inputs

const tooLarge = (limit: number) =>
  payloadTooLarge(`The file is larger than the limit of ${limit} bytes (ACTIVITY_FILE_LIMIT)`);

/** The media types of a bulk import's zip (the second is what Windows browsers send). */
export const ZIP_TYPES = ['application/zip', 'application/x-zip-compressed'];

/** The chunks of a zip, refused at the first bytes when they cannot start a zip (nothing else of it is read here). */
async function* zipChunks(chunks: AsyncIterable<Buffer>): AsyncGenerator<Buffer> {
  let first = true;
  for await (const chunk of chunks) {
    if (first && chunk.length > 0) {
      if (chunk.length < 2 || !looksLikeZip(chunk))
        throw unsupportedMediaType('The body is not a zip (a bulk import takes a zip of GPX, TCX or FIT files)');
      first = false;
    }
    yield chunk;
  }
  if (first) throw unprocessable([{ path: 'body', message: 'the zip is empty' }], 'No file was sent');
}

/** A bulk import's zip as the whole body: streamed to the job's file by the handler, within BULK_IMPORT_LIMIT. */
function zipInput(limit: number): BodyInput<{ kind: 'zip'; chunks: AsyncIterable<Buffer> }> {
  const schema = z.string().meta({
    format: 'binary',
    description: 'a zip of GPX, TCX or FIT files (maybe gzipped), with an optional activities.csv: a bulk import',
  });
  return {
    types: ZIP_TYPES,
    documented: Object.fromEntries(ZIP_TYPES.map((type) => [type, schema])),
    read: async (ctx) => ({
      kind: 'zip' as const,
      chunks: zipChunks(
        rawBodyChunks(ctx, {
          limit,
          tooLarge: () => payloadTooLarge(`The zip is larger than the limit of ${limit} bytes (BULK_IMPORT_LIMIT)`),
        }),
      ),
    }),
  };
}

/**
 * An activity file as the whole body, or as the part `file` of multipart/form-data with the
 * fields; a zip of them as the whole body (a bulk import).
 */
export function activityFileInputs(app: Pick<AppContext, 'config'>) {
  const limit = app.config.activityFileLimitBytes;
  return [
    fileInput({
      types: FILE_TYPES,
      limitBytes: limit,
      tooLarge: () => tooLarge(limit),
      description: 'the GPX, TCX or FIT file',
    }),
    multipartInput({
      fileFields: ['file'],
      fields: z.object(fieldShape),
      limitBytes: limit,
      fileDescription: 'the GPX, TCX or FIT file',
    }),
    zipInput(app.config.bulkImportLimitBytes),
  ] as const;
}

/** What a file input read: the file and its fields, wherever they were sent. */
export type ActivityFileBody =
  | { kind: 'file'; bytes: Buffer; contentType: string }
  | { kind: 'multipart'; file: { buffer: Buffer; mimetype: string }; fields: Fields }
  | { kind: 'zip'; chunks: AsyncIterable<Buffer> };

interface ReceivedFile {
  bytes: Uint8Array;
  contentType: string | undefined;
  /** Where the file was in the request: refusals name it. */
  path: 'body' | 'body.file';
  fields: Fields;
}

/** The file and its fields; a field sent both in the query and in the form is a 422. */
function receivedFile(body: Exclude<ActivityFileBody, { kind: 'zip' }>, query: Fields): ReceivedFile {
  if (body.kind === 'file') return { bytes: body.bytes, contentType: body.contentType, path: 'body', fields: query };
  const twice = FIELD_NAMES.filter((name) => body.fields[name] !== undefined && query[name] !== undefined);
  if (twice.length)
    throw unprocessable(twice.map((name) => ({ path: `body.${name}`, message: `is also in the query: send it once` })));
  return {
    bytes: body.file.buffer,
    contentType: body.file.mimetype,
    path: 'body.file',
    fields: { ...query, ...body.fields },
  };
}

/** The query fields a JSON create must not carry: they belong to file imports. */
export function fileFieldsSent(query: Fields): (keyof Fields)[] {
  return FIELD_NAMES.filter((name) => query[name] !== undefined);
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

/** A GPX or TCX export streamed in chunks, one per turn of the event loop, offered as a download named after the activity. */
function exportBody(format: 'gpx' | 'tcx', found: Exported, ctx: Context): Readable {
  ctx.type = EXPORT_MEDIA_TYPES[format];
  ctx.set('Content-Disposition', `attachment; filename="activity-${found.row.id}.${format}"`);
  return pacedStream(format === 'gpx' ? gpxChunks(found.content) : tcxChunks(found.content));
}

/**
 * The GPX and TCX representations of an activity read (`{row, content}`), for the activity's GET
 * and the share's: keyed by their media type, as Resource operations take them.
 */
export const activityFileRepresentations: Record<string, Representation<Exported>> = {
  [EXPORT_MEDIA_TYPES.gpx]: (found, ctx) => exportBody('gpx', found, ctx),
  [EXPORT_MEDIA_TYPES.tcx]: (found, ctx) => exportBody('tcx', found, ctx),
};

// ---------------------------------------------------------------- the import

/**
 * Creates the caller's activity from the file a file input read, answering its format, the
 * source of its sport and what was skipped in headers; refusals as their codes say (a duplicate
 * as DuplicateActivityError, which the caller answers).
 */
export async function importActivityFile(
  app: Pick<AppContext, 'db' | 'config' | 'logger'>,
  userId: string,
  body: ActivityFileBody,
  query: Fields,
  ctx: Context,
  duplicates: DuplicatePolicy | undefined,
): Promise<ActivityRow | Answer> {
  if (body.kind === 'zip') return importZipAsJob(app, userId, body.chunks, importFieldsOf(query, duplicates), ctx);
  const file = receivedFile(body, query);
  const fields = importFieldsOf(file.fields, duplicates);
  if (runsAsJob(ctx, file.bytes.length, app.config)) return importAsJob(app, userId, file, fields, ctx);
  const created = await importActivity(app.db, activityImportPool(app), userId, file, fields).catch((error) => {
    throw importFailure(error, file);
  });
  if (created.warnings.length)
    app.logger.info({ activity: created.row.id, warnings: created.warnings }, 'activity file imported with warnings');
  ctx.set('Import-Format', created.format);
  ctx.set('Import-Sport-Source', created.sportSource);
  ctx.set('Import-Warnings', warningsHeader(created.warnings));
  return created.row;
}

// ---------------------------------------------------------------- the import as a job

const importFieldsOf = (fields: Fields, duplicates: DuplicatePolicy | undefined): FileImportFields => ({
  sportId: fields.sport,
  name: fields.name,
  comment: fields.comment,
  userDeviceId: fields.userDevice,
  connectorId: fields.connector,
  duplicates,
});

/** Whether the request prefers an asynchronous answer (RFC 7240 `Prefer: respond-async`). */
const prefersAsync = (ctx: Context) =>
  ctx
    .get('prefer')
    .split(',')
    .some((token) => token.split(';')[0]?.trim().toLowerCase() === 'respond-async');

/** A file runs on the workers when the client prefers it, or always above IMPORT_ASYNC_ABOVE. */
const runsAsJob = (ctx: Context, bytes: number, config: Pick<AppContext['config'], 'importAsyncAboveBytes'>) =>
  prefersAsync(ctx) || bytes > config.importAsyncAboveBytes;

/** Stores the file and its job (never reading it here), answering 202 with the job. */
async function importAsJob(
  app: Pick<AppContext, 'db' | 'config'>,
  userId: string,
  file: ReceivedFile,
  fields: FileImportFields,
  ctx: Context,
): Promise<Answer> {
  const row = await startImportJob(
    app.db,
    app.config.STORAGE_DIR,
    userId,
    { bytes: file.bytes, contentType: file.contentType },
    fields,
  );
  const answer = jobAccepted(app, row);
  if (prefersAsync(ctx)) answer.headers['Preference-Applied'] = 'respond-async';
  return answer;
}

/** Stores a bulk import's zip as it arrives and its job: always 202, the workers split it into a job per file. */
async function importZipAsJob(
  app: Pick<AppContext, 'db' | 'config'>,
  userId: string,
  zip: AsyncIterable<Buffer>,
  fields: FileImportFields,
  ctx: Context,
): Promise<Answer> {
  const row = await startBulkImportJob(app.db, app.config.STORAGE_DIR, userId, zip, fields);
  const answer = jobAccepted(app, row);
  if (prefersAsync(ctx)) answer.headers['Preference-Applied'] = 'respond-async';
  return answer;
}

/** What POST /v2/activities says of its file inputs in /openapi.json. */
export function fileImportDescription(app: Pick<AppContext, 'config'>): string {
  const limit = app.config.activityFileLimitBytes;
  return `Besides JSON, POST /v2/activities takes a GPX 1.1 (or 1.0), TCX v2 or FIT file, at most ACTIVITY_FILE_LIMIT (${limit} bytes): as the raw body with its media type (${FILE_TYPES.join(', ')}; the bytes decide the format), with the optional fields in the query string, or as multipart/form-data with the file in a part named \`file\` and the fields as form fields. Fields: \`sport\` (IRI or id; wins over the file's, default /v2/sports/${DEFAULT_IMPORT_SPORT_ID}), \`name\` (replaces the file's), \`comment\`, \`userDevice\` (one of your devices: the activity is not manual), \`connector\` (default /v2/connectors/3, file-import). The file is read in a worker thread (at most IMPORT_TIMEOUT_S). Answers 201 with the activity, and the headers Import-Format, Import-Sport-Source (caller, file or fallback) and Import-Warnings (a JSON array of what was skipped). Refusals: 409 the same file, or an activity with the same start and duration, is already stored (see \`duplicates\`), 413 over the limit, 415 not a GPX, TCX or FIT file, 422 unsafe (DOCTYPE/ENTITY), malformed (cut short, bad CRC), without an activity, or more than an activity may hold (${ACTIVITY_LIMITS.maxSamples} samples, ${ACTIVITY_LIMITS.maxTrackPoints} track points, ${ACTIVITY_LIMITS.maxSeconds} s from start to end; the message names the limit), 503 when every import thread is busy.\n\nAs a job: with \`Prefer: respond-async\` (RFC 7240), or always for a file over IMPORT_ASYNC_ABOVE (${app.config.importAsyncAboveBytes} bytes), the file is stored and read on the workers (queue \`imports\`): the answer is 202 with the Job (\`Location: /v2/jobs/{id}\`, \`Preference-Applied: respond-async\` when asked); GET the job until its \`state\` is \`done\` (its \`activity\`) or \`failed\` (its \`error\`: the status and reasons this answer would have had). See docs/tracking-files.md.\n\nBulk import: a zip (${ZIP_TYPES.join(' or ')}) of GPX, TCX or FIT files (members may be gzipped, \`.gpx.gz\` as Strava writes them) with an optional Strava-style \`activities.csv\` (its names, sports and descriptions apply to its files), at most BULK_IMPORT_LIMIT (${app.config.bulkImportLimitBytes} bytes), always answers 202 with a \`bulk_import\` Job; the workers check the zip's limits (ZIP_LIMITS: entries, total size, ratio, depth, path names; the job fails naming the limit) and give each file a job of its own (\`GET /v2/jobs?parent=/v2/jobs/{id}\`); the query fields apply to every file. Records, statistics, thumbnails and one \`import_done\` event follow once every file ended. 415 when the body is not a zip. See docs/tracking-files.md.`;
}

/** `/activities/{id}.gpx` and `.tcx`: the export whatever Accept says. */
export const activityFileSuffixes = { gpx: EXPORT_MEDIA_TYPES.gpx, tcx: EXPORT_MEDIA_TYPES.tcx };
