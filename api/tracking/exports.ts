import { createReadStream } from 'node:fs';
import { z } from 'zod';
import { ACCOUNT_SCOPE } from '../../shared/auth/scopes.ts';
import { formatDateTime } from '../../shared/tracking/dates.ts';
import { exportFields } from '../../shared/tracking/exports/export-fields.ts';
import { EXPORTS_PATH, type ExportRow } from '../../shared/tracking/exports/export-state.ts';
import {
  deleteExport,
  EXPORT_FORMATS,
  exportDownload,
  findExport,
  listExports,
  MAX_EXPORTS_PER_USER,
  requestExport,
  visibleExportKinds,
} from '../../shared/tracking/exports/store.ts';
import type { AppContext } from '../context.ts';
import { requireScope } from '../http/auth.ts';
import { errorResponse } from '../http/error-schemas.ts';
import { HttpError, notFound } from '../http/errors.ts';
import type { HydraView } from '../http/formats/format.ts';
import { hydraSerializer } from '../http/formats/hydra.ts';
import { addOperation } from '../http/operation.ts';
import type { ApiRouter } from '../http/route.ts';
import { dateTimeOut, pagingShape, writeBody } from './schemas.ts';
import { trackingResource } from './tracking-resource.ts';

/**
 * /v2/exports (docs/tracking-exports.md): a bulk export of all the caller's activities, a zip of
 * GPX files with `activities.json`, built by the `exports` worker. The caller requests one, reads
 * its progress, and downloads it through a link that works without credentials until it expires.
 */

const PATH = '/exports';

const exportSchema = z
  .object({
    id: z.string(),
    user: z.string().meta({ format: 'iri-reference', example: '/v2/users/a1b2c3' }),
    format: z.enum(EXPORT_FORMATS),
    status: z.enum(['pending', 'running', 'done', 'failed', 'expired']).meta({
      description:
        '`pending` (queued), `running`, `done` (the link works), `failed` (ask again), `expired` (the link no longer works; the export disappears at the next cleanup)',
    }),
    progress: z.number().min(0).max(1).meta({ description: 'share of the activities handled, 0 to 1' }),
    activityCount: z.number().int().nullable().meta({
      description: 'activities to export once the job counted them; activities in the archive once done',
    }),
    size: z.number().int().nullable().meta({ description: 'bytes of the zip, once done' }),
    url: z.string().nullable().meta({
      format: 'uri',
      description: 'the download link while done (no credentials needed: it carries its own secret token)',
    }),
    error: z.string().nullable(),
    createdAt: dateTimeOut,
    startedAt: dateTimeOut.nullable(),
    finishedAt: dateTimeOut.nullable(),
    expiresAt: dateTimeOut.nullable().meta({ description: 'finishedAt + EXPORT_TTL_S' }),
  })
  .meta({ id: 'Export' });

/** Members a client reads but never writes: sent back, they are ignored. */
const READ_ONLY = Object.keys(exportSchema.shape).filter((k) => k !== 'format');
const createBody = writeBody(
  'Export',
  {
    format: z.enum(EXPORT_FORMATS).optional().meta({ description: 'the file format of the activities: gpx (default)' }),
  },
  READ_ONLY,
).optional();

const exportIdParams = z.object({ id: z.string().regex(/^[0-9a-f]{32}$/) });
const userParams = z.object({ id: z.string().max(200) });
const downloadQuery = z.object({
  token: z.string().min(1).max(200).meta({ description: 'the secret of the link, as `url` gives it' }),
});

/** A zip downloaded by a browser: saved under a readable name, never cached on the way, no Referer leaking the link. */
function zipHeaders(row: ExportRow): Record<string, string> {
  const day = row.created_at.toISOString().slice(0, 10);
  return {
    'Content-Disposition': `attachment; filename="activities-${day}-${row.id.slice(0, 8)}.zip"`,
    'Cache-Control': 'private, no-store',
    'Referrer-Policy': 'no-referrer',
    'X-Robots-Tag': 'noindex',
  };
}

const CREATE_DESCRIPTION = `Starts an export of every activity of the caller (created up to now): a zip of one GPX 1.1 file per activity plus \`activities.json\` (each activity as GET /v2/activities/{id} answers it in plain JSON, without datastream and locations). The body is optional: \`{"format": "gpx"}\` is the default and, for now, the only format. The answer is 201 with the export \`pending\`: read it (GET, Location header) until \`status\` is \`done\`, then download \`url\`. One export at a time (409 while one is pending or running); at most ${MAX_EXPORTS_PER_USER} held at once (409: delete one or wait until one expires).`;

/**
 * /v2/exports (list, request, read, delete), the download link, and the v2.26 spelling of the
 * request, POST /v2/users/{id}/export_personal_data.
 */
