import { type Kysely, type RawBuilder, sql } from 'kysely';
import type { Database } from '../../db/schema/index.ts';
import { ACTIVITY_LIMITS } from '../activities/content.ts';
import { type ChallengeDatatype, isChallengeDatatype } from '../challenges/store.ts';
import { trackingWork } from '../unit-of-work.ts';
import type { Contribution } from './contribution.ts';

/**
 * Challenges' `result` and `achievedAt`, kept by the records job (docs/tracking-gear-goals-challenges.md).
 * An activity counts in a challenge when it starts within [startedAt, endedAt] and, for a
 * challenge of one sport, is of that sport. `achievedAt` is the end of the activity at which the
 * running total, in the order the activities ended, first reaches the target. Every function
 * here runs in a transaction holding the user's records lock.
 */

interface ChallengeState {
  id: string;
  target_datatype_id: number;
  target: string | null;
  started_at: Date;
  ended_at: Date;
  sport_id: number | null;
  achieved_at: Date | null;
  achieved_activity_id: string | null;
  achieved_total: string | null;
  notified_at: Date | null;
}

const COLUMNS = [
  'id',
  'target_datatype_id',
  'target',
  'started_at',
  'ended_at',
  'sport_id',
  'achieved_at',
  'achieved_activity_id',
  'achieved_total',
  'notified_at',
] as const;

/** The state row's column a challenge datatype sums (the activity count: 1 each). */
const STATE_VALUE: Record<ChallengeDatatype, RawBuilder<string>> = {
  5: sql`s.distance`,
  18: sql`s.elevation_gain`,
  24: sql`s.duration`,
  98: sql`1::numeric`,
};
const CONTRIBUTION_VALUE: Record<ChallengeDatatype, (c: Contribution) => string> = {
  5: (c) => c.distance,
  18: (c) => c.elevationGain,
  24: (c) => c.duration,
  98: () => '1',
};

function datatypeOf(ch: ChallengeState): ChallengeDatatype {
  if (!isChallengeDatatype(ch.target_datatype_id))
    throw new Error(`challenge ${ch.id}: datatype ${ch.target_datatype_id}`);
  return ch.target_datatype_id;
}

/** What the activity adds to the challenge: its value when it counts there, else 0. */
function valueIn(ch: ChallengeState, c: Contribution | undefined): string {
  if (!c || c.startdate < ch.started_at || c.startdate > ch.ended_at) return '0';
  if (ch.sport_id !== null && ch.sport_id !== c.sportId) return '0';
  return CONTRIBUTION_VALUE[datatypeOf(ch)](c);
}

/** The state rows of the activities that count in the challenge (the index's range of ends, then the rule). */
function counted(userId: string, ch: ChallengeState) {
  // An activity ends at most ACTIVITY_LIMITS.maxSeconds after it starts.
  const lastEnd = new Date(ch.ended_at.getTime() + ACTIVITY_LIMITS.maxSeconds * 1000);
  return sql`s.user_id = ${userId} and s.ended_at >= ${ch.started_at} and s.ended_at <= ${lastEnd}
    and s.startdate >= ${ch.started_at} and s.startdate <= ${ch.ended_at}
    and (${ch.sport_id}::int is null or s.sport_id = ${ch.sport_id}::int)`;
}

/** Where a challenge's target was crossed: the activity, when it ended, and the running total there. */
interface Crossing {
  activity_id: string;
  ended_at: Date;
  total_at: string;
}

/**
 * The activity at which the running total first reaches the target, looked for backwards from the
 * activity `from` (included; null: the last of the window), where the running total is `total`:
 * each activity's total before it is the total less the activities from it on, so the scan stops
 * at the crossing. It reads the activities between the crossing and `from`.
 */
