import { sql } from 'kysely';
import type { Db } from '../../db/database.ts';
import { type DateBounds, type Found, type PageRequest, pageOf, whereDateBounds } from '../../db/paging.ts';
import type { ActivityRow } from '../../db/schema/tracking.ts';

export const ACTIVITY_ORDERS = ['startdate', 'createdAt', 'updatedAt', 'duration', 'id'] as const;
export type ActivityOrder = { prop: (typeof ACTIVITY_ORDERS)[number]; direction: 'asc' | 'desc' };

const ORDER_COLUMNS = {
  startdate: 'startdate',
  createdAt: 'created_at',
  updatedAt: 'updated_at',
  duration: 'duration',
  id: 'id',
} as const;

export interface ActivityFilter {
  /** `user` / `user[]`: only the caller's activities are ever listed, so naming only others lists nothing. */
  users?: string[] | undefined;
  sports?: number[] | undefined;
  startdate?: DateBounds;
  createdAt?: DateBounds;
  /** The change feed (docs/tracking-sync.md). */
  updatedAt?: DateBounds;
  trackFlag?: boolean | undefined;
  /** In priority order; most recent start first when empty. Ties are broken by id. */
  order?: ActivityOrder[];
}

/**
 * The caller's activities matching `filter`, ordered, without paging. Every path starts with
 * user_id and has its index (migrations 0040, 0044 and 0060): (user_id, startdate, id),
 * (user_id, created_at, id), (user_id, updated_at, id), (user_id, sport_id, startdate),
 * (user_id, duration, id), (user_id, id).
 */
export function activitiesQuery(db: Db, callerId: string, filter: ActivityFilter) {
  let q = db.selectFrom('activities').selectAll().where('user_id', '=', callerId);
  if (filter.users && !filter.users.includes(callerId)) q = q.where(sql<boolean>`false`);
  if (filter.sports) q = q.where('sport_id', 'in', filter.sports);
  if (filter.trackFlag !== undefined) q = q.where('track_flag', '=', filter.trackFlag);
  q = whereDateBounds(q, 'startdate', filter.startdate);
  q = whereDateBounds(q, 'created_at', filter.createdAt);
  q = whereDateBounds(q, 'updated_at', filter.updatedAt);
  const order: ActivityOrder[] = filter.order?.length ? filter.order : [{ prop: 'startdate', direction: 'desc' }];
  for (const o of order) q = q.orderBy(ORDER_COLUMNS[o.prop], o.direction);
  // Ties follow the first order's direction, so one index scan (forward or backward) serves it.
  if (!order.some((o) => o.prop === 'id')) q = q.orderBy('id', order[0]?.direction ?? 'desc');
  return q;
}

/** One page of the caller's activities and how many match in all. */
export function listActivities(
  db: Db,
  callerId: string,
  filter: ActivityFilter,
  paging: PageRequest,
): Promise<Found<ActivityRow>> {
  return pageOf(activitiesQuery(db, callerId, filter), paging);
}
