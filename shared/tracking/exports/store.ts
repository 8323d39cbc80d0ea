import { randomBytes, timingSafeEqual } from 'node:crypto';
import { stat } from 'node:fs/promises';
import { sql, type Transaction } from 'kysely';
import { ACCOUNT_SCOPE } from '../../auth/scopes.ts';
import type { Db } from '../../db/database.ts';
import { type Found, type PageRequest, pageOf } from '../../db/paging.ts';
import type { Database } from '../../db/schema/index.ts';
import { conflictError, notFoundError } from '../../errors.ts';
import { removeStorageFile, resolveStoragePath } from '../../media/storage.ts';
import { job } from '../../queue/jobs.ts';
import { trackingWork } from '../unit-of-work.ts';
import { EXPORTS_PATH, type ExportRow, exportState } from './export-state.ts';

/**
 * Bulk exports of a user's activities (docs/tracking-exports.md): requesting one writes its row
 * and its `exports/user-export` job in one transaction; the job (job.ts) builds the zip;
 * the owner reads the row, and anyone holding the link downloads the file until it expires.
 */

export const EXPORT_FORMATS = ['gpx'] as const;
export type ExportFormat = (typeof EXPORT_FORMATS)[number];

/**
 * What an export holds: `activities` (POST /v2/exports: GPX files and activities.json) or
 * `personal_data` (POST /v2/users/{id}/export_personal_data: everything of the user, see
 * personal-data.ts).
 */
export type ExportKind = ExportRow['kind'];

/** Exports a user may hold at once (any state, until they expire or are deleted): each is a file on disk. */
export const MAX_EXPORTS_PER_USER = 5;

/**
 * An export still pending or running this long after its request is taken for lost (a worker
 * killed on its last attempt cannot mark it failed): it is failed, so the user may ask again.
 */
export const STALE_EXPORT_S = 24 * 3600;

/** Storage path of an export's zip, below STORAGE_DIR; the cleanup sweeps this folder. */
export const EXPORTS_STORAGE_DIR = 'exports';
export const exportStoragePath = (id: string) => `${EXPORTS_STORAGE_DIR}/${id}.zip`;

const notFound = (id: string) => notFoundError(`No export ${id}`);

/**
 * Fails the exports still pending or running STALE_EXPORT_S after their request (of one user, or
 * everyone's for the cleanup), so they neither block a new request nor stay forever.
 */
export async function failStaleExports(db: Db | Transaction<Database>, ttlSeconds: number, userId?: string) {
  let q = db
    .updateTable('tracking_exports')
    .set({
      status: 'failed',
      error: 'the export did not finish in time',
      finished_at: sql<Date>`now()`,
      expires_at: sql<Date>`now() + make_interval(secs => ${ttlSeconds})`,
    })
    .where('status', 'in', ['pending', 'running'])
    .where('created_at', '<', sql<Date>`now() - make_interval(secs => ${STALE_EXPORT_S})`);
  if (userId !== undefined) q = q.where('user_id', '=', userId);
  const result = await q.executeTakeFirst();
  return Number(result.numUpdatedRows);
}

/**
 * Starts an export of every activity of the user (`personal_data`: of everything of the user):
 * its row and its job, in one transaction. One export at a time, of either kind (409 while one is
 * pending or running), at most MAX_EXPORTS_PER_USER held (409: delete one or let it expire).
 * Requests of one user are serialized on their user row.
 */
