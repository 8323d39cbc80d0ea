import type { Db } from '../../db/database.ts';
import type { FileImportFields } from '../imports/activity-import.ts';
import { importParams } from './import-params.ts';
import { importFileQueued } from './job-effects.ts';
import type { JobRow } from './job-fields.ts';
import { jobFilePath, removeJobFile, writeJobFile } from './job-files.ts';
import { insertJobs, newJobId } from './job-store.ts';

/**
 * Starts an import on the workers (docs/tracking-files.md, "Imports as jobs"): the file is written
 * to STORAGE_DIR and flushed first, then the job's row and its outbox job commit together, so a
 * 202 always names a job whose file and work exist. Nothing of the file is read here.
 */
export async function startImportJob(
  db: Db,
  storageDir: string,
  userId: string,
  file: { bytes: Uint8Array; contentType?: string | undefined; name?: string | undefined },
  fields: FileImportFields,
): Promise<JobRow> {
  const id = newJobId();
  const filePath = jobFilePath(id);
  await writeJobFile(storageDir, filePath, file.bytes);
  try {
    return await db.transaction().execute(async (trx) => {
      const [row] = await insertJobs(trx, [
        {
          id,
          userId,
          type: 'activity_import',
          params: importParams(fields),
          filePath,
          fileName: file.name ?? null,
          contentType: file.contentType ?? null,
        },
      ]);
      if (!row) throw new Error('the job was not written');
      await importFileQueued(trx, [row]);
      return row;
    });
  } catch (error) {
    await removeJobFile(storageDir, filePath);
    throw error;
  }
}
