import { DelayedError } from 'bullmq';
import { type BatchRunOutcome, runBatchJob } from '../shared/tracking/jobs/batch-run.ts';
import { recordsSettings } from '../shared/tracking/records/settings.ts';
import type { JobDeps, TypedJob } from './processor.ts';

type BatchJob =
  | TypedJob<'records', 'records-recompute-job'>
  | TypedJob<'records', 'statistics-rebuild-job'>
  | TypedJob<'thumbnails', 'thumbnails-rebuild-job'>;

/**
 * The handler of a batch job staff started (POST /v2/jobs; shared/tracking/jobs/batch-run.ts):
 * one step, then, while the work it enqueued runs, the same BullMQ job moved back to `delayed`
 * (BullMQ's step-job pattern). Its outbox row stays open until the job ends, so the relay's
 * reconciler puts it back should Redis lose it; nothing holds a worker slot between checks.
 */
export async function batchJobStep(job: BatchJob, { config, db, logger, markDone, kickRelay }: JobDeps) {
  const outcome: BatchRunOutcome = await runBatchJob(db, job.data, {
    storageDir: config.STORAGE_DIR,
    settings: recordsSettings(config.RECORDS_FAMILIES_FILE),
    markDone,
  });
  // The work it enqueued goes to BullMQ now, not at the relay's next pass.
  kickRelay?.();
  if (outcome.status !== 'waiting') {
    logger.info(outcome, 'batch job');
    return outcome;
  }
  logger.debug(outcome, 'batch job: work still running, checking again later');
  await job.moveToDelayed(Date.now() + outcome.checkInMs, job.token);
  throw new DelayedError();
}
