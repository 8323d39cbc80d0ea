import type { Db } from '../../db/database.ts';
import type { JobError } from '../../db/schema/jobs.ts';
import type { MarkDone } from '../../queue/outbox.ts';
import { refreshComputedClimbs } from '../activities/climb-store.ts';
import {
  enqueueRecompute,
  failedRecomputes,
  type RecomputeSummary,
  recomputeProgress,
} from '../records/recompute-requests.ts';
import type { RecomputeScope } from '../records/recompute-scope.ts';
import type { RecordsSettings } from '../records/settings.ts';
import { compactTime, enqueueSumupsRebuild, sumupsRebuildProgress } from '../sumups/rebuild-requests.ts';
import { enqueueThumbnailRebuild, thumbnailRebuildProgress } from '../thumbnail/thumbnail-rebuild.ts';
import { batchScopeOf, isBatchJobType } from './batch-params.ts';
import type { JobRow } from './job-fields.ts';
import { claimJob, endJob, recordJobProgress } from './job-store.ts';

/**
 * One run of a batch job's worker job (docs/tracking-records.md, "Recomputing"). The first run
 * claims the row, enqueues the work of its scope through the outbox (the functions the commands
 * use) and stores `total` and, in `result`, what it enqueued. Every run then measures where that
 * work stands, as the commands' `--wait` does, and stores it as the job's progress; the job ends
 * (`done`, or `failed` with its `error`) once nothing is pending. Until then the caller delays
 * the same BullMQ job (`checkInMs`): no worker slot is held while the work runs.
 */

export interface BatchRunOptions {
  storageDir: string;
  settings: RecordsSettings;
  /** The outbox row's done mark: set with the job's end only, so a lost delayed job is relayed again. */
  markDone: MarkDone;
}

interface Measure {
  /** Work items not done yet (and not failed for good). */
  pending: number;
  failed: number;
  /** Why the work cannot end (the workers use other records settings). */
  error?: JobError;
}

export type BatchRunOutcome =
  | { status: 'skipped'; jobId: string; reason: string }
  | { status: 'waiting'; jobId: string; checkInMs: number; total: number; done: number; failed: number }
  | { status: 'ended'; jobId: string; state: 'done' | 'failed'; total: number; done: number; failed: number };

/** Checks come every tenth of the time the job has run, between 1 s and 30 s: quick for small jobs, cheap for long ones. */
export function checkInMs(row: Pick<JobRow, 'started_at'>, now = Date.now()): number {
  const ran = row.started_at ? now - row.started_at.getTime() : 0;
  return Math.min(30_000, Math.max(1000, Math.round(ran / 10)));
}

/** The `requestedAt` of the jobs a batch enqueues: when it was asked, and its id (two batches never share jobs). */
export const batchRequestedAt = (row: Pick<JobRow, 'id' | 'created_at'>) =>
  `${compactTime(row.created_at)}-${row.id.slice(0, 12)}`;

/** The job, running: claimed when pending (once: `attempts` counts runs, not checks). */
async function runningJob(db: Db, userId: string, jobId: string): Promise<JobRow | undefined> {
  const row = await db
    .selectFrom('jobs')
    .selectAll()
    .where('id', '=', jobId)
    .where('user_id', '=', userId)
    .executeTakeFirst();
  if (row?.state === 'pending') return claimJob(db, userId, jobId);
  return row?.state === 'running' ? row : undefined;
}

