import { type Kysely, sql } from 'kysely';
import type { Database } from '../../db/schema/index.ts';

/**
 * What one activity adds to its gear and to the challenges it falls in
 * (docs/tracking-gear-goals-challenges.md, "What counts"): its distance (summary 5), duration
 * (summary 24, else its `duration`), moving time (summary 30, else its computed `movingTime`),
 * elevation gain (summary 18, ascent) and 1 to the activity count; a value below 0 counts 0.
 * Values are decimal text (PostgreSQL numeric), so that sums and differences stay exact.
 */
export interface Contribution {
  activityId: string;
  userId: string;
  version: number;
  sportId: number;
  startdate: Date;
  /** Its start plus its duration: where it stands in the order a challenge's target is crossed in. */
  endedAt: Date;
  /** Its gear, each once, sorted. */
  equipmentIds: string[];
  distance: string;
  duration: string;
  movingTime: string;
  elevationGain: string;
}

/** The values a contribution carries, by the challenge datatype (or gear total) they add to. */
export const CONTRIBUTION_VALUES = ['distance', 'duration', 'movingTime', 'elevationGain'] as const;

const summary = (key: string) =>
  sql`case when jsonb_typeof(a.data_summaries -> ${sql.lit(key)}) = 'number' then (a.data_summaries ->> ${sql.lit(key)})::numeric end`;

/** The contribution of the activity `a`, as the columns of activity_progress_state (the one place the rule is written in SQL). */
export const contributionColumns = sql`a.id as activity_id, a.user_id, a.version, a.sport_id, a.startdate,
  a.startdate + make_interval(secs => a.duration) as ended_at,
  array(select distinct g from unnest(a.equipment_ids) as g order by g) as equipment_ids,
  greatest(coalesce(${summary('5')}, 0), 0) as distance,
  greatest(coalesce(${summary('24')}, a.duration), 0) as duration,
  greatest(coalesce(${summary('30')}, a.moving_time, 0), 0) as moving_time,
  greatest(coalesce(${summary('18')}, 0), 0) as elevation_gain`;

interface ContributionRow {
  activity_id: string;
  user_id: string;
  version: number;
  sport_id: number;
  startdate: Date;
  ended_at: Date;
  equipment_ids: string[];
  distance: string;
  duration: string;
  moving_time: string;
  elevation_gain: string;
}

const fromRow = (r: ContributionRow): Contribution => ({
  activityId: r.activity_id,
  userId: r.user_id,
  version: r.version,
  sportId: r.sport_id,
  startdate: r.startdate,
  endedAt: r.ended_at,
  equipmentIds: r.equipment_ids,
  distance: r.distance,
  duration: r.duration,
  movingTime: r.moving_time,
  elevationGain: r.elevation_gain,
});

/** The activity's contribution as it stands now; undefined when it is gone. */
export async function currentContribution(
  db: Kysely<Database>,
  activityId: string,
  userId: string,
): Promise<Contribution | undefined> {
  const { rows } = await sql<ContributionRow>`
    select ${contributionColumns} from activities a where a.id = ${activityId} and a.user_id = ${userId}`.execute(db);
  return rows[0] && fromRow(rows[0]);
}

/** What the activity added last time, as its state row says; undefined when nothing. */
export async function storedContribution(
  db: Kysely<Database>,
  activityId: string,
  userId: string,
): Promise<Contribution | undefined> {
  const row = await db
    .selectFrom('activity_progress_state')
    .selectAll()
    .where('activity_id', '=', activityId)
    .where('user_id', '=', userId)
    .executeTakeFirst();
  return row && fromRow(row);
}

/** Whether two contributions add the same things to the same gear and challenges (values compared as decimal text). */
export function sameContribution(a: Contribution, b: Contribution): boolean {
  return (
    a.sportId === b.sportId &&
    a.startdate.getTime() === b.startdate.getTime() &&
    a.endedAt.getTime() === b.endedAt.getTime() &&
    a.equipmentIds.join(' ') === b.equipmentIds.join(' ') &&
    CONTRIBUTION_VALUES.every((k) => a[k] === b[k])
  );
}

/** Writes the activity's state row: what it adds now. */
export async function saveContribution(db: Kysely<Database>, c: Contribution): Promise<void> {
  const row = {
    activity_id: c.activityId,
    user_id: c.userId,
    version: c.version,
    sport_id: c.sportId,
    startdate: c.startdate,
    ended_at: c.endedAt,
    equipment_ids: c.equipmentIds,
    distance: c.distance,
    duration: c.duration,
    moving_time: c.movingTime,
    elevation_gain: c.elevationGain,
  };
  await db
    .insertInto('activity_progress_state')
    .values(row)
    .onConflict((oc) => oc.column('activity_id').doUpdateSet({ ...row, updated_at: sql<Date>`now()` }))
    .execute();
}

/** Rewrites every state row of a user from their activities, in one statement (a rebuild). */
export async function saveUserContributions(db: Kysely<Database>, userId: string): Promise<number> {
  await db.deleteFrom('activity_progress_state').where('user_id', '=', userId).execute();
  const inserted = await sql`
    insert into activity_progress_state (activity_id, user_id, version, sport_id, startdate, ended_at, equipment_ids,
      distance, duration, moving_time, elevation_gain)
    select ${contributionColumns} from activities a where a.user_id = ${userId}`.execute(db);
  return Number(inserted.numAffectedRows ?? 0);
}
