import { readdir, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import { sql } from 'kysely';
import type { Db } from '../../db/database.ts';
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
async function sweepOrphanFiles(db: Db, storageDir: string, now: Date): Promise<number> {
  const folder = path.resolve(storageDir, EXPORTS_STORAGE_DIR);
  const names = await readdir(folder).catch(() => [] as string[]);
  const old: { name: string; id: string; temporary: boolean }[] = [];
  for (const name of names) {
    const match = FILE_ID.exec(name);
    if (!match?.[1]) continue;
    const info = await stat(path.join(folder, name)).catch(() => undefined);
    if (info?.isFile() && now.getTime() - info.mtimeMs >= ORPHAN_FILE_AGE_S * 1000)
      old.push({ name, id: match[1], temporary: match[2] !== undefined });
  }
  const ids = [...new Set(old.filter((f) => !f.temporary).map((f) => f.id))];
  const known = new Set<string>();
  for (let i = 0; i < ids.length; i += BATCH) {
    const rows = await db
      .selectFrom('tracking_exports')
      .select('id')
      .where('id', 'in', ids.slice(i, i + BATCH))
      .execute();
    for (const r of rows) known.add(r.id);
  }
  let removed = 0;
  for (const file of old) {
    if (!file.temporary && known.has(file.id)) continue;
    await rm(path.join(folder, file.name), { force: true });
    removed++;
  }
  return removed;
}
