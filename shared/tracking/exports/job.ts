import { sql } from 'kysely';
import type { Db } from '../../db/database.ts';
import type { PersonalDataSection } from '../../kernel/registration.ts';
import { removeStorageFile, resolveStoragePath } from '../../media/storage.ts';
import type { MarkDone } from '../../queue/outbox.ts';
import { readActivityContent } from '../activities/content-read.ts';
import { trackingWork } from '../unit-of-work.ts';
import { type ArchiveOptions, type ExportedActivity, writeActivitiesArchive } from './archive.ts';
import { writePersonalDataArchive } from './personal-data.ts';
import { exportStoragePath } from './store.ts';

/**
 * The `exports/user-export` job (docs/tracking-exports.md): builds the zip of an export and marks
 * its row done with the file, its size and its expiry: the activities' archive (archive.ts), or for
 * a personal data export everything of the user (personal-data.ts, docs/accounts-lifecycle.md).
 * The activities in it are the user's created up to the request, oldest start first, as they are
 * when the job reads them; a rerun (a retry, a duplicate delivery) rebuilds the same archive, and
 * one that finds the export done, failed or deleted does nothing.
 */

export interface ExportJobOptions {
  storageDir: string;
  ttlSeconds: number;
  /** PUBLIC_URL: the share links of a personal data export ('' writes them as paths). */
  publicUrl?: string;
  summaryOf: ArchiveOptions['summaryOf'];
  /**
   * The other services' members of a personal data export's `profile.json` (the account...:
   * shared/services/index.ts's PERSONAL_DATA_SECTIONS); needed by personal data exports only.
   */
  personalData?: readonly PersonalDataSection[];
  /** Called after each activity (the BullMQ job's progress). */
  onProgress?: (progress: { handled: number; total: number }) => Promise<void> | void;
  /** The job's done mark: it commits with the export's `done`. */
  markDone?: MarkDone;
}

export type ExportJobOutcome =
  | { status: 'done'; exportId: string; activities: number; bytes: number }
  | { status: 'skipped'; exportId: string; reason: string };

/** Activities read per query while listing (keyset pages on the (user_id, startdate, id) index). */
const PAGE = 200;

/**
 * The activities of the export's user created up to its request, compared in the database (a
 * JavaScript Date would drop the microseconds of `now()`).
 */
function exportedActivitiesQuery(db: Db, userId: string, exportId: string) {
  return db
    .selectFrom('activities')
    .where('user_id', '=', userId)
    .where('created_at', '<=', db.selectFrom('tracking_exports').select('created_at').where('id', '=', exportId));
}

/**
 * The activities of an export, oldest start first, each read with its streams only when the
 * archive asks for it; null for one deleted since its page was listed.
 */
export async function* activitiesToExport(db: Db, userId: string, exportId: string): AsyncGenerator<ExportedActivity> {
  let after: { startdate: Date; id: string } | undefined;
  for (;;) {
    let q = exportedActivitiesQuery(db, userId, exportId).select(['id', 'startdate']);
    if (after) q = q.where(sql<boolean>`(startdate, id) > (${after.startdate}::timestamptz, ${after.id}::text)`);
    const page = await q.orderBy('startdate').orderBy('id').limit(PAGE).execute();
    for (const { id } of page) yield (await readActivityContent(db, id, userId)) ?? null;
    if (page.length < PAGE) return;
    after = page[page.length - 1];
  }
}

