import { sql } from 'kysely';
import type { Db } from '../../db/database.ts';
import { conflictError } from '../../errors.ts';
import { trackingWork } from '../unit-of-work.ts';
import { childEnded } from './job-effects.ts';
import type { JobRow } from './job-fields.ts';
import { findJob } from './job-store.ts';

/**
 * Cancels the caller's job if it has not started (PUT /v2/jobs/{id} with `state: cancelled`): its
 * worker then finds nothing to do, its file goes with the next cleanup. A bulk import's file
 * counts as ended for its parent. A running or ended job is a conflict.
 */
export async function cancelJob(db: Db, userId: string, id: string): Promise<JobRow> {
  return trackingWork(db, async (uow) => {
    const { trx } = uow;
    const row = await trx
      .updateTable('jobs')
      .set({ state: 'cancelled', updated_at: sql<Date>`now()`, finished_at: sql<Date>`now()` })
      .where('id', '=', id)
      .where('user_id', '=', userId)
      .where('state', '=', 'pending')
      .returningAll()
      .executeTakeFirst();
    if (!row) {
      const found = await findJob(trx, userId, id);
      throw conflictError(
        found.state === 'running'
          ? `The job ${id} is running: only a job not yet started can be cancelled`
          : `The job ${id} has ended (${found.state}): only a job not yet started can be cancelled`,
      );
    }
    await childEnded(uow, row, 'failed');
    return row;
  });
}
