import type { Db } from '../../db/database.ts';
import type { MarkDone } from '../../queue/outbox.ts';
import { DuplicateActivityError } from '../activities/duplicates.ts';
import { importActivity } from '../imports/activity-import.ts';
import type { ActivityImportPool } from '../imports/pool.ts';
import { trackingWork } from '../unit-of-work.ts';
import { jobErrorOf, serverFailure } from './import-errors.ts';
import { importFields } from './import-params.ts';
import { childEnded, importEnded } from './job-effects.ts';
import type { JobRow } from './job-fields.ts';
import { readJobFile, removeJobFile } from './job-files.ts';
import { claimJob, endJob, type JobEnd } from './job-store.ts';

/**
 * The `imports/import-file` job (docs/tracking-files.md, "Imports as jobs"): the same use case
 * as the synchronous import (shared/tracking/imports/activity-import.ts: the file read in an
 * import thread, duplicates, the device, the sport, what an activity may hold), then the job
 * ended with its activity or the refusal the synchronous path would answer, its web hook event
 * (or, for a bulk import's file, its count on the parent) in the same transaction.
 */

export interface ImportJobOptions {
  storageDir: string;
  pool: ActivityImportPool;
  markDone: MarkDone;
  /** The last attempt: an unexpected error ends the job failed instead of being retried. */
  lastAttempt: boolean;
}

export type ImportJobOutcome =
  | { status: 'done'; jobId: string; activityId: string }
  | { status: 'failed'; jobId: string; error: number }
  | { status: 'skipped'; jobId: string; reason: string };

/** Ends the job in one transaction with its side effects and the outbox row's done mark. */
async function end(db: Db, row: JobRow, outcome: JobEnd, markDone: MarkDone): Promise<JobRow | undefined> {
  return trackingWork(db, async (uow) => {
    const ended = await endJob(uow.trx, row.user_id, row.id, outcome);
    if (ended) {
      importEnded(uow, ended);
      await childEnded(uow, ended, ended.state === 'done' ? 'done' : 'failed');
    }
    await markDone(uow.trx);
    return ended;
  });
}

/**
 * A rerun of a job whose worker stopped between storing the activity and ending the job finds
 * its own activity as a duplicate of the same file, stored since the job started: that activity
 * is the job's.
 */
async function ownActivity(db: Db, row: JobRow, error: unknown): Promise<string | undefined> {
  if (!(error instanceof DuplicateActivityError) || error.rule !== 'file' || row.attempts < 2 || !row.started_at)
    return undefined;
  const found = await db
    .selectFrom('activities')
    .select('id')
    .where('id', '=', error.existingId)
    .where('user_id', '=', row.user_id)
    .where('created_at', '>=', row.started_at)
    .executeTakeFirst();
  return found?.id;
}

/**
 * Why a job's worker found nothing to claim; a job cancelled before it started leaves its stored
 * file to its worker, removed here.
 */
export async function notClaimed(
  db: Db,
  storageDir: string,
  { jobId, userId }: { jobId: string; userId: string },
): Promise<string> {
  const gone = await db
    .selectFrom('jobs')
    .select(['state', 'file_path'])
    .where('id', '=', jobId)
    .where('user_id', '=', userId)
    .executeTakeFirst();
  if (gone?.state === 'cancelled') await removeJobFile(storageDir, gone.file_path);
  return gone ? `job ${gone.state}` : 'job deleted';
}

export async function runImportJob(
  db: Db,
  { jobId, userId }: { jobId: string; userId: string },
  options: ImportJobOptions,
): Promise<ImportJobOutcome> {
  const row = await claimJob(db, userId, jobId);
  if (!row) return { status: 'skipped', jobId, reason: await notClaimed(db, options.storageDir, { jobId, userId }) };
  if (!row.file_path) throw new Error(`job ${jobId} has no file`);
  const bytes = await readJobFile(options.storageDir, row.file_path);
  const fields = importFields(row.params, row.parent_id !== null);
  try {
    const created = await importActivity(
      db,
      options.pool,
      row.user_id,
      { bytes, ...(row.content_type ? { contentType: row.content_type } : {}) },
      fields,
    );
    const result = { format: created.format, sportSource: created.sportSource, warnings: created.warnings };
    await end(db, row, { state: 'done', activityId: created.row.id, result }, options.markDone);
    await removeJobFile(options.storageDir, row.file_path);
    return { status: 'done', jobId, activityId: created.row.id };
  } catch (error) {
    const own = await ownActivity(db, row, error);
    if (own) {
      await end(db, row, { state: 'done', activityId: own, result: { rerun: true } }, options.markDone);
      await removeJobFile(options.storageDir, row.file_path);
      return { status: 'done', jobId, activityId: own };
    }
    const refusal = jobErrorOf(error) ?? (options.lastAttempt ? serverFailure() : undefined);
    if (!refusal) throw error;
    await end(db, row, { state: 'failed', error: refusal }, options.markDone);
    await removeJobFile(options.storageDir, row.file_path);
    return { status: 'failed', jobId, error: refusal.status };
  }
}
