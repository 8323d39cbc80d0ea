import type { Db } from '../../db/database.ts';
import { type FieldError, forbiddenError, invalid } from '../../errors.ts';
import { job } from '../../queue/jobs.ts';
import { unknownSportIds } from '../activities/references.ts';
import { trackingWork } from '../unit-of-work.ts';
import { type BatchJobType, type BatchParamsInput, parseBatchParams } from './batch-params.ts';
import type { JobRow } from './job-fields.ts';
import { insertJobs, newJobId } from './job-store.ts';

/**
 * Starts a batch job (POST /v2/jobs; docs/tracking-records.md, "Recomputing"): staff only. The
 * job's row, owned by the staff member, and its worker's job commit in one transaction, so a 202
 * always names a job that will run. The work itself is enqueued by the worker.
 */

/** Who asks: their tracking user, and whether they act as staff. */
export interface BatchJobCaller {
  userId: string;
  staff: boolean;
}

/** The worker's job of a batch job row: `records` does records and statistics, `thumbnails` its drawings. */
export function batchJobQueued(row: Pick<JobRow, 'id' | 'user_id'>, type: BatchJobType) {
  const payload = { jobId: row.id, userId: row.user_id };
  if (type === 'records_recompute') return job('records', 'records-recompute-job', payload);
  if (type === 'statistics_rebuild') return job('records', 'statistics-rebuild-job', payload);
  return job('thumbnails', 'thumbnails-rebuild-job', payload);
}

export async function startBatchJob(
  db: Db,
  caller: BatchJobCaller,
  type: BatchJobType,
  input: BatchParamsInput,
): Promise<JobRow> {
  if (!caller.staff)
    throw forbiddenError('Only staff may start batch jobs (records_recompute, statistics_rebuild, thumbnails_rebuild)');
  const parsed = parseBatchParams(input);
  if ('problems' in parsed) throw invalid(parsed.problems);
  const { scope, params } = parsed;
  // As the command: an unknown sport or user is refused rather than matching nothing.
  const problems: FieldError[] = [];
  const unknownSports = await unknownSportIds(db, scope.sportIds ?? []);
  if (unknownSports.length > 0)
    problems.push({ path: 'body.params.sport', message: `no sport ${unknownSports.join(', ')} (see GET /v2/sports)` });
  if ('userId' in scope) {
    const user = await db.selectFrom('tracking_users').select('id').where('id', '=', scope.userId).executeTakeFirst();
    if (!user) problems.push({ path: 'body.params.user', message: `no tracking user ${scope.userId}` });
  }
  if (problems.length > 0) throw invalid(problems);
  return trackingWork(db, async (uow) => {
    const { trx } = uow;
    const [row] = await insertJobs(trx, [{ id: newJobId(), userId: caller.userId, type, params }]);
    if (!row) throw new Error('the job was not written');
    uow.enqueue(batchJobQueued(row, type));
    return row;
  });
}
