import type { Db } from '../../db/database.ts';
import type { FileImportFields } from '../imports/activity-import.ts';
import { type TrackingWork, trackingWork } from '../unit-of-work.ts';
import { importParams } from './import-params.ts';
import { bulkSplitQueued, importFileQueued } from './job-effects.ts';
import type { JobRow } from './job-fields.ts';
import { jobFilePath, removeJobFile, writeJobFile } from './job-files.ts';
import { insertJobs, type NewJob, newJobId } from './job-store.ts';

type Queued = (uow: TrackingWork, row: JobRow) => void;

/**
 * A job about a file: the file is written to STORAGE_DIR and flushed first, then the job's row and
 * its outbox job commit together, so a 202 always names a job whose file and work exist. Nothing
 * of the file is read here.
 */
async function startFileJob(
  db: Db,
  storageDir: string,
  job: Omit<NewJob, 'id' | 'filePath'>,
  source: Uint8Array | AsyncIterable<Uint8Array>,
  queued: Queued,
): Promise<JobRow> {
  const id = newJobId();
  const filePath = jobFilePath(id);
  await writeJobFile(storageDir, filePath, source);
  try {
    return await trackingWork(db, async (uow) => {
      const [row] = await insertJobs(uow.trx, [{ ...job, id, filePath }]);
      if (!row) throw new Error('the job was not written');
      queued(uow, row);
      return row;
    });
  } catch (error) {
    await removeJobFile(storageDir, filePath);
    throw error;
  }
}

/** Starts an import of one file on the workers (docs/tracking-files.md, "Imports as jobs"). */
export function startImportJob(
  db: Db,
  storageDir: string,
  userId: string,
  file: { bytes: Uint8Array; contentType?: string | undefined; name?: string | undefined },
  fields: FileImportFields,
): Promise<JobRow> {
  const job = {
    userId,
    type: 'activity_import' as const,
    params: importParams(fields),
    fileName: file.name ?? null,
    contentType: file.contentType ?? null,
  };
  return startFileJob(db, storageDir, job, file.bytes, (uow, row) => importFileQueued(uow, [row]));
}

/**
 * Starts a bulk import (docs/tracking-files.md, "Bulk import"): the zip goes to disk as it
 * arrives; the workers split it into a job per file. `fields` apply to every file.
 */
export function startBulkImportJob(
  db: Db,
  storageDir: string,
  userId: string,
  zip: AsyncIterable<Uint8Array>,
  fields: FileImportFields,
): Promise<JobRow> {
  const job = { userId, type: 'bulk_import' as const, params: importParams(fields), contentType: 'application/zip' };
  return startFileJob(db, storageDir, job, zip, bulkSplitQueued);
}
