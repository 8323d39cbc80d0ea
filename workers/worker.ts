import { Queue, Worker } from 'bullmq';
import { type Config, ConfigError } from '../shared/config.ts';
import { createDb } from '../shared/db/database.ts';
import { assertMigrated, migrateToLatest } from '../shared/db/migrate.ts';
import { releaseName } from '../shared/db/release.ts';
import { createLogger, type Logger } from '../shared/observability/logger.ts';
import { runWithRequestContext } from '../shared/observability/request-context.ts';
import { createRedis, queuePrefix, waitForReady } from '../shared/queue/connection.ts';
import { decodeJobMeta } from '../shared/queue/job-meta.ts';
import { hasJobs, JOB_QUEUES, type JobQueue } from '../shared/queue/jobs.ts';
import { markOutboxFailed } from '../shared/queue/outbox.ts';
import { outboxJobId } from '../shared/queue/outbox-epoch.ts';
import { OutboxRelay } from '../shared/queue/outbox-relay.ts';
import { QueueSet } from '../shared/queue/queues.ts';
import { redisDurability } from '../shared/queue/redis-durability.ts';
import { onSideEffectsCommitted } from '../shared/unit-of-work/unit-of-work.ts';
import { checkProcessors, dispatch } from './dispatch.ts';
import { WorkerMetrics } from './metrics.ts';
import type { Processors, QueueProcessor, WorkerDeps } from './processor.ts';
import { CONCURRENCY, PROCESSORS, SCHEDULES } from './processors/index.ts';

