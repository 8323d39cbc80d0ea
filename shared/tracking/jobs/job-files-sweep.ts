import path from 'node:path';
import type { Db } from '../../db/database.ts';
import { sweepOrphanFiles } from '../../media/orphan-files.ts';
import { IMPORTS_STORAGE_DIR } from './job-files.ts';

/**
 * Removes, from the imports folder, the files older than ORPHAN_JOB_FILE_AGE_S that no job row
 * names: a job cancelled before its worker ran, the files a bulk import's split wrote before a
 * crash undid its transaction, the temporary files of a killed write. Run by the daily cleanup
 * (workers/processors/exports.ts); running it twice or on several workers at once is harmless.
 */

/** A running import writes its files before its row names them: younger ones are left alone. */
export const ORPHAN_JOB_FILE_AGE_S = 24 * 3600;

/** The job a file belongs to (`<id>`, `<id>.<random>.tmp`). */
const FILE_ID = /^([0-9a-f]{32})(\.[0-9a-f]+\.tmp)?$/;

export function sweepOrphanJobFiles(db: Db, storageDir: string, now = new Date()): Promise<number> {
  return sweepOrphanFiles({
    folder: path.resolve(storageDir, IMPORTS_STORAGE_DIR),
    fileId: FILE_ID,
    minAgeS: ORPHAN_JOB_FILE_AGE_S,
    now,
    named: (ids) => openJobsOf(db, ids),
  });
}

/** Of these ids, those of jobs not ended that still hold their file. */
async function openJobsOf(db: Db, ids: string[]): Promise<string[]> {
  const rows = await db
    .selectFrom('jobs')
    .select('id')
    .where('id', 'in', ids)
    .where('file_path', 'is not', null)
    .where('state', 'in', ['pending', 'running'])
    .execute();
  return rows.map((r) => r.id);
}
