import { type Kysely, type RawBuilder, sql } from 'kysely';
import type { Database } from '../../db/schema/index.ts';
import { type Contribution, contributionOf, type SumupActivity, sameContribution } from './contribution.ts';
import { DEFAULT_TIMEZONE, SUMUP_TYPES } from './periods.ts';

/**
 * The rollup of statistics by period (tables of migration 0061, docs/tracking-statistics.md).
 * Every function here runs in a transaction that holds the user's records lock
 * (records-store.ts, lockUserRecords): the records job's, or its own.
 */

type Executor = Kysely<Database>;

interface SumupActivityRow extends SumupActivity {
  id: string;
  userId: string;
  version: number;
  timezone: string;
}

/**
 * Activities as the rollup reads them, with their user's zone and only their summaries of
 * cumulable datatypes (as decimal text, so the sums stay exact).
 */
async function readActivities(db: Executor, where: RawBuilder<boolean>, tail = sql``): Promise<SumupActivityRow[]> {
  const { rows } = await sql<{
    id: string;
    user_id: string;
    version: number;
    sport_id: number;
    startdate: Date;
    duration: number;
    moving_time: number | null;
    timezone: string;
    summaries: Record<string, string>;
  }>`
    select a.id, a.user_id, a.version, a.sport_id, a.startdate, a.duration, a.moving_time,
      coalesce(u.timezone, ${DEFAULT_TIMEZONE}) as timezone,
      coalesce((
        select jsonb_object_agg(s.key, s.value #>> '{}')
        from jsonb_each(a.data_summaries) s
        join datatypes d on d.cumulable and d.id::text = s.key
        where jsonb_typeof(s.value) = 'number'
      ), '{}') as summaries
    from activities a join tracking_users u on u.id = a.user_id
    where ${where} ${tail}`.execute(db);
  return rows.map((r) => ({
    id: r.id,
    userId: r.user_id,
    version: r.version,
    sportId: r.sport_id,
    startdate: r.startdate,
    duration: r.duration,
    movingTime: r.moving_time,
    timezone: r.timezone,
    summaries: r.summaries,
  }));
}

const day = <C extends string>(column: C) => sql<string>`to_char(${sql.ref(column)}, 'YYYY-MM-DD')`.as(column);

/** What the activity added last time, as the state row says; undefined when nothing. */
async function readState(db: Executor, activityId: string) {
  const row = await db
    .selectFrom('activity_sumup_state')
    .select(['user_id', 'version', 'sport_id', 'timezone', day('week'), day('month'), day('year')])
    // As text: pg would parse a numeric[] into binary floats.
    .select(['datatype_ids', sql<string[]>`"values"::text[]`.as('values')])
    .where('activity_id', '=', activityId)
    .executeTakeFirst();
  if (!row) return undefined;
  const contribution: Contribution = {
    sportId: row.sport_id,
    timezone: row.timezone,
    periods: { week: row.week, month: row.month, year: row.year },
    values: row.datatype_ids.map((id, i) => [id, row.values[i] as string]),
  };
  return { userId: row.user_id, version: row.version, contribution };
}

function stateRow(activity: SumupActivityRow, c: Contribution) {
  return {
    activity_id: activity.id,
    user_id: activity.userId,
    version: activity.version,
    sport_id: c.sportId,
    timezone: c.timezone,
    week: c.periods.week,
    month: c.periods.month,
    year: c.periods.year,
    datatype_ids: c.values.map(([id]) => id),
    values: c.values.map(([, v]) => v),
  };
}

/**
 * Adds `sign` × each contribution to the user's rows (created when missing), then deletes the
 * rows no activity adds to any more. A contribution counts under its sport and under every sport
 * (null), in each of its three periods. Opposite deltas of one key cancel out in SQL, exactly.
 */
async function addToRollup(db: Executor, userId: string, deltas: [Contribution, 1 | -1][]): Promise<void> {
  const types: string[] = [];
  const periods: string[] = [];
  const sports: (number | null)[] = [];
  const datatypes: number[] = [];
  const values: string[] = [];
  const signs: number[] = [];
  for (const [c, sign] of deltas)
    for (const type of SUMUP_TYPES)
      for (const sport of [c.sportId, null])
        for (const [datatype, value] of c.values) {
          types.push(type);
          periods.push(c.periods[type]);
          sports.push(sport);
          datatypes.push(datatype);
          values.push(value);
          signs.push(sign);
        }
  // No check constraint on `activities`: PostgreSQL checks the proposed row (a negative delta)
  // before it finds the conflict; the rows as updated are checked here instead.
  const upserted = await sql<{ activities: number }>`
    insert into user_sumups as s (user_id, type, period, sport_id, datatype_id, value, activities)
    select ${userId}, d.type, d.period, d.sport_id, d.datatype_id, sum(d.value * d.sign), sum(d.sign)::int
    from unnest(${types}::text[], ${periods}::date[], ${sports}::int[], ${datatypes}::int[], ${values}::numeric[],
      ${signs}::int[]) as d (type, period, sport_id, datatype_id, value, sign)
    group by d.type, d.period, d.sport_id, d.datatype_id
    having sum(d.sign) <> 0 or sum(d.value * d.sign) <> 0
    on conflict (user_id, type, period, sport_id, datatype_id) do update
      set value = s.value + excluded.value, activities = s.activities + excluded.activities, updated_at = now()
    returning s.activities`.execute(db);
  // A row below zero: something was subtracted that had not been added. The transaction rolls
  // back, the job fails, and a rebuild (records:recompute) sets the user's rows right.
  if (upserted.rows.some((r) => r.activities < 0))
    throw new Error(`statistics of user ${userId}: a subtraction found nothing to subtract from`);
  await sql`
    delete from user_sumups
    where user_id = ${userId} and type = any(${types}::text[]) and period = any(${periods}::date[]) and activities = 0`.execute(
    db,
  );
}

