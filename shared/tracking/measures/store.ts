import { type Selectable, sql } from 'kysely';
import type { Db } from '../../db/database.ts';
import { type DateBounds, type Found, type PageRequest, pageOf, whereDateBounds } from '../../db/paging.ts';
import type { UserMeasuresTable } from '../../db/schema/tracking.ts';
import { type FieldError, invalid, notFoundError } from '../../errors.ts';
import { iri } from '../iri.ts';

/**
 * A user's body measures (weight, height, resting heart rate...): one value of one datatype at
 * one instant. Each user sees and changes only their own.
 */
export type Measure = Selectable<UserMeasuresTable>;

/** What a create sends (ids parsed from the IRIs). */
export interface MeasureInput {
  /** The tracking user the body names: it must be the caller. */
  userId: string;
  datatypeId: number;
  value: number;
  date: Date;
}

/**
 * Largest magnitude of a measure in any unit. Beyond it a value is a client bug whatever the
 * datatype (the largest real ones are instants in seconds, about 2·10⁹).
 */
export const MAX_MEASURE_MAGNITUDE = 1e12;

/**
 * Units whose quantities cannot be negative (a mass, a length of a body, a rate, a count, a
 * share...). Elevations and slopes (`m`, `deg`) and unitless values (`none`, points) may be.
 */
const NON_NEGATIVE_UNITS = new Set([
  'g',
  'kg',
  'cm',
  'bpm',
  '%',
  's',
  'm/h',
  'steps',
  'steps/min',
  'rpm',
  'W',
  'kcal',
  'stairs',
  'nb',
]);

/** What is wrong with `value` as a measure in `unit`, or undefined when it is acceptable. */
export function measureValueProblem(unit: string, value: number): string | undefined {
  if (!Number.isFinite(value)) return 'must be a finite number';
  if (Math.abs(value) > MAX_MEASURE_MAGNITUDE)
    return `must be between -${MAX_MEASURE_MAGNITUDE} and ${MAX_MEASURE_MAGNITUDE}`;
  if (unit === 'bool' && value !== 0 && value !== 1) return 'must be 0 or 1 (the datatype is a boolean)';
  if (NON_NEGATIVE_UNITS.has(unit) && value < 0) return `must not be negative (the datatype's unit is ${unit})`;
  return undefined;
}

/**
 * Every problem of a measure in one 422 (none: returns): the user the body names, when it names
 * one, must be the caller; with `datatypeId`, the datatype must be active and the value fit its unit.
 */
async function checkMeasure(
  db: Db,
  callerId: string,
  m: { userId?: string | undefined; datatypeId?: number; value: number },
): Promise<void> {
  const errors: FieldError[] = [];
  if (m.userId !== undefined && m.userId !== callerId)
    errors.push({ path: 'body.user', message: `must be your own user, ${iri('users', callerId)}` });
  if (m.datatypeId !== undefined) {
    const datatype = await db
      .selectFrom('datatypes')
      .select('unit')
      .where('id', '=', m.datatypeId)
      .where('active', '=', true)
      .executeTakeFirst();
    const problem = datatype ? measureValueProblem(datatype.unit, m.value) : undefined;
    if (!datatype)
      errors.push({ path: 'body.datatype', message: `no active datatype ${iri('datatypes', m.datatypeId)}` });
    else if (problem) errors.push({ path: 'body.value', message: problem });
  }
  if (errors.length) throw invalid(errors);
}

/** Stores a measure of the caller. */
export async function createMeasure(db: Db, callerId: string, input: MeasureInput): Promise<Measure> {
  await checkMeasure(db, callerId, input);
  return db
    .insertInto('user_measures')
    .values({ user_id: callerId, datatype_id: input.datatypeId, value: input.value, date: input.date })
    .returningAll()
    .executeTakeFirstOrThrow();
}