export function exportsResource(router: ApiRouter, app: AppContext): void {
  const { db, config } = app;
  const view: HydraView<ExportRow, typeof exportSchema> = {
    type: 'Export',
    path: EXPORTS_PATH,
    id: (row) => row.id,
    fields: (row) => exportFields(config.PUBLIC_URL, row),
  };
  const common = { item: exportSchema, hydra: view };
  const start = (userId: string, format: 'gpx') => requestExport(db, userId, format, config.EXPORT_TTL_S);

  trackingResource(router, app, {
    ...common,
    path: PATH,
    itemParams: exportIdParams,
    notFound: 'No such export (or not yours)',
  })
    .list({
      summary: "The caller's exports, newest first",
      description: 'Paging: `page`, `limit` (default 30, at most 100).',
      query: z.object(pagingShape),
      handler: async ({ query, caller, principal }) => {
        const kinds = visibleExportKinds(principal.scopes);
        const found = await app.reads.read(principal.accountId, ({ db }) => listExports(db, caller.id, query, kinds));
        return { ...found, page: query.page, limit: query.limit };
      },
    })
    .create({
      summary: 'Export all the activities of the caller (zip of GPX files and activities.json)',
      description: CREATE_DESCRIPTION,
      body: createBody,
      errors: { 409: 'An export is in progress, or the caller holds the most exports allowed' },
      handler: ({ body, caller }) => start(caller.id, body?.format ?? 'gpx'),
      location: (row) => `${EXPORTS_PATH}/${row.id}`,
    })
    .get({
      summary: 'One export of the caller: its status, progress and, once done, its download link',
      handler: async ({ params, caller, principal }) =>
        findExport(db, caller.id, params.id, visibleExportKinds(principal.scopes)),
    })
    .remove({
      summary: 'Delete an export of the caller and its file (the link stops working)',
      handler: async ({ params, caller, principal }) => {
        await deleteExport(db, config.STORAGE_DIR, caller.id, params.id, visibleExportKinds(principal.scopes));
      },
    });

  // The request as the v2.26 API spells it, for the caller's own user only (another user: 404).
  const serializer = hydraSerializer(view);
  trackingResource(router, app, {
    ...common,
    path: '/users',
    itemParams: userParams,
    notFound: 'No such user (or not you)',
  }).action({
    method: 'post',
    path: '/export_personal_data',
    status: 201,
    idempotent: true,
    summary: 'Export all the personal data of the caller (the v2.26 path)',
    description: `Like POST /v2/exports, for \`{id}\` the caller's own user id (another id: 404), but the zip holds everything of the user: \`profile.json\` (the User, the account, the applications allowed), per activity its GPX file, its JSON with streams and its drawn thumbnails, \`measures.json\`, \`records.json\`, \`devices.json\`, \`shares.json\`, the uploaded photos, and \`manifest.json\` listing every file with its size and SHA-256 (docs/accounts-lifecycle.md). Needs the \`account\` scope beside \`tracking:write\` (403 otherwise): a token without it neither starts nor sees personal-data exports (they are missing from GET /v2/exports). The body is optional (\`{"format": "gpx"}\`, the default). The answer is 201 with the export \`pending\`: read it (GET, Location header) until \`status\` is \`done\`, then download \`url\`. One export at a time, of either kind (409 while one is pending or running); at most ${MAX_EXPORTS_PER_USER} held at once.`,
    body: createBody,
    errors: {
      403: 'The token lacks the `account` scope (an export of the account, its email and applications included)',
      409: 'An export is in progress, or the caller holds the most exports allowed',
    },
    response: serializer.itemSchema(exportSchema),
    handler: async ({ params, body, ctx, caller, principal }) => {
      if (params.id !== caller.id) throw notFound('No such user (or not you)');
      requireScope(principal, ACCOUNT_SCOPE);
      const row = await requestExport(db, caller.id, body?.format ?? 'gpx', config.EXPORT_TTL_S, 'personal_data');
      ctx.set('Location', `${config.PUBLIC_URL}${EXPORTS_PATH}/${row.id}`);
      return serializer.item(row, { baseUrl: config.PUBLIC_URL, path: ctx.path, querystring: '', query: {} });
    },
  });

  addOperation(router, app, {
    method: 'get',
    path: `${PATH}/:id/download`,
    params: exportIdParams,
    // The link carries its own secret: a browser opens it without credentials.
    access: 'public',
    success: { 200: { description: 'The zip', alternates: { 'application/zip': undefined } } },
    writesResponse: true,
    spec: {
      summary: 'Download an export (the link of its `url`)',
      description:
        'No credentials: the link carries its own secret token (256 random bits), so a browser can open it. The zip answers with Content-Disposition: attachment. A wrong token, an unknown export or one not done yet: 404; an export past its `expiresAt`: 410 (then 404 once the cleanup removed it).',
      query: downloadQuery,
      responses: {
        404: errorResponse('hydra', 'No such export, wrong token, or not done yet'),
        410: errorResponse('hydra', 'The export expired'),
        422: errorResponse('hydra', 'No token'),
      },
      handler: async ({ ctx, params, query }) => {
        const found = await exportDownload(db, config.STORAGE_DIR, params.id, query.token);
        if (found.kind === 'expired')
          throw new HttpError(
            410,
            'Gone',
            `Export ${params.id} expired at ${formatDateTime(found.row.expires_at ?? new Date())}`,
          );
        ctx.set(zipHeaders(found.row));
        ctx.type = 'application/zip';
        ctx.body = createReadStream(found.file);
        ctx.length = found.bytes;
      },
    },
  });
}
