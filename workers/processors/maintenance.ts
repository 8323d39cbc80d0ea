import type { Queue } from 'bullmq';
import type { Config } from '../../shared/config.ts';
import { expireKeys } from '../../shared/idempotency/store.ts';
import { expireTombstones } from '../../shared/tracking/activities/tombstones.ts';
import type { JobDeps, QueueProcessor, TypedJob } from '../processor.ts';
import { purgeDueAccounts, scheduleAccountsPurge } from './accounts-purge.ts';
import { upsertSchedule } from './schedule.ts';

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

/** The id of the BullMQ job scheduler that deletes the expired tombstones of deleted activities. */
export const TOMBSTONES_EXPIRE_SCHEDULER_ID = 'tombstones-expire-every';

/** Seconds between two runs: a tombstone outlives TRACKING_TOMBSTONE_TTL_S by an hour at most. */
export const TOMBSTONES_EXPIRE_INTERVAL_S = 3600;

/** Deletes the tombstones older than TRACKING_TOMBSTONE_TTL_S (job `tombstones-expire`; docs/tracking-sync.md). */
export async function expireActivityTombstones(
  job: TypedJob<'maintenance', 'tombstones-expire'>,
  { config, db, logger }: JobDeps,
): Promise<{ deleted: number }> {
  const deleted = await expireTombstones(db, config.TRACKING_TOMBSTONE_TTL_S);
  logger.info({ requestedBy: job.data.requestedBy, deleted }, 'activity tombstones expired');
  return { deleted };
}

/**
 * Creates or updates the job schedulers of the expiries and of the accounts purge (idempotent: every
 * worker process running the queue may do it at start). The first run is at once, then one per interval.
 */
export async function scheduleMaintenance(queue: Queue, config: Config): Promise<void> {
  await upsertSchedule(
    queue,
    IDEMPOTENCY_EXPIRE_SCHEDULER_ID,
    'idempotency-expire',
    idempotencyExpireIntervalSeconds(config),
  );
  await upsertSchedule(queue, TOMBSTONES_EXPIRE_SCHEDULER_ID, 'tombstones-expire', TOMBSTONES_EXPIRE_INTERVAL_S);
  await scheduleAccountsPurge(queue, config);
}

/** Queue `maintenance`: the periodic clean-ups that belong to no service's queue. */
export const maintenanceProcessor: QueueProcessor<'maintenance'> = {
  'idempotency-expire': expireIdempotencyKeys,
  'accounts-purge': purgeDueAccounts,
  'tombstones-expire': expireActivityTombstones,
};
