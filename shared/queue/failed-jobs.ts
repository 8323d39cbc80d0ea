import type { Job, Queue } from 'bullmq';
import type { Kysely } from 'kysely';
import type { Database } from '../db/schema/index.ts';
import { openFailedRows, settleOpenedRows } from './outbox-reopen.ts';
import type { JobCountState } from './queues.ts';

/**
 * What an operator does about failed jobs (docs/operations.md, "Failed jobs"): list them, retry
 * them once the cause is fixed, or remove them; for `npm run jobs`. The queue dashboard does the
 * same through bull-board, with the same outbox handling (outbox-reopen.ts).
 */

/** One job as `npm run jobs -- list` prints it. */
export interface JobSummary {
  id: string;
  name: string;
  state: JobCountState;
  attemptsMade: number;
  failedReason: string | null;
  /** The last attempt's stack, if it failed. */
  stack: string | null;
  data: unknown;
  createdAt: string;
  finishedAt: string | null;
}

const iso = (ms: number | undefined) => (ms ? new Date(ms).toISOString() : null);

function summary(job: Job, state: JobCountState): JobSummary {
  return {
    id: String(job.id),
    name: job.name,
    state,
    attemptsMade: job.attemptsMade,
    failedReason: job.failedReason || null,
    stack: job.stacktrace?.at(-1) ?? null,
    data: job.data,
    createdAt: new Date(job.timestamp).toISOString(),
    finishedAt: iso(job.finishedOn),
  };
}

/** The newest `limit` jobs of a state and how many the state holds. */
export async function listJobs(
  queue: Queue,
  state: JobCountState,
  limit: number,
): Promise<{ total: number; jobs: JobSummary[] }> {
  const [total, jobs] = await Promise.all([queue.getJobCountByTypes(state), queue.getJobs([state], 0, limit - 1)]);
  return { total, jobs: jobs.filter(Boolean).map((j) => summary(j as Job, state)) };
}

/** A job the operator named is not there, or not failed: nothing was done. */
export class JobNotFailedError extends Error {}

/**
 * The ids of the failed jobs to act on: the one named (checked to be failed), or every failed job
 * at the time of the call. Taken once, so a job that fails again meanwhile is not acted on twice.
 */
async function failedIds(queue: Queue, id: string | undefined): Promise<string[]> {
  if (id === undefined) return queue.getRanges(['failed'], 0, -1);
  const state = await queue.getJobState(id);
  if (state !== 'failed')
    throw new JobNotFailedError(
      state === 'unknown'
        ? `no job ${id} in queue ${queue.name}`
        : `job ${id} of queue ${queue.name} is ${state}, not failed`,
    );
  return [id];
}

/** A job that could not be acted on (it moved on meanwhile, or a worker holds it) and why. */
export interface Skipped {
  id: string;
  reason: string;
}

/** Jobs acted on at once. */
const PAGE = 100;

/** Runs `act` on each job, a page at a time. */
async function eachJob(
  queue: Queue,
  ids: string[],
  act: (job: Job) => Promise<void>,
): Promise<{ done: string[]; skipped: Skipped[] }> {
  const done: string[] = [];
  const skipped: Skipped[] = [];
  for (let i = 0; i < ids.length; i += PAGE) {
    await Promise.all(
      ids.slice(i, i + PAGE).map(async (id) => {
        const job = await queue.getJob(id);
        if (!job) return skipped.push({ id, reason: 'no longer in Redis' });
        try {
          await act(job);
          done.push(id);
        } catch (error) {
          skipped.push({ id, reason: (error as Error).message });
        }
      }),
    );
  }
  return { done, skipped };
}

/**
 * Retries failed jobs (one more attempt each, as the dashboard does: a job that fails again is
 * failed at once rather than after another round of backoff) and opens their outbox rows again
 * (outbox-reopen.ts), a page of jobs at a time.
 */
export async function retryFailedJobs(
  db: Kysely<Database>,
  queue: Queue,
  id?: string,
): Promise<{ retried: string[]; skipped: Skipped[]; reopenedOutboxRows: number }> {
  const ids = await failedIds(queue, id);
  const result = { retried: [] as string[], skipped: [] as Skipped[], reopenedOutboxRows: 0 };
  for (let i = 0; i < ids.length; i += PAGE) {
    const page = ids.slice(i, i + PAGE);
    const opened = await openFailedRows(db, queue.name, page);
    const { done, skipped } = await eachJob(queue, page, (job) => job.retry('failed'));
    result.retried.push(...done);
    result.skipped.push(...skipped);
    result.reopenedOutboxRows += await settleOpenedRows(db, queue, opened);
  }
  return result;
}

/**
 * Removes failed jobs from Redis. Their outbox rows stay failed (`outbox_failed_rows`) until
 * purged: removing is giving up on the work, which the metric keeps visible.
 */
export async function removeFailedJobs(queue: Queue, id?: string): Promise<{ removed: string[]; skipped: Skipped[] }> {
  const { done, skipped } = await eachJob(queue, await failedIds(queue, id), (job) => job.remove());
  return { removed: done, skipped };
}
