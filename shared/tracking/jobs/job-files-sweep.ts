import { readdir, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import type { Db } from '../../db/database.ts';
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

const BATCH = 500;

export async function sweepOrphanJobFiles(db: Db, storageDir: string, now = new Date()): Promise<number> {
  const folder = path.resolve(storageDir, IMPORTS_STORAGE_DIR);
  const names = await readdir(folder).catch(() => [] as string[]);
  const old: { name: string; id: string; temporary: boolean }[] = [];
  for (const name of names) {
    const match = FILE_ID.exec(name);
    if (!match?.[1]) continue;
    const info = await stat(path.join(folder, name)).catch(() => undefined);
    if (info?.isFile() && now.getTime() - info.mtimeMs >= ORPHAN_JOB_FILE_AGE_S * 1000)
      old.push({ name, id: match[1], temporary: match[2] !== undefined });
  }
  const ids = [...new Set(old.filter((f) => !f.temporary).map((f) => f.id))];
  const named = new Set<string>();
  for (let i = 0; i < ids.length; i += BATCH) {
    const rows = await db
      .selectFrom('jobs')
      .select('id')
      .where('id', 'in', ids.slice(i, i + BATCH))
      .where('file_path', 'is not', null)
      .where('state', 'in', ['pending', 'running'])
      .execute();
    for (const r of rows) named.add(r.id);
  }
  let removed = 0;
  for (const file of old) {
    if (!file.temporary && named.has(file.id)) continue;
    await rm(path.join(folder, file.name), { force: true });
    removed++;
  }
  return removed;
}
