import { type Selectable, sql } from 'kysely';
import type { Db } from '../../db/database.ts';
import { type PageRequest, pageWithTotal } from '../../db/paging.ts';
import type { UserEquipmentsTable } from '../../db/schema/progress.ts';
import { conflictError, type FieldError, invalid, notFoundError } from '../../errors.ts';
import { sportExists } from '../activities/references.ts';
import { iri } from '../iri.ts';
import { countOwned, lockOwnedCollection } from '../progress/owned.ts';

/**
 * A user's gear (`/v2/user_equipments`, docs/tracking-gear-goals-challenges.md): shoes, bikes...
 * with the totals of the activities done with them, which the records job keeps
 * (shared/tracking/progress/apply.ts). A user sees and changes only their own.
 */

export type EquipmentRow = Selectable<UserEquipmentsTable>;

/** The categories gear may have; another one is a 422. */
export const EQUIPMENT_CATEGORIES = [
  'shoes',
  'bike',
  'wetsuit',
  'skis',
  'snowboard',
  'board',
  'boat',
  'racket',
  'helmet',
  'other',
] as const;

/** Gear one user may hold, retired gear included. */
export const MAX_EQUIPMENTS_PER_USER = 100;
/** Longest alert distance, in metres (a million kilometres). */
export const MAX_ALERT_DISTANCE = 1e9;

/** Gear as a client writes it (ids taken from their IRIs); a PUT sends some of the members. */
export interface EquipmentInput {
  /** The user the body names, when it names one: it must be the caller. */
  userId?: string | undefined;
  category?: string | undefined;
  brand?: string | undefined;
  name?: string | undefined;
  startDate?: Date | null | undefined;
  sportsAutoAssigned?: number[] | undefined;
  retired?: boolean | undefined;
  /** Metres; null: no alert. */
  alertDistance?: number | null | undefined;
}

const notFound = (id: string) => notFoundError(`No user equipment ${id}`);

/** Every broken rule of a write, each naming its body field. */
async function equipmentProblems(db: Db, callerId: string, input: EquipmentInput): Promise<FieldError[]> {
  const errors: FieldError[] = [];
  if (input.userId !== undefined && input.userId !== callerId)
    errors.push({ path: 'body.user', message: `must be your own user, ${iri('users', callerId)}` });
  if (input.category !== undefined && !(EQUIPMENT_CATEGORIES as readonly string[]).includes(input.category))
    errors.push({ path: 'body.category', message: `must be one of ${EQUIPMENT_CATEGORIES.join(', ')}` });
  const sports = input.sportsAutoAssigned ?? [];
  const known = await Promise.all(sports.map((id) => sportExists(db, id)));
  sports.forEach((id, i) => {
    if (!known[i])
      errors.push({ path: `body.sportsAutoAssigned[${i}]`, message: `${iri('sports', id)} does not exist` });
  });
  return errors;
}

/** The columns a write sets, from the members it sent. */
function columnsOf(input: EquipmentInput) {
  return {
    ...(input.category !== undefined ? { category: input.category } : {}),
    ...(input.brand !== undefined ? { brand: input.brand } : {}),
    ...(input.name !== undefined ? { name: input.name } : {}),
    ...(input.startDate !== undefined ? { start_date: input.startDate } : {}),
    ...(input.sportsAutoAssigned !== undefined ? { sports_auto_assigned: [...new Set(input.sportsAutoAssigned)] } : {}),
    ...(input.retired !== undefined ? { retired: input.retired } : {}),
    ...(input.alertDistance !== undefined
      ? { alert_distance: input.alertDistance === null ? null : String(input.alertDistance) }
      : {}),
  };
}

/** Registers gear of the caller (at most MAX_EQUIPMENTS_PER_USER: a conflict beyond). */
export async function createEquipment(
  db: Db,
  callerId: string,
  input: EquipmentInput & { category: string; brand: string; name: string },
): Promise<EquipmentRow> {
  const problems = await equipmentProblems(db, callerId, input);
  if (problems.length) throw invalid(problems);
  return db.transaction().execute(async (trx) => {
    await lockOwnedCollection(trx, 'user_equipments', callerId);
    if ((await countOwned(trx, 'user_equipments', callerId)) >= MAX_EQUIPMENTS_PER_USER)
      throw conflictError(
        `You hold ${MAX_EQUIPMENTS_PER_USER} gear items (retired ones included), the most allowed: delete one first`,
      );
    return trx
      .insertInto('user_equipments')
      .values({
        user_id: callerId,
        category: input.category,
        brand: input.brand,
        name: input.name,
        ...columnsOf(input),
      })
      .returningAll()
      .executeTakeFirstOrThrow();
  });
}

