import { sql } from 'kysely';
import type { Db } from '../../db/database.ts';
import { type PageRequest, pageWithTotal } from '../../db/paging.ts';
import { conflictError, type FieldError, invalid, notFoundError } from '../../errors.ts';
import { job } from '../../queue/jobs.ts';
import { sportExists } from '../activities/references.ts';
import { iri } from '../iri.ts';
import { countOwned, lockOwnedCollection } from '../progress/owned.ts';
import { trackingWork } from '../unit-of-work.ts';
import { type ChallengeRow, challengesQuery } from './query.ts';

/**
 * A user's challenges (`/v2/user_challenges`, docs/tracking-gear-goals-challenges.md): a target of
 * distance, ascent, duration or activity count between two instants, optionally of one sport.
 * Their `result` and `achievedAt` are the records job's (shared/tracking/progress/).
 */

/** A challenge with its user's time zone (its `achievedAt` is written in it). */

/** What a challenge may count: distance (5), ascent (18), duration (24), activity count (98). */
export const CHALLENGE_DATATYPES = { 5: 'distance', 18: 'ascent', 24: 'duration', 98: 'activity count' } as const;
export type ChallengeDatatype = keyof typeof CHALLENGE_DATATYPES;
export const isChallengeDatatype = (id: number): id is ChallengeDatatype => Object.hasOwn(CHALLENGE_DATATYPES, id);

/** Challenges one user may hold. */
export const MAX_CHALLENGES_PER_USER = 100;
/** Largest target in any datatype's unit. */
export const MAX_CHALLENGE_TARGET = 1e12;

export interface ChallengeInput {
  /** The user the body names, when it names one: it must be the caller. */
  userId?: string | undefined;
  name?: string | undefined;
  targetDatatypeId?: number | undefined;
  target?: number | null | undefined;
  startedAt?: Date | undefined;
  endedAt?: Date | undefined;
  sportId?: number | null | undefined;
}

const notFound = (id: string) => notFoundError(`No user challenge ${id}`);

/** The job that computes a challenge's result again after a change. */
export const challengeRefreshJob = (row: { id: string; user_id: string; version: number }) =>
  job('records', 'challenge-refresh', { challengeId: row.id, userId: row.user_id, version: row.version });

/** Every broken rule of the challenge as it would be stored, each naming its body field. */
async function challengeProblems(
  db: Db,
  callerId: string,
  sent: ChallengeInput,
  next: { startedAt: Date; endedAt: Date },
): Promise<FieldError[]> {
  const errors: FieldError[] = [];
  if (sent.userId !== undefined && sent.userId !== callerId)
    errors.push({ path: 'body.user', message: `must be your own user, ${iri('users', callerId)}` });
  if (sent.targetDatatypeId !== undefined && !isChallengeDatatype(sent.targetDatatypeId))
    errors.push({
      path: 'body.targetDatatype',
      message: `must be one of ${Object.entries(CHALLENGE_DATATYPES)
        .map(([id, what]) => `${iri('datatypes', id)} (${what})`)
        .join(', ')}`,
    });
  if (sent.target != null && !(sent.target > 0 && sent.target <= MAX_CHALLENGE_TARGET))
    errors.push({ path: 'body.target', message: `must be above 0 and at most ${MAX_CHALLENGE_TARGET}` });
  if (next.endedAt <= next.startedAt) errors.push({ path: 'body.endedAt', message: 'must be after startedAt' });
  if (sent.sportId != null && !(await sportExists(db, sent.sportId)))
    errors.push({ path: 'body.sport', message: `${iri('sports', sent.sportId)} does not exist` });
  return errors;
}

/**
 * Stores a challenge of the caller (at most MAX_CHALLENGES_PER_USER: a conflict beyond), with the
 * job that computes its result from the activities already stored.
 */
export async function createChallenge(
  db: Db,
  callerId: string,
  input: ChallengeInput & { name: string; targetDatatypeId: number; startedAt: Date; endedAt: Date },
): Promise<ChallengeRow> {
  const problems = await challengeProblems(db, callerId, input, input);
  if (problems.length) throw invalid(problems);
  const id = await trackingWork(db, async (uow) => {
    const { trx } = uow;
    await lockOwnedCollection(trx, 'user_challenges', callerId);
    if ((await countOwned(trx, 'user_challenges', callerId)) >= MAX_CHALLENGES_PER_USER)
      throw conflictError(`You hold ${MAX_CHALLENGES_PER_USER} challenges, the most allowed: delete one first`);
    const row = await trx
      .insertInto('user_challenges')
      .values({
        user_id: callerId,
        name: input.name,
        target_datatype_id: input.targetDatatypeId,
        target: input.target == null ? null : String(input.target),
        started_at: input.startedAt,
        ended_at: input.endedAt,
        sport_id: input.sportId ?? null,
      })
      .returning(['id', 'user_id', 'version'])
      .executeTakeFirstOrThrow();
    uow.enqueue(challengeRefreshJob(row));
    return row.id;
  });
  return findChallenge(db, callerId, id);
}

