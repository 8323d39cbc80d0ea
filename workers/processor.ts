import type { Job } from 'bullmq';
import type { Config } from '../shared/config.ts';
import type { Db } from '../shared/db/database.ts';
import type { Logger } from '../shared/observability/logger.ts';
import type { JobName, JobPayload, JobQueue } from '../shared/queue/jobs.ts';
import type { MarkDone } from '../shared/queue/outbox.ts';
import type { QueueSet } from '../shared/queue/queues.ts';

export interface WorkerDeps {
  config: Config;
  db: Db;
  logger: Logger;
  /** Asks the process's outbox relay for a pass now: a handler that wrote jobs has them sent at once. */
  kickRelay?: () => void;
  /**
   * The process's producer queues, for a handler that adds jobs at once, without outbox rows
   * (shared/queue/outbox.ts addJobsNow), because its own committed rows can make them again.
   */
  queues?: QueueSet;
}

/** A BullMQ job of the map in shared/queue/jobs.ts, its data typed by queue and name. */
export type TypedJob<Q extends JobQueue, N extends JobName<Q>> = Job<JobPayload<Q, N>, unknown, N>;

/** What a handler gets besides the worker's deps: its job's done mark (shared/queue/outbox.ts). */
export interface JobDeps extends WorkerDeps {
  /** Run it in the transaction that commits the job's effect; the worker marks the job after otherwise. */
  markDone: MarkDone;
}

/** Handles one job name. Must be idempotent: delivery is at least once. */
export type JobHandler<Q extends JobQueue, N extends JobName<Q>> = (
  job: TypedJob<Q, N>,
  deps: JobDeps,
) => Promise<unknown>;

/** The processor of one queue: a handler for each of its job names. */
export type QueueProcessor<Q extends JobQueue> = { [N in JobName<Q>]: JobHandler<Q, N> };

/** A processor for every queue that has jobs: adding a job to the map without its handler does not compile. */
export type Processors = { [Q in JobQueue]: QueueProcessor<Q> };
