import type { Db } from '../../shared/db/database.ts';
import { waitFor } from './failing-jobs.ts';

/** Outbox rows whose job has not completed yet. */
export async function openOutboxRows(db: Db): Promise<number> {
  const { n } = await db
    .selectFrom('outbox')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('done_at', 'is', null)
    .executeTakeFirstOrThrow();
  return Number(n);
}

/** Waits up to `ms` for every outbox row to be done; resolves with how many are still open. */
export async function drainOutbox(db: Db, ms = 120_000): Promise<number> {
  await waitFor(async () => (await openOutboxRows(db)) === 0, ms);
  return openOutboxRows(db);
}