/** The caller's gear `id`; another user's, or none, is "not found" (no existence leak). */
export async function findEquipment(db: Db, callerId: string, id: string): Promise<EquipmentRow> {
  const row = await db
    .selectFrom('user_equipments')
    .selectAll()
    .where('id', '=', id)
    .where('user_id', '=', callerId)
    .executeTakeFirst();
  if (!row) throw notFound(id);
  return row;
}

/**
 * Changes the members sent (the others keep their value, as API Platform's PUT does). A new
 * `alertDistance` clears `alertedAt`: the alert may be sent again for the new distance.
 */
export async function updateEquipment(
  db: Db,
  callerId: string,
  id: string,
  input: EquipmentInput,
): Promise<EquipmentRow> {
  const problems = await equipmentProblems(db, callerId, input);
  if (problems.length) throw invalid(problems);
  const row = await db
    .updateTable('user_equipments')
    .set({
      ...columnsOf(input),
      ...(input.alertDistance !== undefined
        ? {
            alerted_at: sql<Date | null>`case when alert_distance is not distinct from ${input.alertDistance === null ? null : String(input.alertDistance)}::numeric then alerted_at end`,
          }
        : {}),
      updated_at: sql<Date>`now()`,
    })
    .where('id', '=', id)
    .where('user_id', '=', callerId)
    .returningAll()
    .executeTakeFirst();
  if (!row) throw notFound(id);
  return row;
}

/**
 * Deletes gear of the caller. Its id leaves their activities in the same transaction (their
 * `updatedAt` moves, so sync clients see the change); locked first, so that an activity naming
 * it cannot be stored meanwhile (the create locks the gear it names).
 */
export async function deleteEquipment(db: Db, callerId: string, id: string): Promise<void> {
  await db.transaction().execute(async (trx) => {
    const gear = await trx
      .selectFrom('user_equipments')
      .select('id')
      .where('id', '=', id)
      .where('user_id', '=', callerId)
      .forUpdate()
      .executeTakeFirst();
    if (!gear) throw notFound(id);
    await trx
      .updateTable('activities')
      .set({ equipment_ids: sql<string[]>`array_remove(equipment_ids, ${id}::text)`, updated_at: sql<Date>`now()` })
      .where('user_id', '=', callerId)
      .where(sql<boolean>`${id}::text = any(equipment_ids)`)
      .execute();
    await trx.deleteFrom('user_equipments').where('id', '=', id).where('user_id', '=', callerId).execute();
  });
}

/** List filters; each keeps the gear matching any of its values. */
export interface EquipmentFilter {
  /** Only the caller's gear is ever listed, so naming only others lists nothing. */
  users?: string[] | undefined;
  /** Gear auto-assigned to any of these sports. */
  sports?: number[] | undefined;
  retired?: boolean | undefined;
}

/** The caller's gear matching `filter`, oldest first, without paging (the index (user_id, created_at, id)). */
export function equipmentsQuery(db: Db, callerId: string, filter: EquipmentFilter) {
  let q = db.selectFrom('user_equipments').selectAll().where('user_id', '=', callerId);
  if (filter.users && !filter.users.includes(callerId)) q = q.where(sql<boolean>`false`);
  if (filter.sports) q = q.where(sql<boolean>`sports_auto_assigned && ${filter.sports}::int[]`);
  if (filter.retired !== undefined) q = q.where('retired', '=', filter.retired);
  return q.orderBy('created_at').orderBy('id');
}

/** One page of the caller's gear and how many match: one statement, the totals being columns of the row. */
export function listEquipments(db: Db, callerId: string, filter: EquipmentFilter, paging: PageRequest) {
  return pageWithTotal(equipmentsQuery(db, callerId, filter), paging);
}