export interface RunningWorkers {
  queues: JobQueue[];
  /** The URL of this process's /metrics when WORKER_METRICS_PORT is set. */
  metricsUrl?: string;
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
  // A connection per job running at once; a queue with its own concurrency (webhooks: its jobs
  // mostly wait on the network) counts up to DATABASE_POOL_MAX.
  const own = names.map((n) => Math.min(CONCURRENCY[n]?.(config) ?? 0, config.DATABASE_POOL_MAX));
  const { db } = createDb(config.DATABASE_URL, Math.max(2, config.WORKER_CONCURRENCY, ...own), {
    application_name: releaseName('worker'),
    preparedStatements: config.DATABASE_PREPARED_STATEMENTS,
  });
  if (config.MIGRATE_ON_START) await migrateToLatest(db);
  else await assertMigrated(db);
  const deps: WorkerDeps = { config, db, logger };
  const metrics = new WorkerMetrics();
  const connection = createRedis(config, 'worker');
  const workers = names.map((name) => {
    // checkProcessors made sure it is there.
    const processor = processors[name] as QueueProcessor<typeof name>;
    metrics.watch(name);
    const worker = new Worker(name, dispatch(name, processor, deps, metrics), {
      connection,
      prefix: queuePrefix(config.QUEUE_PREFIX, name, connection.isCluster),
      concurrency: CONCURRENCY[name]?.(config) ?? config.WORKER_CONCURRENCY,
      // A killed worker's job is taken up again once its lock expires and the next stalled check
      // runs. BullMQ renews the lock every half of it while the event loop is free: no handler
      // holds the loop that long (long ones, exports, await between activities).
      lockDuration: config.WORKER_LOCK_DURATION_MS,
      stalledInterval: config.WORKER_STALLED_INTERVAL_MS,
      // Short locks make a spurious stall (a long pause of the process) likelier: one more is
      // forgiven before BullMQ fails the job as stalled too often.
      maxStalledCount: 2,
    });
    worker.on('failed', (job, err) => {
      // Retries left: BullMQ delays the job. None (or unrecoverable): the job waits for an operator.
      const final = !job || err.name === 'UnrecoverableError' || job.attemptsMade >= (job.opts.attempts ?? 1);
      metrics.jobFailed(name, final);
      const meta = decodeJobMeta(job?.opts?.telemetry?.metadata);
      const line = () =>
        logger.warn(
          {
            queue: name,
            jobId: job?.id,
            attemptsMade: job?.attemptsMade,
            final,
            err,
            ...(meta?.requestId ? { reqId: meta.requestId } : {}),
          },
          'job failed',
        );
      // In the job's request context: the line carries its trace id (the job's span has ended).
      if (meta === undefined) line();
      else runWithRequestContext(meta, line);
      if (final && job?.id !== undefined)
        markOutboxFailed(db, name, outboxJobId(job.id)).catch((error: unknown) =>
          // The reconciler finds the job failed later and marks the row then.
          logger.warn({ queue: name, jobId: job.id, err: error }, 'outbox row not marked failed'),
        );
    });
    worker.on('stalled', (jobId) => {
      metrics.jobStalled(name);
      logger.warn({ queue: name, jobId }, 'job stalled: its worker stopped renewing the lock; put back in line');
    });
    worker.on('error', (err) => logger.error({ queue: name, err }, 'worker error'));
    return worker;
  });
  // Every worker process also relays the outbox, so jobs flow even when no API process runs; its
  // relay also reconciles: it relays again the jobs Redis lost.
  const producer = new QueueSet(createRedis(config, 'producer'), config.QUEUE_PREFIX);
  // Set once the job schedulers are known (below): a loss seen before then needs no extra check.
  let afterRedisLoss = () => {};
  const relay = new OutboxRelay(
    db,
    producer,
    config.OUTBOX_POLL_MS,
    (err) => logger.warn({ err }, 'outbox relay pass failed'),
    {
      reconcileAfterS: config.OUTBOX_RECONCILE_AFTER_S,
      onReconcile: (result) => {
        metrics.reconciled(result);
        logger.warn(result, 'outbox reconciled: jobs not completed long after their relay were looked for in Redis');
      },
      watchQueues: JOB_QUEUES,
      onRedisLoss: (lost, result) => {
        metrics.redisLoss(lost, result);
        logger.warn(
          { queues: lost, ...result },
          "queues' marker keys missing from Redis (a new Redis, or one that lost its data): open outbox rows looked for in Redis at once",
        );
        afterRedisLoss();
      },
      onNewEpoch: (check) =>
        logger.warn(
          check,
          'outbox: new epoch (the database was restored, copied or promoted): open rows relayed again under new job ids',
        ),
    },
  );
  relay.start();
  deps.kickRelay = () => relay.kick();
  const stopKicks = onSideEffectsCommitted(deps.kickRelay);
  deps.queues = producer;
  const served =
    config.WORKER_METRICS_PORT === undefined ? undefined : await metrics.serve(config.HOST, config.WORKER_METRICS_PORT);
  // The job schedulers of the queues this process runs (on the worker connection: waits for Redis).
  const scheduled = names.flatMap((name) => {
    const schedule = SCHEDULES[name];
    const prefix = queuePrefix(config.QUEUE_PREFIX, name, connection.isCluster);
    return schedule ? [{ queue: new Queue(name, { connection, prefix }), schedule }] : [];
  });
  for (const { queue, schedule } of scheduled) await schedule(queue, config);
  // A Redis that lost its data lost the schedulers too: put back those gone (upserting one that
  // exists is avoided: it could move its next run). At once when the relay sees the loss.
  let checking = false;
  async function checkSchedules() {
    if (checking) return;
    checking = true;
    try {
      for (const { queue, schedule } of scheduled)
        if ((await queue.getJobSchedulersCount()) === 0) {
          await schedule(queue, config);
          // A schedule switched off (RECOMMENDATIONS_INTERVAL_S=0) stays off: nothing to say.
          if ((await queue.getJobSchedulersCount()) > 0)
            logger.warn({ queue: queue.name }, 'job scheduler missing from Redis: set up again');
        }
    } catch (err) {
      logger.warn({ err }, 'job schedulers not checked');
    } finally {
      checking = false;
    }
  }
  const scheduleCheck = setInterval(checkSchedules, config.OUTBOX_RECONCILE_AFTER_S * 1000);
  afterRedisLoss = () => void checkSchedules();
  scheduleCheck.unref();
  // Said once at start (and kept on /metrics): the reconciler makes up for a Redis that loses
  // data, but only an AOF and noeviction keep the jobs and their history.
  waitForReady(producer.connection, 30_000)
    .then(() => redisDurability(producer.connection))
    .then(
      (problems) => {
        metrics.redisDurability(problems);
        for (const p of problems) logger.warn({ node: p.node, problem: p.problem }, p.message);
      },
      (err: unknown) => logger.warn({ err }, 'Redis persistence settings not checked'),
    );
  logger.info(
    {
      queues: names,
      concurrency: config.WORKER_CONCURRENCY,
      ...(served ? { metrics: served.url, metricsListen: served.listen } : {}),
    },
    'workers started',
  );

  let closed: Promise<void> | undefined;
  const shutdown = async () => {
    stopKicks();
    await relay.stop();
    clearInterval(scheduleCheck);
    served?.server.close();
    served?.server.closeAllConnections();
    // Worker.close() waits for active jobs; past the timeout we stop waiting (the jobs' locks
    // expire and another worker picks them up: at-least-once).
    await Promise.race([
      Promise.all(workers.map((w) => w.close())),
      new Promise((resolve) => setTimeout(resolve, config.SHUTDOWN_TIMEOUT_MS).unref()),
    ]);
    await producer.close();
    await Promise.allSettled(scheduled.map(({ queue }) => queue.close()));
    producer.connection.disconnect();
    connection.disconnect();
    await db.destroy();
  };
  const close = () => {
    closed = closed ?? shutdown();
    return closed;
  };
  return { queues: names, ...(served ? { metricsUrl: served.url } : {}), close };
}
