import type { Job } from 'bullmq';
import type { Config } from '../shared/config.ts';
import type { Db } from '../shared/db/database.ts';
import type { Logger } from '../shared/observability/logger.ts';

export interface WorkerDeps {
  config: Config;
  db: Db;
  logger: Logger;
}

/** Handles every job of one queue. Must be idempotent: delivery is at least once. */
export type Processor = (job: Job, deps: WorkerDeps) => Promise<unknown>;