async function crossingBackwards(
  db: Kysely<Database>,
  userId: string,
  ch: ChallengeState,
  from: { ended_at: Date; activity_id: string } | null,
  total: string,
): Promise<Crossing | undefined> {
  const value = STATE_VALUE[datatypeOf(ch)];
  const { rows } = await sql<Crossing>`
    select w.activity_id, w.ended_at, ${total}::numeric - w.from_it_on + w.value as total_at from (
      select s.activity_id, s.ended_at, ${value} as value, sum(${value}) over (
        order by s.ended_at desc, s.activity_id desc rows between unbounded preceding and current row) as from_it_on
      from activity_progress_state s
      where ${counted(userId, ch)}
        ${from ? sql`and (s.ended_at, s.activity_id) <= (${from.ended_at}::timestamptz, ${from.activity_id}::text)` : sql``}
    ) w
    where ${total}::numeric - w.from_it_on < ${ch.target}::numeric
    order by w.ended_at desc, w.activity_id desc
    limit 1`.execute(db);
  return rows[0];
}

/**
 * The activity at which the running total first reaches the target, looked for forwards after the
 * activity `after` (excluded), where the running total is `total`. It reads the activities
 * between `after` and the crossing.
 */
async function crossingForwards(
  db: Kysely<Database>,
  userId: string,
  ch: ChallengeState,
  after: { ended_at: Date; activity_id: string },
  total: string,
): Promise<Crossing | undefined> {
  const value = STATE_VALUE[datatypeOf(ch)];
  const { rows } = await sql<Crossing>`
    select w.activity_id, w.ended_at, w.total_at from (
      select s.activity_id, s.ended_at, ${total}::numeric + sum(${value}) over (
        order by s.ended_at, s.activity_id rows between unbounded preceding and current row) as total_at
      from activity_progress_state s
      where ${counted(userId, ch)}
        and (s.ended_at, s.activity_id) > (${after.ended_at}::timestamptz, ${after.activity_id}::text)
    ) w
    where w.total_at >= ${ch.target}::numeric
    order by w.ended_at, w.activity_id
    limit 1`.execute(db);
  return rows[0];
}

/**
 * Writes the challenge's achievement (null: not achieved); the first time it is achieved, its
 * `challenge_achieved` event (never again, whatever happens to it later).
 */
async function settle(
  db: Kysely<Database>,
  userId: string,
  ch: ChallengeState,
  crossing: Crossing | undefined,
): Promise<void> {
  const at = crossing?.ended_at ?? null;
  const by = crossing?.activity_id ?? null;
  const total = crossing?.total_at ?? null;
  const announce = crossing !== undefined && ch.notified_at === null;
  if (
    !announce &&
    at?.getTime() === ch.achieved_at?.getTime() &&
    by === ch.achieved_activity_id &&
    total === ch.achieved_total
  )
    return;
  await db
    .updateTable('user_challenges')
    .set({
      achieved_at: at,
      achieved_activity_id: by,
      achieved_total: total,
      ...(announce ? { notified_at: sql<Date>`now()` } : {}),
      updated_at: sql<Date>`now()`,
    })
    .where('id', '=', ch.id)
    .where('user_id', '=', userId)
    .execute();
  if (announce)
    await trackingWork(db, async (uow) => uow.emit({ type: 'ChallengeAchieved', userId, challengeId: ch.id }));
}

/**
 * Where a reached challenge's target is crossed now, after a change at or before its crossing
 * (`change.total_at_crossing`: the running total there now). A change that added moves the
 * crossing back, at most to the changed activity: looked for backwards from the crossing. One
 * that took away leaves it, or moves it on: looked for forwards from it. So either reads the
 * activities between the old and the new crossing, whatever the user's history. Without a
 * crossing yet, it is looked for backwards from the window's last activity.
 */
function newCrossing(
  db: Kysely<Database>,
  userId: string,
  ch: ChallengeState,
  change: { result: string; grew: boolean; total_at_crossing: string | null; crossing_holds: boolean },
): Promise<Crossing | undefined> {
  const { achieved_at, achieved_activity_id } = ch;
  const total = change.total_at_crossing;
  if (achieved_at === null || achieved_activity_id === null || total === null)
    return crossingBackwards(db, userId, ch, null, change.result);
  const crossing = { ended_at: achieved_at, activity_id: achieved_activity_id };
  if (change.grew) return crossingBackwards(db, userId, ch, crossing, total);
  if (change.crossing_holds) return Promise.resolve({ ...crossing, total_at: total });
  return crossingForwards(db, userId, ch, crossing, total);
}

