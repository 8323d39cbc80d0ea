import { Worker } from 'bullmq';
import { type Config, ConfigError, type QueueName } from '../shared/config.ts';
import { createDb } from '../shared/db/database.ts';
import { migrateToLatest } from '../shared/db/migrate.ts';
import { type Logger, createLogger } from '../shared/observability/logger.ts';
import { createRedis } from '../shared/queue/connection.ts';
import { OutboxRelay } from '../shared/queue/outbox.ts';
import { QueueSet } from '../shared/queue/queues.ts';
import type { Processor, WorkerDeps } from './processor.ts';
import { PROCESSORS } from './processors/index.ts';

export interface RunningWorkers {
  queues: QueueName[];
  /** Stops taking jobs, lets current ones finish (up to SHUTDOWN_TIMEOUT_MS), closes connections. */
  close: () => Promise<void>;
}

/** Picks the queues to run: WORKER_QUEUES, limited to those with a processor in this build. */
export function selectQueues(
  config: Config,
  processors: Partial<Record<QueueName, Processor>>,
  explicit: boolean,
): QueueName[] {
  const missing = config.WORKER_QUEUES.filter((q) => !processors[q]);
  if (explicit && missing.length > 0)
    throw new ConfigError(`WORKER_QUEUES: no processor in this build for ${missing.join(', ')}`);
  return config.WORKER_QUEUES.filter((q) => processors[q]);
}

export async function startWorkers(
  config: Config,
  options: { processors?: Partial<Record<QueueName, Processor>>; logger?: Logger; explicitQueues?: boolean } = {},
): Promise<RunningWorkers> {
  const logger = options.logger ?? createLogger(config.LOG_LEVEL, 'worker');
  const processors = options.processors ?? PROCESSORS;
  const names = selectQueues(config, processors, options.explicitQueues ?? false);
  const { db } = createDb(config.DATABASE_URL, Math.max(2, config.WORKER_CONCURRENCY));
  if (config.MIGRATE_ON_START) await migrateToLatest(db);
  const deps: WorkerDeps = { config, db, logger };
  const connection = createRedis(config.REDIS_URL, 'worker');
  const workers = names.map((name) => {
    const processor = processors[name] as Processor;
    const worker = new Worker(name, (job) => processor(job, deps), {
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