/** The caller's challenge `id`; another user's, or none, is "not found". */
export async function findChallenge(db: Db, callerId: string, id: string): Promise<ChallengeRow> {
  const row = await challengesQuery(db, callerId).where('c.id', '=', id).executeTakeFirst();
  if (!row) throw notFound(id);
  return row;
}

/**
 * Changes what v2.26's PUT may change (name, endedAt, target, sport; the others are fixed at the
 * creation). A change of the window, target or sport bumps the version and writes the job that
 * computes the result again.
 */
export async function updateChallenge(
  db: Db,
  callerId: string,
  id: string,
  input: Pick<ChallengeInput, 'userId' | 'name' | 'endedAt' | 'target' | 'sportId'>,
): Promise<ChallengeRow> {
  await trackingWork(db, async (uow) => {
    const { trx } = uow;
    const current = await trx
      .selectFrom('user_challenges')
      .selectAll()
      .where('id', '=', id)
      .where('user_id', '=', callerId)
      .forUpdate()
      .executeTakeFirst();
    if (!current) throw notFound(id);
    const next = {
      name: input.name ?? current.name,
      ended_at: input.endedAt ?? current.ended_at,
      target: input.target === undefined ? current.target : input.target === null ? null : String(input.target),
      sport_id: input.sportId === undefined ? current.sport_id : input.sportId,
    };
    const problems = await challengeProblems(db, callerId, input, {
      startedAt: current.started_at,
      endedAt: next.ended_at,
    });
    if (problems.length) throw invalid(problems);
    const figures =
      next.ended_at.getTime() !== current.ended_at.getTime() ||
      (next.target === null ? null : Number(next.target)) !==
        (current.target === null ? null : Number(current.target)) ||
      next.sport_id !== current.sport_id;
    if (!figures && next.name === current.name) return;
    const row = await trx
      .updateTable('user_challenges')
      .set({
        ...next,
        ...(figures ? { version: sql<number>`version + 1` } : {}),
        updated_at: sql<Date>`now()`,
      })
      .where('id', '=', id)
      .where('user_id', '=', callerId)
      .returning(['id', 'user_id', 'version'])
      .executeTakeFirstOrThrow();
    if (figures) uow.enqueue(challengeRefreshJob(row));
  });
  return findChallenge(db, callerId, id);
}

/** Deletes the caller's challenge `id` (404 when it is not theirs or is gone). */
export async function deleteChallenge(db: Db, callerId: string, id: string): Promise<void> {
  const deleted = await db
    .deleteFrom('user_challenges')
    .where('id', '=', id)
    .where('user_id', '=', callerId)
    .executeTakeFirst();
  if (deleted.numDeletedRows === 0n) throw notFound(id);
}

export const CHALLENGE_ORDERS = ['id', 'targetDatatype.id', 'startedAt', 'endedAt', 'target'] as const;
export type ChallengeOrder = { prop: (typeof CHALLENGE_ORDERS)[number]; direction: 'asc' | 'desc' };

const ORDER_COLUMNS = {
  id: 'c.id',
  'targetDatatype.id': 'c.target_datatype_id',
  startedAt: 'c.started_at',
  endedAt: 'c.ended_at',
  target: 'c.target',
} as const;

export interface ChallengeFilter {
  sports?: number[] | undefined;
  targetDatatypes?: number[] | undefined;
  /** In priority order; by startedAt ascending when empty. Ties by id. */
  order?: ChallengeOrder[];
}

/** One page of the caller's challenges and how many match, in one statement. */
export function listChallenges(db: Db, callerId: string, filter: ChallengeFilter, paging: PageRequest) {
  let q = challengesQuery(db, callerId);
  if (filter.sports) q = q.where('c.sport_id', 'in', filter.sports);
  if (filter.targetDatatypes) q = q.where('c.target_datatype_id', 'in', filter.targetDatatypes);
  const order: ChallengeOrder[] = filter.order?.length ? filter.order : [{ prop: 'startedAt', direction: 'asc' }];
  for (const o of order) q = q.orderBy(ORDER_COLUMNS[o.prop], o.direction);
  if (!order.some((o) => o.prop === 'id')) q = q.orderBy('c.id', 'asc');
  return pageWithTotal(q, paging);
}