/**
 * Moves the challenges the activity counts in from what it added (`before`) to what it adds
 * (`after`): each result by the difference (O(1) of the user's history); its achievement stays
 * when the activity ended after the crossing, is cleared below the target, and is looked for
 * again otherwise (newCrossing). The state row must already say `after`.
 */
export async function moveChallenges(
  db: Kysely<Database>,
  userId: string,
  before: Contribution | undefined,
  after: Contribution | undefined,
): Promise<number> {
  const anchor = after ?? before;
  if (!anchor) return 0;
  const starts = [...new Set([before?.startdate, after?.startdate].filter((d) => d !== undefined))];
  const challenges: ChallengeState[] = await db
    .selectFrom('user_challenges')
    .select(COLUMNS)
    .where('user_id', '=', userId)
    .where((eb) => eb.or(starts.map((s) => eb.and([eb('started_at', '<=', s), eb('ended_at', '>=', s)]))))
    .orderBy('id')
    .forUpdate()
    .execute();
  let moved = 0;
  for (const ch of challenges) {
    const was = valueIn(ch, before);
    const is = valueIn(ch, after);
    if (was === is) continue;
    moved++;
    const { rows } = await sql<{
      result: string;
      reached: boolean;
      after_crossing: boolean;
      grew: boolean;
      total_at_crossing: string | null;
      crossing_holds: boolean;
    }>`
      update user_challenges c set result = c.result - ${was}::numeric + ${is}::numeric, updated_at = now()
      where c.id = ${ch.id} and c.user_id = ${userId}
      returning c.result, coalesce(c.result >= c.target, false) as reached,
        coalesce((${anchor.endedAt}::timestamptz, ${anchor.activityId}::text) > (c.achieved_at, c.achieved_activity_id), false)
          as after_crossing,
        ${is}::numeric >= ${was}::numeric as grew,
        c.achieved_total - ${was}::numeric + ${is}::numeric as total_at_crossing,
        coalesce(c.achieved_total - ${was}::numeric + ${is}::numeric >= c.target, false) as crossing_holds`.execute(db);
    const row = rows[0];
    // After the crossing, the totals up to it are the same: so is the crossing.
    if (!row || row.after_crossing) continue;
    await settle(db, userId, ch, row.reached ? await newCrossing(db, userId, ch, row) : undefined);
  }
  return moved;
}

/**
 * Computes a challenge's result and achievement again from the state rows of the user's
 * activities (O(its window)): after its creation or a change of it, and in a rebuild.
 */
export async function refreshChallenge(db: Kysely<Database>, userId: string, challengeId: string): Promise<boolean> {
  const ch: ChallengeState | undefined = await db
    .selectFrom('user_challenges')
    .select(COLUMNS)
    .where('id', '=', challengeId)
    .where('user_id', '=', userId)
    .forUpdate()
    .executeTakeFirst();
  if (!ch) return false;
  const { rows } = await sql<{ result: string; reached: boolean }>`
    update user_challenges c
    set result = t.result, updated_at = case when c.result = t.result then c.updated_at else now() end
    from (select coalesce(sum(${STATE_VALUE[datatypeOf(ch)]}), 0) as result from activity_progress_state s
      where ${counted(userId, ch)}) t
    where c.id = ${ch.id} and c.user_id = ${userId}
    returning c.result, coalesce(c.result >= c.target, false) as reached`.execute(db);
  const row = rows[0];
  if (!row) return false;
  await settle(db, userId, ch, row.reached ? await crossingBackwards(db, userId, ch, null, row.result) : undefined);
  return true;
}

/** Every challenge of the user computed again (a rebuild). */
export async function refreshUserChallenges(db: Kysely<Database>, userId: string): Promise<number> {
  const ids = await db.selectFrom('user_challenges').select('id').where('user_id', '=', userId).orderBy('id').execute();
  for (const { id } of ids) await refreshChallenge(db, userId, id);
  return ids.length;
}
