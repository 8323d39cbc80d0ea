import { sql } from 'kysely';
import type { Db } from '../../db/database.ts';
import { job } from '../../queue/jobs.ts';
import { enqueueInTransaction, type MarkDone } from '../../queue/outbox.ts';

export interface FanOutOutcome {
  /** Events fanned out (this one and earlier ones of the user whose own job had not run yet). */
  events: number;
  /** Deliveries made, each with its job. */
  deliveries: number;
}

/**
 * The `webhooks/event` job: one delivery, with its job, per enabled hook of the user listening to
 * the event's type, in one transaction with the job's done mark. The user's earlier events not
 * fanned out yet go first (their own jobs may run late, or in parallel): a hook's deliveries about
 * one subject always exist in event order, which the order of sending relies on (deliver.ts).
 */
export async function fanOutEvent(db: Db, eventId: string, markDone: MarkDone): Promise<FanOutOutcome> {
  return db.transaction().execute(async (trx) => {
    // Locked: two fan-outs never make the same event's deliveries; one that waited skips the
    // events fanned out meanwhile.
    const pending = await sql<{ id: string }>`
      select p.id from webhook_events e
      join webhook_events p on p.user_id = e.user_id and p.seq <= e.seq and not p.fanned_out
      where e.id = ${eventId}
      order by p.seq
      for update of p`.execute(trx);
    const ids = pending.rows.map((p) => p.id);
    let deliveries: string[] = [];
    if (ids.length > 0) {
      const made = await sql<{ id: string }>`
        with fanned as (update webhook_events set fanned_out = true where id = any(${ids}::text[]))
        insert into webhook_deliveries (id, hook_id, event_id, seq, subject)
        select 'msg_' || replace(gen_random_uuid()::text, '-', ''), h.id, e.id, e.seq, e.subject
        from webhook_events e
        join user_web_hooks h on h.user_id = e.user_id and e.type = any(h.events) and h.disabled_at is null
        where e.id = any(${ids}::text[])
        on conflict (hook_id, event_id) do nothing
        returning id`.execute(trx);
      deliveries = made.rows.map((r) => r.id);
      await enqueueInTransaction(
        trx,
        deliveries.map((deliveryId) => job('webhooks', 'deliver', { deliveryId })),
      );
    }
    await markDone(trx);
    return { events: ids.length, deliveries: deliveries.length };
  });
}
