import type { Config } from '../../shared/config.ts';
import { ActivityImportPool, importMemoryMb } from '../../shared/tracking/imports/pool.ts';
import { type BulkSplitOutcome, runBulkSplit } from '../../shared/tracking/jobs/bulk-split.ts';
import { type ImportJobOutcome, runImportJob } from '../../shared/tracking/jobs/import-job.ts';
import type { JobDeps, QueueProcessor, TypedJob } from '../processor.ts';

/**
 * Queue `imports` (docs/tracking-files.md, "Imports as jobs"): files imported on the workers,
 * each read in an import thread of this process (IMPORTS_CONCURRENCY threads: a long file never
 * holds the event loop that renews the jobs' locks).
 */

const pools = new WeakMap<Config, ActivityImportPool>();

function importPool(config: Config): ActivityImportPool {
  let pool = pools.get(config);
  if (!pool) {
    pool = new ActivityImportPool({
      threads: config.IMPORTS_CONCURRENCY,
      timeoutMs: config.IMPORT_TIMEOUT_S * 1000,
      // As many imports as the queue runs at once wait for a thread: none is ever refused busy.
      maxQueue: config.IMPORTS_CONCURRENCY,
      maxMemoryMb: importMemoryMb(config.activityFileLimitBytes),
    });
    pools.set(config, pool);
  }
  return pool;
}

export async function importFile(
  job: TypedJob<'imports', 'import-file'>,
  { config, db, logger, markDone }: JobDeps,
): Promise<ImportJobOutcome> {
  const outcome = await runImportJob(db, job.data, {
    storageDir: config.STORAGE_DIR,
    pool: importPool(config),
    markDone,
    lastAttempt: job.attemptsMade + 1 >= (job.opts.attempts ?? 1),
  });
  logger.info(outcome, 'import job');
  return outcome;
}

/** A bulk import's zip, split into a job per file (the files themselves are `import-file` jobs). */
export async function bulkSplit(
  job: TypedJob<'imports', 'bulk-split'>,
  { config, db, logger, markDone }: JobDeps,
): Promise<BulkSplitOutcome> {
  const outcome = await runBulkSplit(db, job.data, { storageDir: config.STORAGE_DIR, markDone });
  logger.info(outcome, 'bulk import split');
  return outcome;
}

export const importsProcessor: QueueProcessor<'imports'> = {
  'import-file': importFile,
  'bulk-split': bulkSplit,
};
