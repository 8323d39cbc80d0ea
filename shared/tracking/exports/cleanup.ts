import path from 'node:path';
import { sql } from 'kysely';
import type { Db } from '../../db/database.ts';
import { sweepOrphanFiles as sweepOrphanExportFiles } from '../../media/orphan-files.ts';
import { removeStorageFile } from '../../media/storage.ts';
import { EXPORTS_STORAGE_DIR, exportStoragePath, failStaleExports } from './store.ts';

/**
 * The `exports/cleanup-expired` job (docs/tracking-exports.md), run by the queue's job scheduler:
 * fails the exports stuck in progress, deletes the expired ones with their files, and sweeps the
 * files no row names any more (a deleted user's, the temporary files of a killed run). Every step
 * only removes what is over, so running it twice, or on several workers at once, is harmless.
 */

export interface CleanupResult {
  failed: number;
  deleted: number;
  orphanFiles: number;
}

/** Rows deleted per statement, so one run never holds a long lock on a large backlog. */
const BATCH = 500;

/**
 * A file the exports folder holds without a row is swept only once it is this old: a running job
 * writes its temporary files before its row says done.
 */
export const ORPHAN_FILE_AGE_S = 24 * 3600;

/** The export id a file of the exports folder belongs to (`<id>.zip`, `<id>.zip.<random>.tmp`…). */
const FILE_ID = /^([0-9a-f]{32})\.zip(\.[0-9a-f]+(\.json)?\.tmp)?$/;

export async function cleanupExports(
  db: Db,
  storageDir: string,
  ttlSeconds: number,
  now = new Date(),
): Promise<CleanupResult> {
  const failed = await failStaleExports(db, ttlSeconds);
  let deleted = 0;
  for (;;) {
    const rows = await db
      .deleteFrom('tracking_exports')
      .where(
        'id',
        'in',
        db.selectFrom('tracking_exports').select('id').where('expires_at', '<=', sql<Date>`now()`).limit(BATCH),
      )
      .returning(['id', 'file_path'])
      .execute();
    for (const row of rows) await removeStorageFile(storageDir, row.file_path ?? exportStoragePath(row.id));
    deleted += rows.length;
    if (rows.length < BATCH) break;
  }
  return { failed, deleted, orphanFiles: await sweepOrphanFiles(db, storageDir, now) };
}

/**
 * Removes, from the exports folder, the files older than ORPHAN_FILE_AGE_S that no row names
 * (a deleted user's) and the temporary files (a killed run's: no run lasts that long, see
 * STALE_EXPORT_S).
 */
function sweepOrphanFiles(db: Db, storageDir: string, now: Date): Promise<number> {
  return sweepOrphanExportFiles({
    folder: path.resolve(storageDir, EXPORTS_STORAGE_DIR),
    fileId: FILE_ID,
    minAgeS: ORPHAN_FILE_AGE_S,
    now,
    named: (ids) => exportsOf(db, ids),
  });
}

/** Of these ids, those of exports that still exist (their files are kept). */
async function exportsOf(db: Db, ids: string[]): Promise<string[]> {
  return (await db.selectFrom('tracking_exports').select('id').where('id', 'in', ids).execute()).map((r) => r.id);
}
