import { type Selectable, sql } from 'kysely';
import type { Db } from '../../db/database.ts';
import { type PageRequest, pageWithTotal } from '../../db/paging.ts';
import type { UserMeasureGoalsTable } from '../../db/schema/progress.ts';
import { conflictError, type FieldError, invalid, notFoundError } from '../../errors.ts';
import { iri } from '../iri.ts';
import { measureValueProblem } from '../measures/store.ts';
import { countOwned, lockOwnedCollection } from '../progress/owned.ts';

/**
 * A user's goals on a measure (`/v2/user_measure_goals`, docs/tracking-gear-goals-challenges.md):
 * reach `goal` in a measure datatype (weight, 181, in grams...) from `initial` at `startdate`.
 * Each read gives the progress, from the user's measures of that datatype, in the same statement.
 */

/** A goal with what its progress is read from: the measures around its start and the latest since. */
export type GoalRow = Selectable<UserMeasureGoalsTable> & {
  /** The latest measure at or before the start, and the first after it (when `initial` is null). */
  before_value: number | null;
  first_value: number | null;
  latest_id: string | null;
  latest_value: number | null;
  latest_date: Date | null;
};

/** Goals one user may hold. */
export const MAX_GOALS_PER_USER = 100;

export interface GoalInput {
  /** The user the body names, when it names one: it must be the caller. */
  userId?: string | undefined;
  datatypeId?: number | undefined;
  initial?: number | null | undefined;
  goal?: number | undefined;
  startdate?: Date | undefined;
}

const notFound = (id: string) => notFoundError(`No user measure goal ${id}`);

/** Goal ids are integers (bigint): any other id names no goal. */
const isGoalId = (id: string) => /^[1-9][0-9]{0,17}$/.test(id);

/** Every broken rule of the goal as it would be stored, each naming its body field. */
async function goalProblems(
  db: Db,
  callerId: string,
  sent: GoalInput,
  goal: { datatypeId: number; initial: number | null; goal: number },
): Promise<FieldError[]> {
  const errors: FieldError[] = [];
  if (sent.userId !== undefined && sent.userId !== callerId)
    errors.push({ path: 'body.user', message: `must be your own user, ${iri('users', callerId)}` });
  const datatype = await db
    .selectFrom('datatypes')
    .select('unit')
    .where('id', '=', goal.datatypeId)
    .where('active', '=', true)
    .executeTakeFirst();
  if (!datatype) {
    errors.push({ path: 'body.datatype', message: `no active datatype ${iri('datatypes', goal.datatypeId)}` });
    return errors;
  }
  for (const [field, value] of [
    ['goal', goal.goal],
    ['initial', goal.initial],
  ] as const) {
    const problem = value === null ? undefined : measureValueProblem(datatype.unit, value);
    if (problem) errors.push({ path: `body.${field}`, message: problem });
  }
  return errors;
}

/**
 * The caller's goals with their progress: the measures of the goal's datatype read by the
 * (user_id, datatype_id, date) index of user_measures, beside each goal.
 */
function goalsQuery(db: Db, callerId: string) {
  return db
    .selectFrom('user_measure_goals as g')
    .leftJoinLateral(
      (eb) =>
        eb
          .selectFrom('user_measures as m')
          .whereRef('m.user_id', '=', 'g.user_id')
          .whereRef('m.datatype_id', '=', 'g.datatype_id')
          .select('m.value')
          .whereRef('m.date', '<=', 'g.startdate')
          .orderBy('m.date', 'desc')
          .orderBy('m.id', 'desc')
          .limit(1)
          .as('b'),
      (join) => join.onTrue(),
    )
    .leftJoinLateral(
      (eb) =>
        eb
          .selectFrom('user_measures as m')
          .whereRef('m.user_id', '=', 'g.user_id')
          .whereRef('m.datatype_id', '=', 'g.datatype_id')
          .select('m.value')
          .whereRef('m.date', '>', 'g.startdate')
          .orderBy('m.date')
          .orderBy('m.id')
          .limit(1)
          .as('f'),
      (join) => join.onTrue(),
    )
    .leftJoinLateral(
      (eb) =>
        eb
          .selectFrom('user_measures as m')
          .whereRef('m.user_id', '=', 'g.user_id')
          .whereRef('m.datatype_id', '=', 'g.datatype_id')
          .select(['m.id', 'm.value', 'm.date'])
          .whereRef('m.date', '>=', 'g.startdate')
          .orderBy('m.date', 'desc')
          .orderBy('m.id', 'desc')
          .limit(1)
          .as('l'),
      (join) => join.onTrue(),
    )
    .selectAll('g')
    .select([
      'b.value as before_value',
      'f.value as first_value',
      'l.id as latest_id',
      'l.value as latest_value',
      'l.date as latest_date',
    ])
    .where('g.user_id', '=', callerId);
}

