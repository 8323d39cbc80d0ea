import { sql } from 'kysely';
import type { Db } from '../db/database.ts';
import type { ActivityRow } from './activity-store.ts';

/** `after` and `before` include the bound, the `strictly_` forms exclude it (API Platform's DateFilter). */
export interface DateBounds {
  after?: Date;
  before?: Date;
  strictly_after?: Date;
  strictly_before?: Date;
}

export const ACTIVITY_ORDERS = ['startdate', 'createdAt', 'duration', 'id'] as const;
export type ActivityOrder = { prop: (typeof ACTIVITY_ORDERS)[number]; direction: 'asc' | 'desc' };

const ORDER_COLUMNS = { startdate: 'startdate', createdAt: 'created_at', duration: 'duration', id: 'id' } as const;

export interface ActivityFilter {
  /** `user` / `user[]`: only the caller's activities are ever listed, so naming only others lists nothing. */
  users?: string[] | undefined;
  sports?: number[] | undefined;
  startdate?: DateBounds;
  createdAt?: DateBounds;
  trackFlag?: boolean | undefined;
  /** In priority order; most recent start first when empty. Ties are broken by id. */
  order?: ActivityOrder[];
}

/**
 * The caller's activities matching `filter`, ordered, without paging. Every path starts with
 * user_id and has its index (migrations 0040 and 0044): (user_id, startdate, id),
 * (user_id, created_at, id), (user_id, sport_id, startdate), (user_id, duration, id), (user_id, id).
 */
export function activitiesQuery(db: Db, callerId: string, filter: ActivityFilter) {
  let q = db.selectFrom('activities').selectAll().where('user_id', '=', callerId);
  if (filter.users && !filter.users.includes(callerId)) q = q.where(sql<boolean>`false`);
  if (filter.sports) q = q.where('sport_id', 'in', filter.sports);
  if (filter.trackFlag !== undefined) q = q.where('track_flag', '=', filter.trackFlag);
  for (const [prop, column] of [
    ['startdate', 'startdate'],
    ['createdAt', 'created_at'],
  ] as const) {
    const d = filter[prop] ?? {};
    if (d.after) q = q.where(column, '>=', d.after);
    if (d.before) q = q.where(column, '<=', d.before);
    if (d.strictly_after) q = q.where(column, '>', d.strictly_after);
    if (d.strictly_before) q = q.where(column, '<', d.strictly_before);
  }
  const order: ActivityOrder[] = filter.order?.length ? filter.order : [{ prop: 'startdate', direction: 'desc' }];
  for (const o of order) q = q.orderBy(ORDER_COLUMNS[o.prop], o.direction);
  // Ties follow the first order's direction, so one index scan (forward or backward) serves it.
  if (!order.some((o) => o.prop === 'id')) q = q.orderBy('id', order[0]?.direction ?? 'desc');
  return q;
}

/** One page of the caller's activities and how many match in all. */
export async function listActivities(
  db: Db,
  callerId: string,
  filter: ActivityFilter,
  paging: { page: number; limit: number },
): Promise<{ items: ActivityRow[]; total: number }> {
  const q = activitiesQuery(db, callerId, filter);
  const [items, count] = await Promise.all([
    q
      .limit(paging.limit)
      .offset((paging.page - 1) * paging.limit)
      .execute(),
    q
      .clearSelect()
      .clearOrderBy()
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .executeTakeFirstOrThrow(),
  ]);
  return { items, total: Number(count.n) };
}
