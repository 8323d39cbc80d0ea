import { Queue, Worker } from 'bullmq';
import { type Config, ConfigError } from '../shared/config.ts';
import { createDb } from '../shared/db/database.ts';
import { migrateToLatest } from '../shared/db/migrate.ts';
import { createLogger, type Logger } from '../shared/observability/logger.ts';
import { createRedis } from '../shared/queue/connection.ts';
import { hasJobs, JOB_QUEUES, type JobQueue } from '../shared/queue/jobs.ts';
import { OutboxRelay } from '../shared/queue/outbox.ts';
import { QueueSet } from '../shared/queue/queues.ts';
import { checkProcessors, dispatch } from './dispatch.ts';
import type { Processors, QueueProcessor, WorkerDeps } from './processor.ts';
import { PROCESSORS, SCHEDULES } from './processors/index.ts';

export interface RunningWorkers {
  queues: JobQueue[];
  /** Stops taking jobs, lets current ones finish (up to SHUTDOWN_TIMEOUT_MS), closes connections. */
  close: () => Promise<void>;
}

/**
 * Picks the queues to run: those of WORKER_QUEUES that have jobs in this build (planned queues
 * without jobs are skipped, unless named explicitly: a start error), then refuses to start if one
 * of them lacks a processor or a handler.
 */
export function selectQueues(config: Config, processors: Partial<Processors>, explicit: boolean): JobQueue[] {
  const withoutJobs = config.WORKER_QUEUES.filter((q) => !hasJobs(q));
  if (explicit && withoutJobs.length > 0)
    throw new ConfigError(
      `WORKER_QUEUES: no jobs in this build for ${withoutJobs.join(', ')} (queues with jobs: ${JOB_QUEUES.join(', ')})`,
    );
  const names = config.WORKER_QUEUES.filter(hasJobs);
  checkProcessors(names, processors);
  return names;
}

/** Whether WORKER_QUEUES names queues (rather than being unset or `all`), for selectQueues. */
export function queuesNamedExplicitly(env: NodeJS.ProcessEnv = process.env): boolean {
  const value = env.WORKER_QUEUES?.trim();
  return Boolean(value && value !== 'all');
}

export async function startWorkers(
  config: Config,
  options: { processors?: Partial<Processors>; logger?: Logger; explicitQueues?: boolean } = {},
): Promise<RunningWorkers> {
  const logger = options.logger ?? createLogger(config.LOG_LEVEL, 'worker');
  const processors = options.processors ?? PROCESSORS;
  const names = selectQueues(config, processors, options.explicitQueues ?? false);
  const { db } = createDb(config.DATABASE_URL, Math.max(2, config.WORKER_CONCURRENCY));
  if (config.MIGRATE_ON_START) await migrateToLatest(db);
  const deps: WorkerDeps = { config, db, logger };
  const connection = createRedis(config.REDIS_URL, 'worker');
  const workers = names.map((name) => {
    // checkProcessors made sure it is there.
    const processor = processors[name] as QueueProcessor<typeof name>;
    const worker = new Worker(name, dispatch(name, processor, deps), {
      connection,
      prefix: config.QUEUE_PREFIX,
      concurrency: config.WORKER_CONCURRENCY,
    });
    worker.on('failed', (job, err) => logger.warn({ queue: name, jobId: job?.id, err }, 'job failed'));
    worker.on('error', (err) => logger.error({ queue: name, err }, 'worker error'));
    return worker;
  });
  // Every worker process also relays the outbox, so jobs flow even when no API process runs.
  const producer = new QueueSet(createRedis(config.REDIS_URL, 'producer'), config.QUEUE_PREFIX);
  const relay = new OutboxRelay(db, producer, config.OUTBOX_POLL_MS, (err) =>
    logger.warn({ err }, 'outbox relay pass failed'),
  );
  relay.start();
  // The job schedulers of the queues this process runs (on the worker connection: waits for Redis).
  for (const name of names) {
    const schedule = SCHEDULES[name];
    if (!schedule) continue;
    const queue = new Queue(name, { connection, prefix: config.QUEUE_PREFIX });
    await schedule(queue, config);
    await queue.close();
  }
  logger.info({ queues: names, concurrency: config.WORKER_CONCURRENCY }, 'workers started');

  let closed: Promise<void> | undefined;
  const shutdown = async () => {
    await relay.stop();
    // Worker.close() waits for active jobs; past the timeout we stop waiting (the jobs' locks
    // expire and another worker picks them up: at-least-once).
    await Promise.race([
      Promise.all(workers.map((w) => w.close())),
      new Promise((resolve) => setTimeout(resolve, config.SHUTDOWN_TIMEOUT_MS).unref()),
    ]);
    await producer.close();
    producer.connection.disconnect();
    connection.disconnect();
    await db.destroy();
  };
  const close = () => {
    closed = closed ?? shutdown();
    return closed;
  };
  return { queues: names, close };
}