/**
 * added: first counted; changed: its old contribution subtracted, the new one added; unchanged:
 * it adds what it added already (a job delivered twice, or a change of its name); removed: the
 * activity is gone, what it added was subtracted; none: gone and never counted.
 */
export type SumupOutcome = 'added' | 'changed' | 'unchanged' | 'removed' | 'none';

/**
 * Brings the rollup in line with one activity as it stands now, in O(1) of the user's history:
 * its last contribution (activity_sumup_state) is subtracted and its current one added. Reads
 * the activity's current state rather than trusting a job's payload, so jobs of one activity
 * delivered late, twice or out of order all end in the same rows. The caller holds the user's
 * records lock.
 */
export async function applyActivitySumups(db: Executor, activityId: string): Promise<SumupOutcome> {
  const [activity] = await readActivities(db, sql`a.id = ${activityId}`);
  const state = await readState(db, activityId);
  if (!activity) {
    if (!state) return 'none';
    await addToRollup(db, state.userId, [[state.contribution, -1]]);
    await db.deleteFrom('activity_sumup_state').where('activity_id', '=', activityId).execute();
    return 'removed';
  }
  const next = contributionOf(activity, activity.timezone);
  if (state && sameContribution(state.contribution, next)) {
    if (state.version !== activity.version)
      await db
        .updateTable('activity_sumup_state')
        .set({ version: activity.version, updated_at: sql<Date>`now()` })
        .where('activity_id', '=', activityId)
        .execute();
    return 'unchanged';
  }
  await addToRollup(
    db,
    activity.userId,
    state
      ? [
          [state.contribution, -1],
          [next, 1],
        ]
      : [[next, 1]],
  );
  const row = stateRow(activity, next);
  await db
    .insertInto('activity_sumup_state')
    .values(row)
    .onConflict((oc) => oc.column('activity_id').doUpdateSet({ ...row, updated_at: sql<Date>`now()` }))
    .execute();
  return state ? 'changed' : 'added';
}

/** Activities read and their state rows written per statement by a rebuild. */
const REBUILD_PAGE = 1000;

/**
 * Rebuilds a user's rollup from their activities: every state row computed again (in the user's
 * zone as it is now), then the rows summed from them in one statement. O(the user's history):
 * for a change of time zone and `npm run records:recompute`. The caller holds the user's records
 * lock. Returns how many activities and rows it wrote.
 */
export async function rebuildUserSumups(db: Executor, userId: string): Promise<{ activities: number; rows: number }> {
  await db.deleteFrom('user_sumups').where('user_id', '=', userId).execute();
  await db.deleteFrom('activity_sumup_state').where('user_id', '=', userId).execute();
  let activities = 0;
  let after: SumupActivityRow | undefined;
  for (;;) {
    // Keyset pages over activities_user_startdate_idx.
    const page: SumupActivityRow[] = await readActivities(
      db,
      after
        ? sql`a.user_id = ${userId} and (a.startdate, a.id) > (${after.startdate}, ${after.id})`
        : sql`a.user_id = ${userId}`,
      sql`order by a.startdate, a.id limit ${REBUILD_PAGE}`,
    );
    if (page.length === 0) break;
    await db
      .insertInto('activity_sumup_state')
      .values(page.map((a) => stateRow(a, contributionOf(a, a.timezone))))
      .execute();
    activities += page.length;
    after = page.at(-1);
    if (page.length < REBUILD_PAGE) break;
  }
  const summed = await sql`
    insert into user_sumups (user_id, type, period, sport_id, datatype_id, value, activities)
    select s.user_id, p.type, p.period, k.sport_id, v.datatype_id, sum(v.value), count(*)
    from activity_sumup_state s
    cross join lateral (values ('week', s.week), ('month', s.month), ('year', s.year)) as p (type, period)
    cross join lateral (values (s.sport_id), (null::integer)) as k (sport_id)
    cross join lateral unnest(s.datatype_ids, s."values") as v (datatype_id, value)
    where s.user_id = ${userId}
    group by s.user_id, p.type, p.period, k.sport_id, v.datatype_id`.execute(db);
  return { activities, rows: Number(summed.numAffectedRows ?? 0) };
}
