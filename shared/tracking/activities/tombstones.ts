import { type Selectable, sql } from 'kysely';
import type { Db } from '../../db/database.ts';
import { type DateBounds, type Found, type PageRequest, pageOf, whereDateBounds } from '../../db/paging.ts';
import type { ActivityTombstonesTable } from '../../db/schema/tombstones.ts';

/**
 * Tombstones of deleted activities (migration 0060, docs/tracking-sync.md): a sync client reads
 * what went since its last sync at /v2/deleted_activities. One is written by the transaction that
 * deletes the activity, so it exists exactly when the activity is gone; an account deletion
 * writes none (the user is gone too). Activity ids are random and never reused, so a tombstone
 * is for good. Each is kept TRACKING_TOMBSTONE_TTL_S, then the `maintenance` queue's
 * `tombstones-expire` job deletes it.
 */

export type ActivityTombstone = Selectable<ActivityTombstonesTable>;

/** Writes the tombstone of `row`, the activity the caller's transaction `trx` deletes. */
export async function buryActivity(trx: Db, row: { id: string; user_id: string }): Promise<void> {
  await trx.insertInto('activity_tombstones').values({ activity_id: row.id, user_id: row.user_id }).execute();
}

export const TOMBSTONE_ORDERS = ['deletedAt'] as const;
export type TombstoneOrder = { prop: (typeof TOMBSTONE_ORDERS)[number]; direction: 'asc' | 'desc' };

export interface TombstoneFilter {
  deletedAt?: DateBounds;
  /** Oldest first when empty (a sync reads in that order); ties by activity id, the same way. */
  order?: TombstoneOrder[];
}

/** The caller's tombstones matching `filter`, ordered: one range of (user_id, deleted_at, activity_id). */
export function tombstonesQuery(db: Db, callerId: string, filter: TombstoneFilter) {
  const q = whereDateBounds(
    db.selectFrom('activity_tombstones').selectAll().where('user_id', '=', callerId),
    'deleted_at',
    filter.deletedAt,
  );
  const direction = filter.order?.[0]?.direction ?? 'asc';
  return q.orderBy('deleted_at', direction).orderBy('activity_id', direction);
}

/** One page of the caller's tombstones and how many match in all. */
export function listTombstones(
  db: Db,
  callerId: string,
  filter: TombstoneFilter,
  paging: PageRequest,
): Promise<Found<ActivityTombstone>> {
  return pageOf(tombstonesQuery(db, callerId, filter), paging);
}

/** Rows per delete of the expiry, so that no statement holds many locks for long. */
const EXPIRE_BATCH = 1000;

/** One batch of the tombstones older than `ttlSeconds` (on its own so its plan can be checked). */
export function expiredTombstonesQuery(db: Db, ttlSeconds: number) {
  return db
    .selectFrom('activity_tombstones')
    .select('activity_id')
    .where('deleted_at', '<=', sql<Date>`now() - make_interval(secs => ${ttlSeconds})`)
    .limit(EXPIRE_BATCH);
}

/** Deletes the tombstones older than `ttlSeconds`, in batches; returns how many went. */
export async function expireTombstones(db: Db, ttlSeconds: number): Promise<number> {
  let deleted = 0;
  for (;;) {
    const result = await db
      .deleteFrom('activity_tombstones')
      .where('activity_id', 'in', expiredTombstonesQuery(db, ttlSeconds))
      .executeTakeFirst();
    const count = Number(result.numDeletedRows);
    deleted += count;
    if (count < EXPIRE_BATCH) return deleted;
  }
}