/** Stores a goal of the caller (at most MAX_GOALS_PER_USER: a conflict beyond). */
export async function createGoal(
  db: Db,
  callerId: string,
  input: GoalInput & { datatypeId: number; goal: number; startdate: Date },
): Promise<GoalRow> {
  const problems = await goalProblems(db, callerId, input, { ...input, initial: input.initial ?? null });
  if (problems.length) throw invalid(problems);
  const id = await db.transaction().execute(async (trx) => {
    await lockOwnedCollection(trx, 'user_measure_goals', callerId);
    if ((await countOwned(trx, 'user_measure_goals', callerId)) >= MAX_GOALS_PER_USER)
      throw conflictError(`You hold ${MAX_GOALS_PER_USER} measure goals, the most allowed: delete one first`);
    const row = await trx
      .insertInto('user_measure_goals')
      .values({
        user_id: callerId,
        datatype_id: input.datatypeId,
        initial: input.initial ?? null,
        goal: input.goal,
        startdate: input.startdate,
      })
      .returning('id')
      .executeTakeFirstOrThrow();
    return row.id;
  });
  return findGoal(db, callerId, id);
}

/** The caller's goal `id` with its progress; another user's, or none, is "not found". */
export async function findGoal(db: Db, callerId: string, id: string): Promise<GoalRow> {
  if (!isGoalId(id)) throw notFound(id);
  const row = await goalsQuery(db, callerId).where('g.id', '=', id).executeTakeFirst();
  if (!row) throw notFound(id);
  return row;
}

/** Changes the members sent (the others keep their value); the values are checked against the datatype it ends up with. */
export async function updateGoal(db: Db, callerId: string, id: string, input: GoalInput): Promise<GoalRow> {
  const current = await findGoal(db, callerId, id);
  const next = {
    datatypeId: input.datatypeId ?? current.datatype_id,
    initial: input.initial === undefined ? current.initial : input.initial,
    goal: input.goal ?? current.goal,
  };
  const problems = await goalProblems(db, callerId, input, next);
  if (problems.length) throw invalid(problems);
  const updated = await db
    .updateTable('user_measure_goals')
    .set({
      datatype_id: next.datatypeId,
      initial: next.initial,
      goal: next.goal,
      ...(input.startdate !== undefined ? { startdate: input.startdate } : {}),
      updated_at: sql<Date>`now()`,
    })
    .where('id', '=', id)
    .where('user_id', '=', callerId)
    .executeTakeFirst();
  if (updated.numUpdatedRows === 0n) throw notFound(id);
  return findGoal(db, callerId, id);
}

/** Deletes the caller's goal `id` (404 when it is not theirs or is gone). */
export async function deleteGoal(db: Db, callerId: string, id: string): Promise<void> {
  if (!isGoalId(id)) throw notFound(id);
  const deleted = await db
    .deleteFrom('user_measure_goals')
    .where('id', '=', id)
    .where('user_id', '=', callerId)
    .executeTakeFirst();
  if (deleted.numDeletedRows === 0n) throw notFound(id);
}

export const GOAL_ORDERS = ['id', 'startdate'] as const;
export type GoalOrder = { prop: (typeof GOAL_ORDERS)[number]; direction: 'asc' | 'desc' };

export interface GoalFilter {
  /** Only the caller's goals are ever listed, so naming only others lists nothing. */
  users?: string[] | undefined;
  datatypes?: number[] | undefined;
  /** In priority order; by startdate ascending when empty. Ties by id. */
  order?: GoalOrder[];
}

/** Every goal of a user with its progress, oldest start first (at most MAX_GOALS_PER_USER: the personal-data export). */
export function userGoals(db: Db, userId: string): Promise<GoalRow[]> {
  return goalsQuery(db, userId).orderBy('g.startdate').orderBy('g.id').execute();
}

/** One page of the caller's goals with their progress, and how many match, in one statement. */
export function listGoals(db: Db, callerId: string, filter: GoalFilter, paging: PageRequest) {
  let q = goalsQuery(db, callerId);
  if (filter.users && !filter.users.includes(callerId)) q = q.where(sql<boolean>`false`);
  if (filter.datatypes) q = q.where('g.datatype_id', 'in', filter.datatypes);
  const order: GoalOrder[] = filter.order?.length ? filter.order : [{ prop: 'startdate', direction: 'asc' }];
  for (const o of order) q = q.orderBy(o.prop === 'id' ? 'g.id' : 'g.startdate', o.direction);
  if (!order.some((o) => o.prop === 'id')) q = q.orderBy('g.id', 'asc');
  return pageWithTotal(q, paging);
}
