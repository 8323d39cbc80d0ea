import { type Kysely, sql } from 'kysely';
import type { Database } from '../../db/schema/index.ts';
import { trackingWork } from '../unit-of-work.ts';
import type { Contribution } from './contribution.ts';

/**
 * The gear's totals (user_equipments' distance, duration, moving_time, elevation_gain and
 * activities), kept by the records job. The caller holds the user's records lock.
 */

/**
 * Subtracts what the activity added to its former gear and adds what it adds now, in one
 * statement over the gear it names (O(1) of the user's history); opposite deltas of one gear
 * cancel out exactly (numeric). Then the alerts of the gear it touched.
 */
export async function moveGearTotals(
  db: Kysely<Database>,
  userId: string,
  before: Contribution | undefined,
  after: Contribution | undefined,
): Promise<number> {
  const ids: string[] = [];
  const signs: number[] = [];
  const values: Record<'distance' | 'duration' | 'movingTime' | 'elevationGain', string[]> = {
    distance: [],
    duration: [],
    movingTime: [],
    elevationGain: [],
  };
  for (const [c, sign] of [
    [before, -1],
    [after, 1],
  ] as const)
    for (const id of c?.equipmentIds ?? []) {
      ids.push(id);
      signs.push(sign);
      for (const k of Object.keys(values) as (keyof typeof values)[]) values[k].push((c as Contribution)[k]);
    }
  if (ids.length === 0) return 0;
  const { rows } = await sql<{ id: string; activities: number }>`
    update user_equipments e
    set distance = e.distance + d.distance, duration = e.duration + d.duration, moving_time = e.moving_time + d.moving_time,
      elevation_gain = e.elevation_gain + d.elevation_gain, activities = e.activities + d.activities, updated_at = now()
    from (
      select t.id, sum(t.sign * t.distance) as distance, sum(t.sign * t.duration) as duration,
        sum(t.sign * t.moving_time) as moving_time, sum(t.sign * t.elevation_gain) as elevation_gain,
        sum(t.sign)::int as activities
      from unnest(${ids}::text[], ${signs}::int[], ${values.distance}::numeric[], ${values.duration}::numeric[],
        ${values.movingTime}::numeric[], ${values.elevationGain}::numeric[])
        as t (id, sign, distance, duration, moving_time, elevation_gain)
      group by t.id
      having sum(t.sign) <> 0 or sum(t.sign * t.distance) <> 0 or sum(t.sign * t.duration) <> 0
        or sum(t.sign * t.moving_time) <> 0 or sum(t.sign * t.elevation_gain) <> 0
    ) d
    where e.user_id = ${userId} and e.id = d.id
    returning e.id, e.activities`.execute(db);
  // Below zero: something was subtracted that had not been added. The transaction rolls back, the
  // job fails, and a rebuild (records:recompute) sets the user's totals right.
  if (rows.some((r) => r.activities < 0))
    throw new Error(`gear totals of user ${userId}: a subtraction found nothing to subtract from`);
  if (rows.length > 0)
    await sendGearAlerts(
      db,
      userId,
      rows.map((r) => r.id),
    );
  return rows.length;
}

/** Sets every gear total of a user from the state rows of their activities (a rebuild). */
export async function rebuildGearTotals(db: Kysely<Database>, userId: string): Promise<number> {
  const updated = await sql`
    update user_equipments e
    set distance = t.distance, duration = t.duration, moving_time = t.moving_time,
      elevation_gain = t.elevation_gain, activities = t.activities,
      updated_at = case when (e.distance, e.duration, e.moving_time, e.elevation_gain, e.activities)
        = (t.distance, t.duration, t.moving_time, t.elevation_gain, t.activities) then e.updated_at else now() end
    from (
      select g.id, coalesce(x.distance, 0) as distance, coalesce(x.duration, 0) as duration,
        coalesce(x.moving_time, 0) as moving_time, coalesce(x.elevation_gain, 0) as elevation_gain,
        coalesce(x.activities, 0) as activities
      from user_equipments g
      left join (
        select gear.id, sum(s.distance) as distance, sum(s.duration) as duration, sum(s.moving_time) as moving_time,
          sum(s.elevation_gain) as elevation_gain, count(*)::int as activities
        from activity_progress_state s cross join unnest(s.equipment_ids) as gear (id)
        where s.user_id = ${userId}
        group by gear.id
      ) x on x.id = g.id
      where g.user_id = ${userId}
    ) t
    where e.user_id = ${userId} and e.id = t.id`.execute(db);
  await sendGearAlerts(db, userId);
  return Number(updated.numAffectedRows ?? 0);
}

/**
 * The `equipment_alert` event of each gear (of `ids`, or all the user's) whose distance reached
 * its alert distance and was not announced yet: once per alert distance (a PUT that changes it
 * clears `alerted_at`).
 */
async function sendGearAlerts(db: Kysely<Database>, userId: string, ids?: string[]): Promise<void> {
  let q = db
    .updateTable('user_equipments')
    .set({ alerted_at: sql<Date>`now()` })
    .where('user_id', '=', userId)
    .where('alert_distance', 'is not', null)
    .where('alerted_at', 'is', null)
    .where(sql<boolean>`distance >= alert_distance`);
  if (ids) q = q.where('id', 'in', ids);
  const reached = await q.returningAll().execute();
  await trackingWork(db, async (uow) => {
    for (const equipment of reached) uow.emit({ type: 'GearAlertReached', equipment });
  });
}
