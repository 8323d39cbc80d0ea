import { type Kysely, sql, type Transaction } from 'kysely';
import type { Database } from '../../db/schema/index.ts';
import type { BestEffort, RecordRules } from './best-efforts.ts';
import { familyOf, type RecordsSettings } from './settings.ts';

/** The database statements of the records job (tables of migrations 0040 and 0045). */

type Executor = Kysely<Database> | Transaction<Database>;

/** The record ways of the datatypes that are records (recordWay other than 0), by id. */
export async function loadRecordWays(db: Executor): Promise<Map<number, number>> {
  const rows = await db.selectFrom('datatypes').select(['id', 'record_way']).where('record_way', '<>', 0).execute();
  return new Map(rows.map((r) => [r.id, r.record_way]));
}

/** The sport and its ancestors, nearest first (the family rule reads them in that order). */
export async function sportAncestry(db: Executor, sportId: number): Promise<number[]> {
  // A depth limit, so a cycle in the referential cannot loop.
  const { rows } = await sql<{ id: number }>`
    with recursive chain (id, parent_id, depth) as (
      select id, parent_id, 0 from sports where id = ${sportId}
      union all
      select s.id, s.parent_id, c.depth + 1 from sports s join chain c on s.id = c.parent_id where c.depth < 16
    )
    select id from chain order by depth`.execute(db);
  return rows.map((r) => r.id);
}

export async function recordRules(
  db: Executor,
  settings: RecordsSettings,
  sportId: number,
  recordWays: ReadonlyMap<number, number>,
): Promise<RecordRules> {
  return { recordWays, family: familyOf(settings, await sportAncestry(db, sportId)) };
}

/**
 * Makes the record writes of one user wait for each other, to the end of the transaction: two
 * activities of a user computed at once would otherwise each refresh the records without seeing
 * the other's efforts, and the last commit would lose one.
 */
export async function lockUserRecords(trx: Transaction<Database>, userId: string): Promise<void> {
  await sql`select pg_advisory_xact_lock(hashtextextended(${`records:${userId}`}, 0))`.execute(trx);
}

export interface EffortOwner {
  activityId: string;
  userId: string;
  sportId: number;
  startdate: Date;
}

/** Replaces an activity's efforts; returns the sports its previous efforts were filed under. */
export async function replaceBestEfforts(
  trx: Transaction<Database>,
  owner: EffortOwner,
  efforts: readonly BestEffort[],
): Promise<number[]> {
  const removed = await trx
    .deleteFrom('activity_best_efforts')
    .where('activity_id', '=', owner.activityId)
    .returning('sport_id')
    .execute();
  if (efforts.length > 0)
    await trx
      .insertInto('activity_best_efforts')
      .values(
        efforts.map((e) => ({
          activity_id: owner.activityId,
          type: e.type,
          datatype_id: e.datatypeId,
          user_id: owner.userId,
          sport_id: owner.sportId,
          startdate: owner.startdate,
          value: e.value,
          score: e.score,
        })),
      )
      .execute();
  return [...new Set(removed.map((r) => r.sport_id))];
}

/** Which version of the activity, under which settings, its efforts now reflect. */
export async function saveRecordsState(
  trx: Transaction<Database>,
  activityId: string,
  version: number,
  settings: string,
): Promise<void> {
  await trx
    .insertInto('activity_records_state')
    .values({ activity_id: activityId, version, settings })
    .onConflict((oc) => oc.column('activity_id').doUpdateSet({ version, settings, computed_at: sql<Date>`now()` }))
    .execute();
}

/** Whether the activity's efforts reflect its current version under these settings (a job delivered twice). */
export async function recordsUpToDate(db: Executor, activityId: string, settings: string): Promise<boolean> {
  const row = await db
    .selectFrom('activities as a')
    .innerJoin('activity_records_state as s', 's.activity_id', 'a.id')
    .select(sql<boolean>`s.version = a.version and s.settings = ${settings}`.as('done'))
    .where('a.id', '=', activityId)
    .executeTakeFirst();
  return row?.done === true;
}

export interface RefreshCounts {
  /** Records created, or given a new holder or value. */
  written: number;
  /** Records whose (type, datatype) no activity has any more. */
  removed: number;
}

/** The upsert of refreshUserRecords, on its own so its plan can be checked (test/records-job.test.ts). */
export function bestRecordsUpsert(userId: string, sportId: number) {
  return sql<{ id: string }>`
    with recursive groups (type, datatype_id) as (
      (select type, datatype_id from activity_best_efforts
        where user_id = ${userId} and sport_id = ${sportId}
        order by type, datatype_id limit 1)
      union all
      select next.type, next.datatype_id
      from groups g
      cross join lateral (
        select e.type, e.datatype_id from activity_best_efforts e
        where e.user_id = ${userId} and e.sport_id = ${sportId}
          and (e.type, e.datatype_id) > (g.type, g.datatype_id)
        order by e.type, e.datatype_id limit 1
      ) next
    )
    insert into user_records (user_id, sport_id, type, datatype_id, activity_id, value, date)
    select ${userId}, ${sportId}, g.type, g.datatype_id, best.activity_id, best.value, best.startdate
    from groups g
    cross join lateral (
      select e.activity_id, e.value, e.startdate from activity_best_efforts e
      where e.user_id = ${userId} and e.sport_id = ${sportId} and e.type = g.type and e.datatype_id = g.datatype_id
      order by e.score desc, e.startdate, e.activity_id limit 1
    ) best
    on conflict (user_id, sport_id, type, datatype_id) do update
      set activity_id = excluded.activity_id, value = excluded.value, date = excluded.date, updated_at = now()
      where (user_records.activity_id, user_records.value, user_records.date)
        is distinct from (excluded.activity_id, excluded.value, excluded.date)
    returning id`;
}

/**
 * Brings a user's records of one sport in line with the efforts: for each (type, datatype) the
 * user has efforts in, the first row of that range of activity_best_efforts_best_idx (best score,
 * then earliest start, then smallest activity id) becomes the record. The groups are found by a
 * loose index scan (one index probe per group), so the work grows with the number of groups (a few
 * dozen), never with the user's history. A record whose holder, value and date are unchanged is
 * not touched (its updated_at stays); one whose group is empty is deleted.
 */
export async function refreshUserRecords(
  trx: Transaction<Database>,
  userId: string,
  sportId: number,
): Promise<RefreshCounts> {
  const written = await bestRecordsUpsert(userId, sportId).execute(trx);
  const removed = await trx
    .deleteFrom('user_records as r')
    .where('r.user_id', '=', userId)
    .where('r.sport_id', '=', sportId)
    .where(({ not, exists, selectFrom }) =>
      not(
        exists(
          selectFrom('activity_best_efforts as e')
            .select(sql`1`.as('one'))
            .whereRef('e.user_id', '=', 'r.user_id')
            .whereRef('e.sport_id', '=', 'r.sport_id')
            .whereRef('e.type', '=', 'r.type')
            .whereRef('e.datatype_id', '=', 'r.datatype_id'),
        ),
      ),
    )
    .executeTakeFirst();
  return { written: written.rows.length, removed: Number(removed.numDeletedRows) };
}
