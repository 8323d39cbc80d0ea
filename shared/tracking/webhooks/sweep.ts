import { sql } from 'kysely';
import type { Db } from '../../db/database.ts';
import { job } from '../../queue/jobs.ts';
import type { AddJobs } from './fan-out.ts';

/**
 * The reconciler of the deliveries (docs/webhooks.md, "Operations"). A delivery's job is added to
 * BullMQ by its event's fan-out, without an outbox row: the open delivery row is its record. A
 * Redis that lost its data (a restart without persistence, a failover) lost those jobs, so the
 * open deliveries of events older than `afterSeconds` whose job Redis does not know are added
 * again. A job Redis keeps as failed (our errors, past its attempts) waits for an operator, as
 * the outbox's failed rows do.
 */

/** The BullMQ state of a job id (`unknown` when Redis has no such job), as Queue.getJobState says. */
export type JobStateOf = (jobId: string) => Promise<string>;

export interface SweepResult {
  /** Open deliveries looked at. */
  checked: number;
  /** Jobs Redis no longer had: added again. */
  added: number;
}

/** Deliveries looked up in Redis at once. */
const PAGE = 500;

export async function sweepLostDeliveries(
  db: Db,
  stateOf: JobStateOf,
  addJobs: AddJobs,
  afterSeconds: number,
): Promise<SweepResult> {
  const result: SweepResult = { checked: 0, added: 0 };
  // Pages in the order of the partial index of open deliveries (hook, subject, seq).
  let after: { hook_id: string; subject: string; seq: string } | undefined;
  for (;;) {
    const { rows } = await sql<{ id: string; hook_id: string; subject: string; seq: string }>`
      select d.id, d.hook_id, d.subject, d.seq from webhook_deliveries d
      join webhook_events e on e.id = d.event_id
      where d.state = 'queued' and e.occurred_at < now() - make_interval(secs => ${afterSeconds})
        ${after ? sql`and (d.hook_id, d.subject, d.seq) > (${after.hook_id}, ${after.subject}, ${after.seq})` : sql``}
      order by d.hook_id, d.subject, d.seq
      limit ${PAGE}`.execute(db);
    if (rows.length === 0) return result;
    const jobs = rows.map((r) => job('webhooks', 'deliver', { deliveryId: r.id }));
    const states = await Promise.all(jobs.map((j) => stateOf(j.jobId)));
    const lost = jobs.filter((_, i) => states[i] === 'unknown');
    await addJobs(lost);
    result.checked += rows.length;
    result.added += lost.length;
    if (rows.length < PAGE) return result;
    after = rows.at(-1);
  }
}
