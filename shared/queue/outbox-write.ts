import { type Kysely, type RawBuilder, sql, type Transaction } from 'kysely';
import type { Database } from '../db/schema/index.ts';
import { requestContext } from '../observability/request-context.ts';
import { tracing } from '../observability/tracing.ts';
import { jobIdProblem, type OutboxJob } from './jobs.ts';

/**
 * The one writer of outbox rows (docs/CONTRIBUTING-internals.md, "Side effects"): every job a
 * change causes is an outbox row written in the change's transaction, so it exists exactly when
 * the data it follows exists; the relays (outbox-relay.ts) move the rows to BullMQ.
 */

/**
 * The outbox rows of `jobs`, for a writer that inserts them itself (in a statement that writes
 * the data they follow: shared/tracking/activities/store.ts). Throws for a job id BullMQ would refuse.
 */
export function outboxRows(jobs: OutboxJob[]): OutboxRow[] {
  // Checked at the write: BullMQ would refuse the row and the relay would retry its batch forever.
  for (const j of jobs) {
    const problem = jobIdProblem(j.jobId);
    if (problem) throw new Error(`invalid job id "${j.jobId}" for ${j.queue}/${j.name}: ${problem}`);
  }
  // The request (or job) writing the rows, if any; with OpenTelemetry on, the active span is the
  // parent to continue (it carries the client's trace id when the client sent one).
  const context = requestContext();
  const traceparent = tracing().activeTraceparent() ?? context?.traceparent ?? null;
  return jobs.map((j) => ({
    queue: j.queue,
    job_name: j.name,
    job_id: j.jobId,
    payload: JSON.stringify(j.payload),
    request_id: context?.requestId ?? null,
    traceparent,
  }));
}

export interface OutboxRow {
  queue: string;
  job_name: string;
  job_id: string;
  payload: string;
  request_id: string | null;
  traceparent: string | null;
}

/**
 * The statement that writes `jobs`' outbox rows: alone (enqueueInTransaction), or as a
 * data-modifying CTE of a writer's own statement, where `after` names the CTE whose row the jobs
 * follow (they are written only when it returned one: shared/tracking/activities/store.ts, the
 * web hook events). Undefined when there is no job.
 */
export function outboxInsert(jobs: OutboxJob[], after?: string): RawBuilder<unknown> | undefined {
  const rows = outboxRows(jobs);
  if (rows.length === 0) return undefined;
  const values = rows.map(
    (j) =>
      sql`(${j.queue}::text, ${j.job_name}::text, ${j.job_id}::text, ${j.payload}::jsonb, ${j.request_id}::text, ${j.traceparent}::text)`,
  );
  return sql`insert into outbox (queue, job_name, job_id, payload, request_id, traceparent)
    select j.queue, j.job_name, j.job_id, j.payload, j.request_id, j.traceparent
    from ${after === undefined ? sql`` : sql`${sql.table(after)}, `}(values ${sql.join(values)})
      as j (queue, job_name, job_id, payload, request_id, traceparent)`;
}

/** Stores jobs (built with `job()` of jobs.ts) in the caller's transaction. */
export async function enqueueInTransaction(
  trx: Transaction<Database> | Kysely<Database>,
  jobs: OutboxJob | OutboxJob[],
): Promise<void> {
  const insert = outboxInsert(Array.isArray(jobs) ? jobs : [jobs]);
  if (insert) await insert.execute(trx);
}
