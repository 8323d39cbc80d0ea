import { DelayedError, type Queue } from 'bullmq';
import type { Config } from '../../shared/config.ts';
import { addJobsNow } from '../../shared/queue/outbox.ts';
import { enqueueInTransaction } from '../../shared/queue/outbox-write.ts';
import { purgeWebhookEvents } from '../../shared/tracking/webhooks/cleanup.ts';
import { type DeliveryOutcome, deliverWebhook } from '../../shared/tracking/webhooks/deliver.ts';
import { type AddJobs, type FanOutOutcome, fanOutEvent } from '../../shared/tracking/webhooks/fan-out.ts';
import { type SweepResult, sweepLostDeliveries } from '../../shared/tracking/webhooks/sweep.ts';
import type { JobDeps, QueueProcessor, TypedJob } from '../processor.ts';
import { upsertSchedule } from './schedule.ts';

/** The id of the BullMQ job scheduler of the queue's housekeeping (job `cleanup-events`). */
export const WEBHOOKS_CLEANUP_SCHEDULER_ID = 'webhooks-cleanup-every';

/**
 * The BullMQ priority of the deliveries' jobs. BullMQ takes the jobs without a priority first: an
 * event's fan-out (one short transaction, which starts all its deliveries) does not wait behind
 * the deliveries of the events before it, which would count the backlog twice in its latency.
 */
const DELIVERY_PRIORITY = 1;

/**
 * How the deliveries' jobs reach BullMQ: at once through the process's producer queues; without
 * them (a handler run outside a worker process), through outbox rows and the relay.
 */
function jobAdder({ db, queues, kickRelay }: JobDeps): AddJobs {
  if (queues) return (jobs) => addJobsNow(queues, jobs, { priority: DELIVERY_PRIORITY });
  return async (jobs) => {
    await enqueueInTransaction(db, jobs);
    if (jobs.length > 0) kickRelay?.();
  };
}

/** Fans an event out to its hooks (job `event`; shared/tracking/webhooks/fan-out.ts). */
export async function webhookEvent(job: TypedJob<'webhooks', 'event'>, deps: JobDeps): Promise<FanOutOutcome> {
  const outcome = await fanOutEvent(deps.db, job.data.eventId, jobAdder(deps));
  deps.logger.debug({ eventId: job.data.eventId, ...outcome }, 'webhook event');
  return outcome;
}

/**
 * Tries one delivery (job `deliver`; shared/tracking/webhooks/deliver.ts). A retry, or a wait for
 * the hook, moves the job to BullMQ's delayed set until then: it holds no worker meanwhile and
 * uses none of the job's attempts (those are for errors of ours: database, Redis). A Redis that
 * lost it has it added again by the sweep of `cleanup-events`.
 */
export async function webhookDeliver(
  job: TypedJob<'webhooks', 'deliver'>,
  { db, config, logger }: JobDeps,
): Promise<DeliveryOutcome> {
  const outcome = await deliverWebhook(db, config, job.data.deliveryId);
  logger.debug({ deliveryId: job.data.deliveryId, ...outcome }, 'webhook delivery');
  if (outcome.status === 'wait') {
    await job.moveToDelayed(outcome.until.getTime(), job.token);
    throw new DelayedError(`webhook delivery waits until ${outcome.until.toISOString()}: ${outcome.reason}`);
  }
  return outcome;
}

/**
 * The queue's housekeeping (job `cleanup-events`): adds again the deliveries whose job Redis lost
 * (shared/tracking/webhooks/sweep.ts), then deletes the events whose deliveries have all ended,
 * past their retention.
 */
export async function cleanupWebhookEvents(
  job: TypedJob<'webhooks', 'cleanup-events'>,
  deps: JobDeps,
): Promise<{ deleted: number; swept: SweepResult | null }> {
  const { db, config, logger, queues } = deps;
  const queue = queues?.get('webhooks');
  const swept = queue
    ? await sweepLostDeliveries(db, (id) => queue.getJobState(id), jobAdder(deps), config.OUTBOX_RECONCILE_AFTER_S)
    : null;
  if (swept && swept.added > 0) logger.warn(swept, 'webhook deliveries whose job Redis lost were added again');
  const deleted = await purgeWebhookEvents(db);
  logger.info({ requestedBy: job.data.requestedBy, deleted, swept }, 'webhook events cleaned up');
  return { deleted, swept };
}

/**
 * The housekeeping's job scheduler (idempotent: every worker process running the queue may set
 * it): as often as the outbox reconciler looks for lost jobs, at most hourly.
 */
export async function scheduleWebhooksCleanup(queue: Queue, config: Config): Promise<void> {
  await upsertSchedule(
    queue,
    WEBHOOKS_CLEANUP_SCHEDULER_ID,
    'cleanup-events',
    Math.min(3600, config.OUTBOX_RECONCILE_AFTER_S),
  );
}

/** Queue `webhooks` (docs/webhooks.md). */
export const webhooksProcessor: QueueProcessor<'webhooks'> = {
  event: webhookEvent,
  deliver: webhookDeliver,
  'cleanup-events': cleanupWebhookEvents,
};
