import { DelayedError, type Queue } from 'bullmq';
import { purgeWebhookEvents } from '../../shared/tracking/webhooks/cleanup.ts';
import { type DeliveryOutcome, deliverWebhook } from '../../shared/tracking/webhooks/deliver.ts';
import { type FanOutOutcome, fanOutEvent } from '../../shared/tracking/webhooks/fan-out.ts';
import type { JobDeps, QueueProcessor, TypedJob } from '../processor.ts';
import { upsertSchedule } from './schedule.ts';

/** The id of the BullMQ job scheduler that deletes the webhook events whose deliveries ended. */
export const WEBHOOKS_CLEANUP_SCHEDULER_ID = 'webhooks-cleanup-every';

/**
 * Fans an event out to its hooks (job `event`; shared/tracking/webhooks/fan-out.ts). The jobs of
 * its deliveries are relayed at once.
 */
export async function webhookEvent(
  job: TypedJob<'webhooks', 'event'>,
  { db, logger, markDone, kickRelay }: JobDeps,
): Promise<FanOutOutcome> {
  const outcome = await fanOutEvent(db, job.data.eventId, markDone);
  if (outcome.deliveries > 0) kickRelay?.();
  logger.debug({ eventId: job.data.eventId, ...outcome }, 'webhook event');
  return outcome;
}

/**
 * Tries one delivery (job `deliver`; shared/tracking/webhooks/deliver.ts). A retry, or a wait for
 * the hook, moves the job to BullMQ's delayed set until then: it holds no worker meanwhile, uses
 * none of the job's attempts (those are for errors of ours: database, Redis), and keeps its
 * outbox row open, so a Redis that lost it has it relayed again.
 */
export async function webhookDeliver(
  job: TypedJob<'webhooks', 'deliver'>,
  { db, config, logger, markDone }: JobDeps,
): Promise<DeliveryOutcome> {
  const outcome = await deliverWebhook(db, config, job.data.deliveryId, markDone);
  logger.debug({ deliveryId: job.data.deliveryId, ...outcome }, 'webhook delivery');
  if (outcome.status === 'wait') {
    await job.moveToDelayed(outcome.until.getTime(), job.token);
    throw new DelayedError(`webhook delivery waits until ${outcome.until.toISOString()}: ${outcome.reason}`);
  }
  return outcome;
}

/** Deletes the events whose deliveries have all ended, past their retention (job `cleanup-events`). */
export async function cleanupWebhookEvents(
  job: TypedJob<'webhooks', 'cleanup-events'>,
  { db, logger }: JobDeps,
): Promise<{ deleted: number }> {
  const deleted = await purgeWebhookEvents(db);
  logger.info({ requestedBy: job.data.requestedBy, deleted }, 'webhook events cleaned up');
  return { deleted };
}

/** The hourly clean-up's job scheduler (idempotent: every worker process running the queue may set it). */
export async function scheduleWebhooksCleanup(queue: Queue): Promise<void> {
  await upsertSchedule(queue, WEBHOOKS_CLEANUP_SCHEDULER_ID, 'cleanup-events', 3600);
}

/** Queue `webhooks` (docs/webhooks.md). */
export const webhooksProcessor: QueueProcessor<'webhooks'> = {
  event: webhookEvent,
  deliver: webhookDeliver,
  'cleanup-events': cleanupWebhookEvents,
};
