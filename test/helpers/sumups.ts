import { sql } from 'kysely';
import type { Db } from '../../shared/db/database.ts';
import { lockUserRecords } from '../../shared/tracking/records/records-store.ts';
import { applyActivitySumups, rebuildUserSumups } from '../../shared/tracking/sumups/rollup.ts';

/** Shared by the test/tracking-sumups-*.test.ts files (not a test file itself). */

export interface SumupRow {
  user_id: string;
  type: string;
  period: string;
  sport_id: number | null;
  datatype_id: number;
  /** Canonical decimal text (trailing zeros trimmed). */
  value: string;
  activities: number;
}

const ORDER = sql`order by user_id, type, period, sport_id nulls first, datatype_id`;

/** The rollup's rows of `users`, as stored. */
export async function rollupRows(db: Db, users: string[]): Promise<SumupRow[]> {
  const { rows } = await sql<SumupRow>`
    select user_id, type, to_char(period, 'YYYY-MM-DD') as period, sport_id, datatype_id,
      trim_scale(value)::text as value, activities
    from user_sumups where user_id = any(${users}) ${ORDER}`.execute(db);
  return rows;
}

/**
 * The same rows computed straight from the activities, independently of the rollup's code: the
 * periods by PostgreSQL's own `date_trunc` on the start in the user's zone (its tz database, not
 * the platform's ICU), the values from the jsonb summaries, the rules of docs/tracking-statistics.md
 * (98 counts each activity; 24 from the summary, else the duration; other cumulable datatypes as
 * summed; non-cumulable ones left out).
 */
export async function oracleRows(db: Db, users: string[]): Promise<SumupRow[]> {
  const { rows } = await sql<SumupRow>`
    with a as (
      select a.user_id, a.sport_id, a.duration, a.moving_time, a.data_summaries,
        a.startdate at time zone coalesce(u.timezone, 'UTC') as local
      from activities a join tracking_users u on u.id = a.user_id
      where a.user_id = any(${users})
    ), v as (
      select a.user_id, a.sport_id, a.local, d.id as datatype_id, (a.data_summaries ->> d.id::text)::numeric as value
      from a join datatypes d on d.cumulable and d.id not in (24, 30, 98)
        and jsonb_typeof(a.data_summaries -> d.id::text) = 'number'
      union all
      select a.user_id, a.sport_id, a.local, 30,
        case when jsonb_typeof(a.data_summaries -> '30') = 'number' then (a.data_summaries ->> '30')::numeric
          else a.moving_time end
      from a where jsonb_typeof(a.data_summaries -> '30') = 'number' or a.moving_time is not null
      union all
      select a.user_id, a.sport_id, a.local, 24, coalesce((a.data_summaries ->> '24')::numeric, a.duration) from a
      union all
      select a.user_id, a.sport_id, a.local, 98, 1 from a
    ), p as (
      select v.user_id, t.type, date_trunc(t.type, v.local)::date as period, s.sport_id, v.datatype_id, v.value
      from v
      cross join (values ('week'), ('month'), ('year')) as t (type)
      cross join lateral (values (v.sport_id), (null::integer)) as s (sport_id)
    )
    select user_id, type, to_char(period, 'YYYY-MM-DD') as period, sport_id, datatype_id,
      trim_scale(sum(value))::text as value, count(*)::int as activities
    from p group by user_id, type, period, sport_id, datatype_id ${ORDER}`.execute(db);
  return rows;
}

/** What the records job does for one activity: the rollup brought in line under the user's lock. */
export function applyNow(db: Db, activityId: string, userId: string) {
  return db.transaction().execute(async (trx) => {
    await lockUserRecords(trx, userId);
    return applyActivitySumups(trx, activityId);
  });
}

/** What the rebuild job does for one user. */
export function rebuildNow(db: Db, userId: string) {
  return db.transaction().execute(async (trx) => {
    await lockUserRecords(trx, userId);
    return rebuildUserSumups(trx, userId);
  });
}

export interface RawActivity {
  userId: string;
  sportId: number;
  startdate: Date;
  duration: number;
  summaries: Record<string, number>;
}

/**
 * An activity row without streams or jobs (the rollup reads only the row). Kept as a duplicate,
 * so that random ones never collide on the duplicate rule's unique indexes.
 */
export async function insertRawActivity(db: Db, a: RawActivity): Promise<string> {
  const row = await db
    .insertInto('activities')
    .values({
      user_id: a.userId,
      sport_id: a.sportId,
      startdate: a.startdate,
      duration: a.duration,
      manual: true,
      data_summaries: JSON.stringify(a.summaries),
      location: 'null',
      kept_duplicate: true,
    })
    .returning('id')
    .executeTakeFirstOrThrow();
  return row.id;
}

/** Changes an activity's row as a write would (the version bumped). */
export async function changeRawActivity(
  db: Db,
  id: string,
  change: { sportId?: number; summaries?: Record<string, number> },
): Promise<void> {
  await db
    .updateTable('activities')
    .set((eb) => ({
      version: eb('version', '+', 1),
      ...(change.sportId !== undefined ? { sport_id: change.sportId } : {}),
      ...(change.summaries !== undefined ? { data_summaries: JSON.stringify(change.summaries) } : {}),
    }))
    .where('id', '=', id)
    .execute();
}