/** How many activities `activitiesToExport` lists (the progress's total). */
export async function countActivitiesToExport(db: Db, userId: string, exportId: string): Promise<number> {
  const row = await exportedActivitiesQuery(db, userId, exportId)
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

/** Builds the archive of export `exportId` (see the top of this file). */
export async function buildExport(db: Db, exportId: string, options: ExportJobOptions): Promise<ExportJobOutcome> {
  const skipped = (reason: string): ExportJobOutcome => ({ status: 'skipped', exportId, reason });
  const row = await db.selectFrom('tracking_exports').selectAll().where('id', '=', exportId).executeTakeFirst();
  if (!row) return skipped('export deleted');
  if (row.status === 'done' || row.status === 'failed') return skipped(`export already ${row.status}`);
  const sections = options.personalData;
  // Without them the profile would lack the account: a wrong archive, not a smaller one.
  if (row.kind === 'personal_data' && !sections) throw new Error("a personal data export needs the services' sections");
  const total = await countActivitiesToExport(db, row.user_id, exportId);
  const started = await db
    .updateTable('tracking_exports')
    .set({
      status: 'running',
      started_at: sql<Date>`coalesce(started_at, now())`,
      activity_count: total,
      processed_count: 0,
      attempts: sql<number>`attempts + 1`,
    })
    .where('id', '=', exportId)
    .where('status', 'in', ['pending', 'running'])
    .returning('id')
    .executeTakeFirst();
  if (!started) return skipped('export finished or deleted meanwhile');

  const relative = exportStoragePath(exportId);
  const file = resolveStoragePath(options.storageDir, relative);
  if (!file) throw new Error(`invalid export storage path "${relative}"`);
  // The row follows each whole percent (at most about a hundred small updates per export).
  let shownPercent = 0;
  const archiveOptions = {
    mtime: row.created_at,
    summaryOf: options.summaryOf,
    onProgress: async (handled: number) => {
      await options.onProgress?.({ handled, total });
      const percent = total === 0 ? 100 : Math.floor((handled * 100) / total);
      if (percent === shownPercent) return;
      shownPercent = percent;
      await db
        .updateTable('tracking_exports')
        .set({ processed_count: handled })
        .where('id', '=', exportId)
        .where('status', '=', 'running')
        .execute();
    },
  };
  const activities = activitiesToExport(db, row.user_id, exportId);
  const result =
    row.kind === 'personal_data' && sections
      ? await writePersonalDataArchive(db, file, activities, {
          ...archiveOptions,
          userId: row.user_id,
          exportId,
          storageDir: options.storageDir,
          publicUrl: options.publicUrl ?? '',
          sections,
        })
      : await writeActivitiesArchive(file, activities, archiveOptions);

  const done = await db.transaction().execute(async (trx) => {
    const marked = await trx
      .updateTable('tracking_exports')
      .set({
        status: 'done',
        file_path: relative,
        size_bytes: result.bytes,
        activity_count: result.activities,
        processed_count: result.activities,
        error: null,
        finished_at: sql<Date>`now()`,
        expires_at: sql<Date>`now() + make_interval(secs => ${options.ttlSeconds})`,
      })
      .where('id', '=', exportId)
      .where('status', '=', 'running')
      .returning('id')
      .executeTakeFirst();
    if (marked) {
      const publicUrl = options.publicUrl ?? '';
      await trackingWork(trx, async (uow) => uow.emit({ type: 'ExportReady', exportId, publicUrl }));
      await options.markDone?.(trx);
    }
    return marked;
  });
  if (!done) {
    // Deleted while building: the file is nobody's. (Done by a concurrent run of the same job:
    // it wrote the same file, which stays.)
    const still = await db.selectFrom('tracking_exports').select('id').where('id', '=', exportId).executeTakeFirst();
    if (!still) await removeStorageFile(options.storageDir, relative);
    return skipped('export finished or deleted while building');
  }
  return { status: 'done', exportId, activities: result.activities, bytes: result.bytes };
}

/** Marks an export failed after its last attempt (it then expires like a finished one). */
export async function markExportFailed(db: Db, exportId: string, ttlSeconds: number, reason: string): Promise<void> {
  await db
    .updateTable('tracking_exports')
    .set({
      status: 'failed',
      error: reason,
      finished_at: sql<Date>`now()`,
      expires_at: sql<Date>`now() + make_interval(secs => ${ttlSeconds})`,
    })
    .where('id', '=', exportId)
    .where('status', 'in', ['pending', 'running'])
    .execute();
}
