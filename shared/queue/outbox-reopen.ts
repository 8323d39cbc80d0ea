import type { Queue } from 'bullmq';
import { type Kysely, sql } from 'kysely';
import type { Database } from '../db/schema/index.ts';
import { bullJobId, outboxJobId } from './outbox-epoch.ts';

/**
 * The outbox side of retrying failed jobs (`npm run jobs -- retry`, the queue dashboard): a
 * retried job's rows are open again, so `outbox_failed_rows` falls at once and the reconciler
 * watches them as it watches any relayed row.
 *
 * Rows are opened before the retry and settled after it, never the other way round: a retried job
 * that fails again at once then finds its row open and the worker marks it failed (markOutboxFailed
 * only marks open rows), whichever of the worker and the settling comes first.
 */

/** Rows opened for a retry, with the failure time they had. */
export interface OpenedRow {
  id: number;
  /** The BullMQ id of the row's job. */
  jobId: string;
  failedAt: Date;
}

/**
 * Opens the failed rows (not done) of these jobs of `queue` (BullMQ ids), or of every failed job
 * of the queue: `failed_at` cleared, `checked_at` now (the reconciler gives them a fresh relay's grace).
 */
export async function openFailedRows(
  db: Kysely<Database>,
  queue: string,
  jobIds?: readonly string[],
): Promise<OpenedRow[]> {
  if (jobIds?.length === 0) return [];
  const { rows } = await sql<{ id: number; job_id: string; epoch: number; reruns: number; failed_at: Date }>`
    update outbox o set failed_at = null, checked_at = now()
    from (
      select id, failed_at from outbox
      where queue = ${queue} and done_at is null and failed_at is not null
        ${jobIds ? sql`and job_id = any(${jobIds.map(outboxJobId)}::text[])` : sql``}
      for update
    ) old
    where o.id = old.id
    returning o.id, o.job_id, o.epoch, o.reruns, old.failed_at`.execute(db);
  return rows.map((r) => ({ id: r.id, jobId: bullJobId(r.job_id, Number(r.epoch), r.reruns), failedAt: r.failed_at }));
}

/**
 * After the retry: the rows whose job did not leave the failed state (its retry was refused, or
 * it failed again already) or is gone from Redis are failed again, with their old failure time;
 * the others stay open. Returns how many stay open.
 */
export async function settleOpenedRows(db: Kysely<Database>, queue: Queue, rows: OpenedRow[]): Promise<number> {
  const failed: OpenedRow[] = [];
  // Chunks bound the state lookups in flight.
  for (let i = 0; i < rows.length; i += 500) {
    const chunk = rows.slice(i, i + 500);
    const states = await Promise.all(chunk.map((r) => queue.getJobState(r.jobId)));
    failed.push(...chunk.filter((_, j) => states[j] === 'failed' || states[j] === 'unknown'));
  }
  if (failed.length > 0)
    // coalesce: the worker may have marked a row failed again meanwhile; its time is kept.
    await sql`
      update outbox o set failed_at = coalesce(o.failed_at, r.failed_at)
      from unnest(${failed.map((r) => String(r.id))}::bigint[], ${failed.map((r) => r.failedAt.toISOString())}::timestamptz[])
        as r(id, failed_at)
      where o.id = r.id and o.done_at is null`.execute(db);
  return rows.length - failed.length;
}
