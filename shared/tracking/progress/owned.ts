import { type Kysely, sql } from 'kysely';
import type { Database } from '../../db/schema/index.ts';

/** The collections of migration 0069 a user holds a bounded number of. */
export type OwnedCollection = 'user_equipments' | 'user_measure_goals' | 'user_challenges';

/** Serializes a user's creations in one collection (in the caller's transaction): two at once cannot both pass the count. */
export async function lockOwnedCollection(
  trx: Kysely<Database>,
  table: OwnedCollection,
  userId: string,
): Promise<void> {
  await sql`select pg_advisory_xact_lock(hashtext(${table}), hashtext(${userId}))`.execute(trx);
}

/** How many rows of `table` the user holds. */
export async function countOwned(trx: Kysely<Database>, table: OwnedCollection, userId: string): Promise<number> {
  const { rows } = await sql<{ n: number }>`
    select count(*)::int as n from ${sql.table(table)} where user_id = ${userId}`.execute(trx);
  return rows[0]?.n ?? 0;
}

/**
 * Deletes a user's gear, measure goals and challenges (an account's deletion,
 * shared/tracking/account-deletion-steps.ts): a few hundred rows at most, in the caller's transaction.
 * What their activities added (activity_progress_state) goes with the tracking user.
 */
export async function deleteUserProgress(trx: Kysely<Database>, userId: string): Promise<Record<string, number>> {
  const counts: Record<string, number> = {};
  for (const table of ['user_equipments', 'user_measure_goals', 'user_challenges'] as const) {
    const deleted = await trx.deleteFrom(table).where('user_id', '=', userId).executeTakeFirst();
    counts[table.replace(/^user_/, '')] = Number(deleted.numDeletedRows);
  }
  return counts;
}
