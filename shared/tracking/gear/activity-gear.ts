import { type Kysely, type RawBuilder, sql } from 'kysely';
import type { Database } from '../../db/schema/index.ts';
import type { FieldError } from '../../errors.ts';
import { iri } from '../iri.ts';

/**
 * An activity's gear (`equipments`, docs/tracking-gear-goals-challenges.md): gear of its user,
 * named by the create or a PUT, or, when a create names none, the user's gear auto-assigned to
 * its sport. The gear an activity names is locked (FOR KEY SHARE) by the statement that writes
 * it, so a deletion of that gear waits for it and then takes its id out of the activity too.
 */

/** Gear one activity may name. */
export const MAX_EQUIPMENTS_PER_ACTIVITY = 20;

/** The gear of a new activity, as the parts of its insert statement (shared/tracking/activities/store.ts). */
export interface NewActivityGear {
  /** A CTE body selecting (and locking) the gear: `with g as (${cte})`. */
  cte: RawBuilder<unknown>;
  /** The activity's `equipment_ids` value, from `g`. */
  ids: RawBuilder<string[]>;
  /** True when every gear named was found the caller's. */
  found: RawBuilder<boolean>;
}

/**
 * Named gear (`equipmentIds`), each of which must be the caller's; or, with none named
 * (undefined), the caller's gear auto-assigned to the sport, not retired, and started by the
 * activity's start (oldest gear first).
 */
export function newActivityGear(
  callerId: string,
  activity: { sportId: number; startdate: Date },
  equipmentIds: string[] | undefined,
): NewActivityGear {
  if (equipmentIds === undefined)
    return {
      cte: sql`select id, created_at from user_equipments
        where user_id = ${callerId} and not retired and ${activity.sportId}::int = any(sports_auto_assigned)
          and (start_date is null or start_date <= ${activity.startdate}::timestamptz)
        for key share`,
      ids: sql<string[]>`array(select id from g order by created_at, id)`,
      found: sql<boolean>`true`,
    };
  const ids = [...new Set(equipmentIds)];
  return {
    cte: sql`select id from user_equipments where user_id = ${callerId} and id = any(${ids}::text[]) for key share`,
    ids: sql<string[]>`${ids}::text[]`,
    found: sql<boolean>`(select count(*) from g) = ${ids.length}`,
  };
}

/**
 * The named gear that is not the caller's, each a 422 naming its place in `body.equipments`;
 * with `lock`, the caller's gear named is locked (FOR KEY SHARE) in the caller's transaction.
 */
export async function equipmentProblems(
  db: Kysely<Database>,
  callerId: string,
  equipmentIds: string[],
  { lock = false } = {},
): Promise<FieldError[]> {
  if (equipmentIds.length === 0) return [];
  let q = db
    .selectFrom('user_equipments')
    .select('id')
    .where('user_id', '=', callerId)
    .where('id', 'in', [...new Set(equipmentIds)]);
  if (lock) q = q.forKeyShare();
  const mine = new Set((await q.execute()).map((r) => r.id));
  const errors: FieldError[] = [];
  equipmentIds.forEach((id, i) => {
    if (!mine.has(id))
      errors.push({ path: `body.equipments[${i}]`, message: `${iri('user_equipments', id)} is not one of your gear` });
  });
  return errors;
}
