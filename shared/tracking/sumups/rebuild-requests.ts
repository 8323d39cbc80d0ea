import { sql } from 'kysely';
import type { Db } from '../../db/database.ts';
import { job } from '../../queue/jobs.ts';
import { enqueueInTransaction } from '../../queue/outbox-write.ts';
import { activitiesInScope, type RecomputeScope } from '../records/recompute-requests.ts';
import { hasFilters } from '../records/recompute-scope.ts';

/** `2026-11-23T13:05:01.123Z` → `20261123T130501123Z`: no `:` (BullMQ refuses it in job ids). */
export const compactTime = (date: Date) => date.toISOString().replace(/[-:.]/g, '');

/** The job that rebuilds `userId`'s statistics, for a request made at `requestedAt` (compact time). */
export const sumupsRebuildJob = (userId: string, requestedAt: string) =>
  job('records', 'sumups-rebuild', { userId, requestedAt });

/**
 * Enqueues a `records/sumups-rebuild` job per user of the scope (every tracking user for `all`;
 * with sports or dates, every user who has an activity among them),
 * through the outbox, a page of users per transaction (`npm run records:recompute`). Job ids
 * carry `requestedAt`: the same run relayed twice makes one job per user. Returns how many.
 */
export async function enqueueSumupsRebuild(
  db: Db,
  scope: RecomputeScope,
  requestedAt: string,
  pageSize = 1000,
): Promise<number> {
  if ('userId' in scope) {
    await enqueueInTransaction(db, sumupsRebuildJob(scope.userId, requestedAt));
    return 1;
  }
  let enqueued = 0;
  let after: string | undefined;
  for (;;) {
    const page = hasFilters(scope)
      ? await activitiesInScope(db, scope)
          .select('a.user_id as id')
          .distinct()
          .$if(after !== undefined, (q) => q.where('a.user_id', '>', after as string))
          .orderBy('a.user_id')
          .limit(pageSize)
          .execute()
      : await db
          .selectFrom('tracking_users')
          .select('id')
          .$if(after !== undefined, (q) => q.where('id', '>', after as string))
          .orderBy('id')
          .limit(pageSize)
          .execute();
    if (page.length === 0) break;
    await db.transaction().execute((trx) =>
      enqueueInTransaction(
        trx,
        page.map((u) => sumupsRebuildJob(u.id, requestedAt)),
      ),
    );
    enqueued += page.length;
    after = page.at(-1)?.id;
    if (page.length < pageSize) break;
  }
  return enqueued;
}

/** How the rebuilds asked at `requestedAt` stand: jobs still to do, and jobs that failed for good. */
export async function sumupsRebuildProgress(db: Db, requestedAt: string): Promise<{ pending: number; failed: number }> {
  const { rows } = await sql<{ pending: number; failed: number }>`
    select count(*) filter (where failed_at is null)::int as pending,
      count(*) filter (where failed_at is not null)::int as failed
    from outbox
    where queue = 'records' and job_name = 'sumups-rebuild' and done_at is null
      and payload->>'requestedAt' = ${requestedAt}`.execute(db);
  return { pending: rows[0]?.pending ?? 0, failed: rows[0]?.failed ?? 0 };
}