/** The caller's measure `id`; another user's or a missing one is a 404 (no existence leak). */
export async function findMeasure(db: Db, callerId: string, id: string): Promise<Measure> {
  const row = await db
    .selectFrom('user_measures')
    .selectAll()
    .where('id', '=', id)
    .where('user_id', '=', callerId)
    .executeTakeFirst();
  if (!row) throw notFoundError(`No user measure ${id}`);
  return row;
}

/**
 * Changes the fields sent of the caller's measure (the others keep their value, as API
 * Platform's PUT does); the value is checked against the datatype it ends up with.
 */
export async function updateMeasure(
  db: Db,
  callerId: string,
  id: string,
  changes: Partial<MeasureInput>,
): Promise<Measure> {
  const current = await findMeasure(db, callerId, id);
  const datatypeId = changes.datatypeId ?? current.datatype_id;
  const value = changes.value ?? current.value;
  // A measure whose datatype was retired since keeps it while neither datatype nor value changes.
  const valueChanges = changes.datatypeId !== undefined || changes.value !== undefined;
  await checkMeasure(db, callerId, { userId: changes.userId, ...(valueChanges ? { datatypeId } : {}), value });
  const row = await db
    .updateTable('user_measures')
    .set({
      datatype_id: datatypeId,
      value,
      date: changes.date ?? current.date,
      updated_at: sql<Date>`now()`,
    })
    .where('id', '=', id)
    .where('user_id', '=', callerId)
    .returningAll()
    .executeTakeFirst();
  if (!row) throw notFoundError(`No user measure ${id}`);
  return row;
}

/** Deletes the caller's measure `id` (404 when it is not theirs or is gone). */
export async function deleteMeasure(db: Db, callerId: string, id: string): Promise<void> {
  const deleted = await db
    .deleteFrom('user_measures')
    .where('id', '=', id)
    .where('user_id', '=', callerId)
    .executeTakeFirst();
  if (deleted.numDeletedRows === 0n) throw notFoundError(`No user measure ${id}`);
}

export const MEASURE_ORDERS = ['date', 'id', 'createdAt', 'updatedAt'] as const;
export type MeasureOrder = { prop: (typeof MEASURE_ORDERS)[number]; direction: 'asc' | 'desc' };

const ORDER_COLUMNS = { date: 'date', id: 'id', createdAt: 'created_at', updatedAt: 'updated_at' } as const;

export interface MeasureFilter {
  /** `user` / `user[]`: only the caller's measures are ever listed, so naming only others lists nothing. */
  users?: string[];
  datatypes?: number[];
  date?: DateBounds;
  /** The change feed (docs/tracking-sync.md). */
  updatedAt?: DateBounds;
  /** In priority order; by date ascending when empty. Ties are always broken by id. */
  order?: MeasureOrder[];
}

/**
 * The caller's measures matching `filter`, ordered, without paging. Filters and default order
 * follow the indexes (user_id, datatype_id, date) and (user_id, date); the change feed
 * (user_id, updated_at, id).
 */
export function measuresQuery(db: Db, callerId: string, filter: MeasureFilter) {
  let q = db.selectFrom('user_measures').selectAll().where('user_id', '=', callerId);
  if (filter.users && !filter.users.includes(callerId)) q = q.where(sql<boolean>`false`);
  if (filter.datatypes) q = q.where('datatype_id', 'in', filter.datatypes);
  q = whereDateBounds(q, 'date', filter.date);
  q = whereDateBounds(q, 'updated_at', filter.updatedAt);
  const order: MeasureOrder[] = filter.order?.length ? filter.order : [{ prop: 'date', direction: 'asc' }];
  for (const o of order) q = q.orderBy(ORDER_COLUMNS[o.prop], o.direction);
  if (!order.some((o) => o.prop === 'id')) q = q.orderBy('id', 'asc');
  return q;
}

/** One page of the caller's measures and how many match in all. */
export async function listMeasures(
  db: Db,
  callerId: string,
  filter: MeasureFilter,
  paging: PageRequest,
): Promise<Found<Measure>> {
  return pageOf(measuresQuery(db, callerId, filter), paging);
}
