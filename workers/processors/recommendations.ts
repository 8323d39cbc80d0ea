import type { Queue } from 'bullmq';
import { type ComputeResult, computeRecommendations } from '../../shared/catalogue/recommendations-compute.ts';
import type { Config } from '../../shared/config.ts';
import type { JobDeps, QueueProcessor, TypedJob } from '../processor.ts';
import { upsertSchedule } from './schedule.ts';

/** The id of the BullMQ job scheduler that recomputes the recommendations every RECOMMENDATIONS_INTERVAL_S. */
export const RECOMMENDATIONS_SCHEDULER_ID = 'recommendations-every';

/**
 * Recomputes every sport recommendation (job `compute-all`). Idempotent: the computation
 * replaces all rows in one transaction, so a repeated or duplicated job writes the same result.
 */
export async function computeAllRecommendations(
  job: TypedJob<'recommendations', 'compute-all'>,
  { db, logger }: JobDeps,
): Promise<ComputeResult> {
  const result = await computeRecommendations(db, (step, rows) => {
    void job.updateProgress({ step, rows }).catch(() => {});
  });
  logger.info({ requestedBy: job.data.requestedBy, ...result }, 'recommendations computed');
  return result;
}

/**
 * Creates or updates the job scheduler of the `recommendations` queue (BullMQ 6 job schedulers;
 * upserting is idempotent, so every worker process running the queue may do it at start), or
 * removes it when RECOMMENDATIONS_INTERVAL_S is 0. The first job runs at once, then one per interval.
 */
export async function scheduleRecommendations(queue: Queue, config: Config): Promise<void> {
  if (config.RECOMMENDATIONS_INTERVAL_S === 0) {
    await queue.removeJobScheduler(RECOMMENDATIONS_SCHEDULER_ID);
    return;
  }
  await upsertSchedule(queue, RECOMMENDATIONS_SCHEDULER_ID, 'compute-all', config.RECOMMENDATIONS_INTERVAL_S);
}

/** Queue `recommendations`. */
export const recommendationsProcessor: QueueProcessor<'recommendations'> = {
  'compute-all': computeAllRecommendations,
};
