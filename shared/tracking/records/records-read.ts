import { type Selectable, sql } from 'kysely';
import type { Db } from '../../db/database.ts';
import { type DateBounds, type Found, type PageRequest, pageOf, whereDateBounds } from '../../db/paging.ts';
import type { UserRecordsTable } from '../../db/schema/tracking.ts';
import { notFoundError } from '../../errors.ts';

/**
 * Reading a user's records (table user_records, kept by the records job after each activity
 * change). Read only: a record goes away with the activity it belongs to.
 */
export type UserRecord = Selectable<UserRecordsTable>;

export const RECORD_ORDERS = ['id', 'type', 'value', 'createdAt', 'updatedAt'] as const;
export type RecordOrder = { prop: (typeof RECORD_ORDERS)[number]; direction: 'asc' | 'desc' };

const ORDER_COLUMNS = {
  id: 'id',
  type: 'type',
  value: 'value',
  createdAt: 'created_at',
  updatedAt: 'updated_at',
} as const;

/** Each member, when given, keeps the records matching one of its values. */
export interface RecordFilter {
  /** Only the caller's records are ever listed, so naming only other users lists nothing. */
  users?: string[];
  activities?: string[];
  sports?: number[];
  types?: string[];
  datatypes?: number[];
  /** The change feed (docs/tracking-sync.md). */
  updatedAt?: DateBounds;
  /** In priority order; by id ascending when empty. Ties are always broken by id. */
  order?: RecordOrder[];
}

/**
 * The caller's records matching `filter`, ordered, without paging. A user holds one row per
 * (sport, type, datatype), a few hundred at most: the unique index led by user_id finds them and
 * sorting them in memory is cheap, so no index per order is kept, but for the change feed's
 * (user_id, updated_at, id): a sync client polls it often and mostly finds nothing.
 */
export function recordsQuery(db: Db, callerId: string, filter: RecordFilter) {
  let q = db.selectFrom('user_records').selectAll().where('user_id', '=', callerId);
  if (filter.users && !filter.users.includes(callerId)) q = q.where(sql<boolean>`false`);
  if (filter.activities) q = q.where('activity_id', 'in', filter.activities);
  if (filter.sports) q = q.where('sport_id', 'in', filter.sports);
  if (filter.types) q = q.where('type', 'in', filter.types);
  if (filter.datatypes) q = q.where('datatype_id', 'in', filter.datatypes);
  q = whereDateBounds(q, 'updated_at', filter.updatedAt);
  const order = filter.order ?? [];
  for (const o of order) q = q.orderBy(ORDER_COLUMNS[o.prop], o.direction);
  if (!order.some((o) => o.prop === 'id')) q = q.orderBy('id', 'asc');
  return q;
}

/** One page of the caller's records and how many match in all. */
export function listRecords(
  db: Db,
  callerId: string,
  filter: RecordFilter,
  paging: PageRequest,
): Promise<Found<UserRecord>> {
  return pageOf(recordsQuery(db, callerId, filter), paging);
}

/** The caller's record `id`; another user's or a missing one is a 404 (no existence leak). */
export async function findRecord(db: Db, callerId: string, id: string): Promise<UserRecord> {
  const row = await db
    .selectFrom('user_records')
    .selectAll()
    .where('id', '=', id)
    .where('user_id', '=', callerId)
    .executeTakeFirst();
  if (!row) throw notFoundError(`No user record ${id}`);
  return row;
}
