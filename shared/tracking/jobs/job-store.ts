import { randomUUID } from 'node:crypto';
import { type Kysely, sql, type Transaction } from 'kysely';
import type { Db } from '../../db/database.ts';
import type { Database } from '../../db/schema/index.ts';
import type { JobError, JobState, JobType } from '../../db/schema/jobs.ts';
import { notFoundError } from '../../errors.ts';
import type { JobRow } from './job-fields.ts';

/**
 * Job rows (migration 0070, docs/tracking-files.md "Jobs"): written with their outbox job by the
 * use case that starts them (job-start.ts), claimed and ended by their worker, read and
 * cancelled by their owner.
 */

export type { JobRow } from './job-fields.ts';

type Executor = Kysely<Database> | Transaction<Database>;

export const newJobId = () => randomUUID().replaceAll('-', '');

export const JOBS_PATH = '/v2/jobs';

/** A job about to be written. */
export interface NewJob {
  id: string;
  userId: string;
  type: JobType;
  params: Record<string, string>;
  parentId?: string | null;
  state?: JobState;
  filePath?: string | null;
  fileName?: string | null;
  contentType?: string | null;
  position?: number | null;
  total?: number | null;
  error?: JobError | null;
}

export async function insertJobs(db: Executor, jobs: NewJob[]): Promise<JobRow[]> {
  if (jobs.length === 0) return [];
  return db
    .insertInto('jobs')
    .values(
      jobs.map((j) => ({
        id: j.id,
        user_id: j.userId,
        type: j.type,
        params: JSON.stringify(j.params),
        parent_id: j.parentId ?? null,
        state: j.state ?? 'pending',
        file_path: j.filePath ?? null,
        file_name: j.fileName ?? null,
        content_type: j.contentType ?? null,
        position: j.position ?? null,
        total: j.total ?? null,
        error: j.error ? JSON.stringify(j.error) : null,
        ...(j.state && j.state !== 'pending' ? { finished_at: sql<Date>`now()` } : {}),
      })),
    )
    .returningAll()
    .execute();
}

const notFound = (id: string) => notFoundError(`No job ${id}`);

/** The caller's job; 404 when it is not theirs. */
export async function findJob(db: Db, userId: string, id: string): Promise<JobRow> {
  const row = await db
    .selectFrom('jobs')
    .selectAll()
    .where('id', '=', id)
    .where('user_id', '=', userId)
    .executeTakeFirst();
  if (!row) throw notFound(id);
  return row;
}

export interface JobFilters {
  states?: JobState[];
  types?: JobType[];
  parentIds?: string[];
  createdAfter?: Date;
  createdBefore?: Date;
}

/** The caller's jobs, newest first (a parent's children in their zip's order when listed by parent). */
export async function listJobs(db: Db, userId: string, filters: JobFilters, paging: { page: number; limit: number }) {
  const base = db
    .selectFrom('jobs')
    .where('user_id', '=', userId)
    .$if(filters.states !== undefined, (q) => q.where('state', 'in', filters.states as JobState[]))
    .$if(filters.types !== undefined, (q) => q.where('type', 'in', filters.types as JobType[]))
    .$if(filters.parentIds !== undefined, (q) => q.where('parent_id', 'in', filters.parentIds as string[]))
    .$if(filters.createdAfter !== undefined, (q) => q.where('created_at', '>=', filters.createdAfter as Date))
    .$if(filters.createdBefore !== undefined, (q) => q.where('created_at', '<=', filters.createdBefore as Date));
  const byParent = filters.parentIds !== undefined;
  const [items, count] = await Promise.all([
    base
      .selectAll()
      .$if(byParent, (q) => q.orderBy('position').orderBy('id'))
      .$if(!byParent, (q) => q.orderBy('created_at', 'desc').orderBy('id', 'desc'))
      .limit(paging.limit)
      .offset((paging.page - 1) * paging.limit)
      .execute(),
    base.select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow(),
  ]);
  return { items, total: Number(count.n) };
}

/** Takes a pending job for its worker (running from now); a job found running is a rerun (a worker stopped). Undefined otherwise. */
export async function claimJob(db: Db, userId: string, id: string): Promise<JobRow | undefined> {
  return db
    .updateTable('jobs')
    .set({
      state: 'running',
      started_at: sql<Date>`coalesce(started_at, now())`,
      updated_at: sql<Date>`now()`,
      attempts: sql<number>`attempts + 1`,
    })
    .where('id', '=', id)
    .where('user_id', '=', userId)
    .where('state', 'in', ['pending', 'running'])
    .returningAll()
    .executeTakeFirst();
}

/** What a running batch job found so far (its scope's size, what it enqueued, where its work stands). */
export interface JobProgress {
  total?: number;
  result?: Record<string, unknown>;
  done: number;
  failed: number;
}

/** Stores a running job's progress; undefined when it is not running any more. */
export async function recordJobProgress(
  db: Executor,
  userId: string,
  id: string,
  progress: JobProgress,
): Promise<JobRow | undefined> {
  return db
    .updateTable('jobs')
    .set({
      ...(progress.total !== undefined ? { total: progress.total } : {}),
      ...(progress.result !== undefined ? { result: JSON.stringify(progress.result) } : {}),
      done_count: progress.done,
      failed_count: progress.failed,
      updated_at: sql<Date>`now()`,
    })
    .where('id', '=', id)
    .where('user_id', '=', userId)
    .where('state', '=', 'running')
    .returningAll()
    .executeTakeFirst();
}

export interface JobEnd {
  state: 'done' | 'failed';
  activityId?: string | null;
  result?: Record<string, unknown> | null;
  error?: JobError | null;
}

/** Ends a running job; undefined when it was not running (ended by another run meanwhile). */
export async function endJob(trx: Executor, userId: string, id: string, end: JobEnd): Promise<JobRow | undefined> {
  return trx
    .updateTable('jobs')
    .set({
      state: end.state,
      activity_id: end.activityId ?? null,
      result: end.result ? JSON.stringify(end.result) : null,
      error: end.error ? JSON.stringify(end.error) : null,
      file_path: null,
      updated_at: sql<Date>`now()`,
      finished_at: sql<Date>`now()`,
    })
    .where('id', '=', id)
    .where('user_id', '=', userId)
    .where('state', '=', 'running')
    .returningAll()
    .executeTakeFirst();
}

/**
 * Counts one child's end on its parent (in the child's transaction: the parent's row lock
 * serializes its children); returns the parent when that was its last child.
 */
export async function countChildEnd(
  trx: Executor,
  parentId: string,
  userId: string,
  outcome: 'done' | 'failed',
): Promise<JobRow | undefined> {
  const parent = await trx
    .updateTable('jobs')
    .set({
      done_count: outcome === 'done' ? sql<number>`done_count + 1` : sql<number>`done_count`,
      failed_count: outcome === 'failed' ? sql<number>`failed_count + 1` : sql<number>`failed_count`,
      updated_at: sql<Date>`now()`,
    })
    .where('id', '=', parentId)
    .where('user_id', '=', userId)
    .returningAll()
    .executeTakeFirst();
  return parent && parent.total !== null && parent.done_count + parent.failed_count >= parent.total
    ? parent
    : undefined;
}