/** Enqueues the work of the scope; what `total` counts and what `result` keeps to measure it later. */
async function enqueueWork(
  db: Db,
  row: JobRow,
  scope: RecomputeScope,
  options: BatchRunOptions,
): Promise<{ total: number; result: Record<string, unknown> }> {
  const who = 'userId' in scope ? { userId: scope.userId } : {};
  if (row.type === 'records_recompute') {
    // As the command: climbs computed under an older rule are brought to today's first.
    const climbs = await refreshComputedClimbs(db, who);
    const summary = await enqueueRecompute(db, { scope, settings: options.settings, force: false });
    return {
      total: summary.total,
      result: {
        activities: summary.total,
        enqueued: summary.enqueued,
        upToDate: summary.upToDate,
        settings: summary.settings,
        startedAt: summary.startedAt.toISOString(),
        climbs,
      },
    };
  }
  const requestedAt = batchRequestedAt(row);
  if (row.type === 'statistics_rebuild') {
    const climbs = await refreshComputedClimbs(db, who);
    const users = await enqueueSumupsRebuild(db, scope, requestedAt);
    return { total: users, result: { users, enqueued: users, requestedAt, climbs } };
  }
  const { activities, pictures } = await enqueueThumbnailRebuild(db, options.storageDir, {
    force: false,
    requestedAt,
    scope,
  });
  return {
    total: activities.total + pictures.total,
    result: { activities, pictures, enqueued: activities.enqueued + pictures.enqueued, requestedAt },
  };
}

/** Where the enqueued work stands. */
async function measure(db: Db, row: JobRow, scope: RecomputeScope, result: Record<string, unknown>): Promise<Measure> {
  if (row.type === 'records_recompute') {
    const summary: RecomputeSummary = {
      total: row.total ?? 0,
      enqueued: Number(result.enqueued),
      upToDate: Number(result.upToDate),
      settings: String(result.settings),
      forced: null,
      startedAt: new Date(String(result.startedAt)),
    };
    const [progress, failed] = await Promise.all([
      recomputeProgress(db, scope, summary),
      failedRecomputes(db, scope, summary),
    ]);
    if (progress.otherSettings !== null)
      return {
        pending: progress.pending,
        failed,
        error: {
          status: 500,
          title: 'The workers recompute with other records settings',
          detail: `A worker recomputed under settings ${progress.otherSettings}, this job asked for ${summary.settings}: give the API and the workers the same RECORDS_FAMILIES_FILE, then start the job again`,
        },
      };
    return { pending: Math.max(0, progress.pending - failed), failed: Math.min(failed, progress.pending) };
  }
  const requestedAt = String(result.requestedAt);
  return row.type === 'statistics_rebuild'
    ? sumupsRebuildProgress(db, requestedAt)
    : thumbnailRebuildProgress(db, requestedAt);
}

export async function runBatchJob(
  db: Db,
  { jobId, userId }: { jobId: string; userId: string },
  options: BatchRunOptions,
): Promise<BatchRunOutcome> {
  let row = await runningJob(db, userId, jobId);
  if (!row) return { status: 'skipped', jobId, reason: 'not pending or running (cancelled, or ended by a run before)' };
  if (!isBatchJobType(row.type)) throw new Error(`job ${jobId} is a ${row.type}, not a batch job`);
  const scope = batchScopeOf(row.params);
  if (row.result === null) {
    // A run stopped between enqueueing and this store enqueues again: the jobs' ids are the same.
    const { total, result } = await enqueueWork(db, row, scope, options);
    row = await recordJobProgress(db, userId, jobId, { total, result, done: 0, failed: 0 });
    if (!row) return { status: 'skipped', jobId, reason: 'ended meanwhile' };
  }
  const result = row.result ?? {};
  const total = row.total ?? 0;
  const { pending, failed, error } = await measure(db, row, scope, result);
  const done = Math.max(0, total - pending - failed);
  if (pending > 0 && !error) {
    await recordJobProgress(db, userId, jobId, { done, failed });
    return { status: 'waiting', jobId, checkInMs: checkInMs(row), total, done, failed };
  }
  const state = error || failed > 0 ? 'failed' : 'done';
  const failure: JobError | null =
    error ??
    (failed > 0
      ? {
          status: 500,
          title: 'Some of the work failed',
          detail: `${failed} of the jobs this batch enqueued failed for good: see the failed jobs of the ${row.type === 'thumbnails_rebuild' ? 'thumbnails' : 'records'} queue (npm run jobs)`,
        }
      : null);
  await db.transaction().execute(async (trx) => {
    await recordJobProgress(trx, userId, jobId, { done, failed });
    await endJob(trx, userId, jobId, { state, result, error: failure });
    await options.markDone(trx);
  });
  return { status: 'ended', jobId, state, total, done, failed };
}
