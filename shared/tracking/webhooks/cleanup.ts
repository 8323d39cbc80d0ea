import { sql } from 'kysely';
import type { Db } from '../../db/database.ts';

/** Events are kept this long once none of their deliveries is open (deliveries go with them). */
export const EVENT_RETENTION = '3 days';

/** Deletes the events past EVENT_RETENTION whose deliveries have all ended; returns how many. */
export async function purgeWebhookEvents(db: Db): Promise<number> {
  const result = await sql`
    delete from webhook_events e
    where e.occurred_at < now() - ${EVENT_RETENTION}::interval and e.fanned_out
      and not exists (select from webhook_deliveries d where d.event_id = e.id and d.state = 'queued')`.execute(db);
  return Number(result.numAffectedRows ?? 0);
}