export async function requestExport(
  db: Db,
  userId: string,
  format: ExportFormat,
  ttlSeconds: number,
  kind: ExportKind = 'activities',
): Promise<ExportRow> {
  return trackingWork(db, async (uow) => {
    const { trx } = uow;
    await trx.selectFrom('tracking_users').select('id').where('id', '=', userId).forUpdate().executeTakeFirstOrThrow();
    await failStaleExports(trx, ttlSeconds, userId);
    const held = await trx
      .selectFrom('tracking_exports')
      .select(['id', 'status'])
      .where('user_id', '=', userId)
      .where((eb) => eb.or([eb('expires_at', 'is', null), eb('expires_at', '>', sql<Date>`now()`)]))
      .orderBy('created_at', 'desc')
      .execute();
    const inProgress = held.find((e) => e.status === 'pending' || e.status === 'running');
    if (inProgress)
      throw conflictError(`An export is already in progress: ${EXPORTS_PATH}/${inProgress.id}; wait until it is done`);
    if (held.length >= MAX_EXPORTS_PER_USER)
      throw conflictError(
        `You hold ${held.length} exports, the most allowed (${MAX_EXPORTS_PER_USER}): delete one (DELETE ${EXPORTS_PATH}/{id}) or wait until one expires`,
      );
    const row = await trx
      .insertInto('tracking_exports')
      .values({
        id: randomBytes(16).toString('hex'),
        user_id: userId,
        format,
        kind,
        download_token: randomBytes(32).toString('base64url'),
        activity_count: null,
        file_path: null,
        error: null,
        started_at: null,
        finished_at: null,
        expires_at: null,
      })
      .returningAll()
      .executeTakeFirstOrThrow();
    uow.enqueue(job('exports', 'user-export', { exportId: row.id }));
    return row;
  });
}

/** One page of the user's exports, newest first (index tracking_exports_user_idx). */
/**
 * The kinds of export a caller may see: the personal-data export holds the account (email,
 * names, applications allowed), so only a token with the `account` scope sees it.
 */
export function visibleExportKinds(scopes: ReadonlySet<string>): ExportKind[] {
  return scopes.has(ACCOUNT_SCOPE) ? ['activities', 'personal_data'] : ['activities'];
}

export function listExports(
  db: Db,
  userId: string,
  paging: PageRequest,
  kinds: readonly ExportKind[],
): Promise<Found<ExportRow>> {
  return pageOf(
    db
      .selectFrom('tracking_exports')
      .selectAll()
      .where('user_id', '=', userId)
      .where('kind', 'in', kinds)
      .orderBy('created_at', 'desc')
      .orderBy('id', 'desc'),
    paging,
  );
}

/** The user's export `id` of one of these kinds; another user's, another kind or a missing one is a 404. */
export async function findExport(db: Db, userId: string, id: string, kinds: readonly ExportKind[]): Promise<ExportRow> {
  const row = await db
    .selectFrom('tracking_exports')
    .selectAll()
    .where('id', '=', id)
    .where('user_id', '=', userId)
    .where('kind', 'in', kinds)
    .executeTakeFirst();
  if (!row) throw notFound(id);
  return row;
}

/**
 * Deletes the user's export and its file. A running job finds its row gone when it finishes
 * and removes what it wrote.
 */
export async function deleteExport(
  db: Db,
  storageDir: string,
  userId: string,
  id: string,
  kinds: readonly ExportKind[],
): Promise<void> {
  const row = await db
    .deleteFrom('tracking_exports')
    .where('id', '=', id)
    .where('user_id', '=', userId)
    .where('kind', 'in', kinds)
    .returning(['id', 'file_path'])
    .executeTakeFirst();
  if (!row) throw notFound(id);
  await removeStorageFile(storageDir, row.file_path ?? exportStoragePath(row.id));
}

/** What a download link leads to: the file, or an export whose time is over. */
export type ExportDownload =
  | { kind: 'file'; row: ExportRow; file: string; bytes: number }
  | { kind: 'expired'; row: ExportRow };

/** Constant-time comparison, so response times tell nothing about how much of a token was right. */
function sameToken(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

/**
 * The file behind a download link: the export `id` with its `token`, done and not expired. A
 * wrong token, an unfinished or missing export is a 404 (the same answer, so a link tells
 * nothing without its token); a finished one past its time is `expired` (410).
 */
export async function exportDownload(db: Db, storageDir: string, id: string, token: string): Promise<ExportDownload> {
  const row = await db.selectFrom('tracking_exports').selectAll().where('id', '=', id).executeTakeFirst();
  if (!row || !sameToken(row.download_token, token) || row.file_path === null) throw notFound(id);
  if (exportState(row) === 'expired') return { kind: 'expired', row };
  const file = resolveStoragePath(storageDir, row.file_path);
  // The row says done but the file is gone (storage lost): nothing to send.
  const info = file ? await stat(file).catch(() => undefined) : undefined;
  if (!file || !info?.isFile()) throw notFound(id);
  return { kind: 'file', row, file, bytes: info.size };
}
