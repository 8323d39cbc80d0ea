import type { Queue } from 'bullmq';
import type { Config } from '../../shared/config.ts';
import { expireKeys } from '../../shared/idempotency/store.ts';
import { defaultJobOptions } from '../../shared/queue/queues.ts';
import type { JobDeps, QueueProcessor, TypedJob } from '../processor.ts';
import { purgeDueAccounts, scheduleAccountsPurge } from './accounts-purge.ts';

/** The id of the BullMQ job scheduler that deletes the expired idempotency keys. */
export const IDEMPOTENCY_EXPIRE_SCHEDULER_ID = 'idempotency-expire-every';

/**
 * Seconds between two runs: hourly, or every IDEMPOTENCY_KEY_TTL_S when shorter. Claims ignore an
 * expired key already, so the schedule only bounds how long its row takes room.
 */
export const idempotencyExpireIntervalSeconds = (config: Pick<Config, 'IDEMPOTENCY_KEY_TTL_S'>) =>
  Math.min(3600, config.IDEMPOTENCY_KEY_TTL_S);

/** Deletes the expired idempotency keys (job `idempotency-expire`; shared/idempotency/store.ts). */
export async function expireIdempotencyKeys(
  job: TypedJob<'maintenance', 'idempotency-expire'>,
  { db, logger }: JobDeps,
): Promise<{ deleted: number }> {
  const deleted = await expireKeys(db);
  logger.info({ requestedBy: job.data.requestedBy, deleted }, 'idempotency keys expired');
  return { deleted };
}

/**
 * Creates or updates the job schedulers of the expiry and of the accounts purge (idempotent: every
 * worker process running the queue may do it at start). The first run is at once, then one per interval.
 */
export async function scheduleMaintenance(queue: Queue, config: Config): Promise<void> {
  await queue.upsertJobScheduler(
    IDEMPOTENCY_EXPIRE_SCHEDULER_ID,
    { every: idempotencyExpireIntervalSeconds(config) * 1000 },
    {
      name: 'idempotency-expire',
      data: { requestedBy: 'schedule' },
      opts: {
        attempts: defaultJobOptions.attempts,
        backoff: defaultJobOptions.backoff,
        removeOnComplete: { count: 100 },
        removeOnFail: { count: 100 },
      },
    },
  );
  await scheduleAccountsPurge(queue);
}

/** Queue `maintenance`: the periodic clean-ups that belong to no service's queue. */
export const maintenanceProcessor: QueueProcessor<'maintenance'> = {
  'idempotency-expire': expireIdempotencyKeys,
  'accounts-purge': purgeDueAccounts,
};
