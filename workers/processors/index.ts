import type { Queue } from 'bullmq';
import type { Config } from '../../shared/config.ts';
import type { JobQueue } from '../../shared/queue/jobs.ts';
import type { Processors } from '../processor.ts';
import { exportsProcessor, scheduleExportsCleanup } from './exports.ts';
import { importsProcessor } from './imports.ts';
import { maintenanceProcessor, scheduleMaintenance } from './maintenance.ts';
import { recommendationsProcessor, scheduleRecommendations } from './recommendations.ts';
import { recordsProcessor } from './records.ts';
import { thumbnailsProcessor } from './thumbnails.ts';
import { scheduleWebhooksCleanup, webhooksProcessor } from './webhooks.ts';

/**
 * The processor of each queue that has jobs (shared/queue/jobs.ts). The type requires one per
 * queue and a handler per job name; the worker checks it again at start (see checkProcessors).
 */
export const PROCESSORS: Processors = {
  records: recordsProcessor,
  thumbnails: thumbnailsProcessor,
  recommendations: recommendationsProcessor,
  exports: exportsProcessor,
  maintenance: maintenanceProcessor,
  webhooks: webhooksProcessor,
  imports: importsProcessor,
};

/**
 * Job schedulers, per queue: a worker process that runs the queue upserts them at start
 * (idempotent: several processes make one schedule).
 */
export const SCHEDULES: { [Q in JobQueue]?: (queue: Queue, config: Config) => Promise<void> } = {
  recommendations: scheduleRecommendations,
  exports: scheduleExportsCleanup,
  maintenance: scheduleMaintenance,
  webhooks: scheduleWebhooksCleanup,
};

/**
 * Jobs a worker process runs at once per queue, where it is not WORKER_CONCURRENCY: deliveries
 * mostly wait on receivers, so many run at once (a slow receiver does not hold the others).
 */
export const CONCURRENCY: { [Q in JobQueue]?: (config: Config) => number } = {
  webhooks: (config) => config.WEBHOOKS_CONCURRENCY,
  // One import thread per job at once (workers/processors/imports.ts).
  imports: (config) => config.IMPORTS_CONCURRENCY,
};
