import { type Kysely, type RawBuilder, sql } from 'kysely';
import type { Database } from '../../db/schema/index.ts';
import { ACTIVITY_LIMITS } from '../activities/content.ts';
import { type ChallengeDatatype, isChallengeDatatype } from '../challenges/store.ts';
import { emitChallengeAchieved } from '../webhooks/progress-events.ts';
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

/**
 * The activity at which the challenge's running total first reaches `target`, given its `result`
 * now: read backwards from the last activity of the window, each one's total before it being the
 * result less the activities from it on, so the scan stops at the crossing (it reads the
 * activities after the crossing, none when the last activity crossed it).
 */
async function crossingOf(
  db: Kysely<Database>,
  userId: string,
  ch: ChallengeState,
  result: string,
): Promise<{ activity_id: string; ended_at: Date } | undefined> {
  const { rows } = await sql<{ activity_id: string; ended_at: Date }>`
    select w.activity_id, w.ended_at from (
      select s.activity_id, s.ended_at, sum(${STATE_VALUE[datatypeOf(ch)]}) over (
        order by s.ended_at desc, s.activity_id desc rows between unbounded preceding and current row) as from_it_on
      from activity_progress_state s
      where ${counted(userId, ch)}
    ) w
    where ${result}::numeric - w.from_it_on < ${ch.target}::numeric
    order by w.ended_at desc, w.activity_id desc
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
  crossing: { activity_id: string; ended_at: Date } | undefined,
): Promise<void> {
  const at = crossing?.ended_at ?? null;
  const by = crossing?.activity_id ?? null;
  const announce = crossing !== undefined && ch.notified_at === null;
  if (!announce && at?.getTime() === ch.achieved_at?.getTime() && by === ch.achieved_activity_id) return;
  await db
    .updateTable('user_challenges')
    .set({
      achieved_at: at,
      achieved_activity_id: by,
      ...(announce ? { notified_at: sql<Date>`now()` } : {}),
      updated_at: sql<Date>`now()`,
    })
    .where('id', '=', ch.id)
    .where('user_id', '=', userId)
    .execute();
  if (announce) await emitChallengeAchieved(db, userId, ch.id);
}

/**
 * Moves the challenges the activity counts in from what it added (`before`) to what it adds
 * (`after`): each result by the difference (O(1) of the user's history); its achievement stays
 * when the activity ended after the crossing, is cleared below the target, and is looked for
 * again otherwise (crossingOf). The state row must already say `after`.
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
    const { rows } = await sql<{ result: string; reached: boolean; after_crossing: boolean }>`
      update user_challenges c set result = c.result - ${was}::numeric + ${is}::numeric, updated_at = now()
      where c.id = ${ch.id} and c.user_id = ${userId}
      returning c.result, coalesce(c.result >= c.target, false) as reached,
        coalesce((${anchor.endedAt}::timestamptz, ${anchor.activityId}::text) > (c.achieved_at, c.achieved_activity_id), false)
          as after_crossing`.execute(db);
    const row = rows[0];
    if (!row || row.after_crossing) continue;
    await settle(db, userId, ch, row.reached ? await crossingOf(db, userId, ch, row.result) : undefined);
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
  await settle(db, userId, ch, row.reached ? await crossingOf(db, userId, ch, row.result) : undefined);
  return true;
}

/** Every challenge of the user computed again (a rebuild). */
export async function refreshUserChallenges(db: Kysely<Database>, userId: string): Promise<number> {
  const ids = await db.selectFrom('user_challenges').select('id').where('user_id', '=', userId).orderBy('id').execute();
  for (const { id } of ids) await refreshChallenge(db, userId, id);
  return ids.length;
}
