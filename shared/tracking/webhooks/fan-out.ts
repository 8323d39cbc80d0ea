import { sql } from 'kysely';
import type { Db } from '../../db/database.ts';
import { job, type OutboxJob } from '../../queue/jobs.ts';

export interface FanOutOutcome {
  /** Events fanned out (this one and earlier ones of the user whose own job had not run yet). */
  events: number;
  /** Deliveries whose jobs were added (made now, or made earlier and still open). */
  deliveries: number;
}

/** Adds jobs to BullMQ (the worker's addJobs: at once, without outbox rows). */
export type AddJobs = (jobs: OutboxJob[]) => Promise<void>;

/**
 * The `webhooks/event` job: one delivery per enabled hook of the user listening to the event's
 * type (none while the account is disabled), in one transaction; then the job of each, added to BullMQ at once. The user's earlier
 * events not fanned out yet go first (their own jobs may run late, or in parallel): a hook's
 * deliveries about one subject always exist in event order, which the order of sending relies on
 * (deliver.ts).
 *
 * Never lost: the event's own outbox row is marked done only once this returns, so a run that
 * stopped between its commit and the adds runs again; a run that finds its event fanned out
 * already (by itself, or by a later event of the user) adds the jobs of the event's open
 * deliveries again (BullMQ keeps one job per id). Jobs Redis loses later are added again by the
 * sweep (sweep.ts).
 */
export async function fanOutEvent(db: Db, eventId: string, addJobs: AddJobs): Promise<FanOutOutcome> {
  const made = await db.transaction().execute(async (trx) => {
    // Locked: two fan-outs never make the same event's deliveries; one that waited skips the
    // events fanned out meanwhile.
    const pending = await sql<{ id: string }>`
      select p.id from webhook_events e
      join webhook_events p on p.user_id = e.user_id and p.seq <= e.seq and not p.fanned_out
      where e.id = ${eventId}
      order by p.seq
      for update of p`.execute(trx);
    const ids = pending.rows.map((p) => p.id);
    if (ids.length === 0) return { events: [], deliveries: [] };
    const inserted = await sql<{ id: string }>`
      with fanned as (update webhook_events set fanned_out = true where id = any(${ids}::text[]))
      insert into webhook_deliveries (id, hook_id, event_id, seq, subject)
      select 'msg_' || replace(gen_random_uuid()::text, '-', ''), h.id, e.id, e.seq, e.subject
      from webhook_events e
      join user_web_hooks h on h.user_id = e.user_id and e.type = any(h.events) and h.disabled_at is null
      join tracking_users u on u.id = e.user_id
      join accounts a on a.id = u.account_id and a.disabled_at is null
      where e.id = any(${ids}::text[])
      order by e.seq
      on conflict (hook_id, event_id) do nothing
      returning id`.execute(trx);
    return { events: ids, deliveries: inserted.rows.map((r) => r.id) };
  });
  const deliveries = made.events.includes(eventId)
    ? made.deliveries
    : [...made.deliveries, ...(await openDeliveriesOf(db, eventId))];
  await addJobs(deliveries.map((deliveryId) => job('webhooks', 'deliver', { deliveryId })));
  return { events: made.events.length, deliveries: deliveries.length };
}

/** The open deliveries of an event, in the order they were made. */
async function openDeliveriesOf(db: Db, eventId: string): Promise<string[]> {
  const rows = await db
    .selectFrom('webhook_deliveries')
    .select('id')
    .where('event_id', '=', eventId)
    .where('state', '=', 'queued')
    .execute();
  return rows.map((r) => r.id);
}
