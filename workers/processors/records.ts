import {
  progressAlongRecords,
  rebuildProgressBefore,
  refreshChallengeJob,
} from '../../shared/tracking/progress/records-step.ts';
import { recordsSettings } from '../../shared/tracking/records/settings.ts';
import { updateActivityRecords } from '../../shared/tracking/records/update-records.ts';
import { rebuildSumupsJob, sumupsAlongRecords } from '../../shared/tracking/sumups/records-step.ts';
import { batchJobStep } from '../batch-job-step.ts';
import type { QueueProcessor } from '../processor.ts';

/**
 * Queue `records` (docs/tracking-records.md): after each change of an activity, its best efforts
 * are recomputed and its user's records of the sports it touched are refreshed; the same for an
 * activity `npm run records:recompute` names. The statistics by period, the gear totals and the
 * challenges follow the activity in the same transaction (docs/tracking-statistics.md,
 * docs/tracking-gear-goals-challenges.md). Idempotent (at-least-once delivery).
 */
export const recordsProcessor: QueueProcessor<'records'> = {
  'activity-changed': async (job, { db, config, markDone }) => {
    const { activityId, userId, sportId, previousSportId } = job.data;
    // Each step's markDone runs the next one's work first: statistics, then gear and challenges, then the mark.
    const progress = progressAlongRecords({ activityId, userId }, markDone);
    const sumups = sumupsAlongRecords(db, { activityId, userId }, progress.markDone);
    const outcome = await updateActivityRecords(
      db,
      { activityId, userId, sports: previousSportId === null ? [sportId] : [sportId, previousSportId], force: false },
      recordsSettings(config.RECORDS_FAMILIES_FILE),
      { markDone: sumups.markDone },
    );
    return { ...outcome, sumups: await sumups.finish(), progress: progress.outcome() ?? null };
  },
  'recompute-activity': async (job, { db, config, logger, markDone }) => {
    const { activityId, userId, settings, forced } = job.data;
    const sumups = sumupsAlongRecords(db, { activityId, userId }, markDone);
    const outcome = await updateActivityRecords(
      db,
      { activityId, userId, sports: [], force: forced !== null },
      recordsSettings(config.RECORDS_FAMILIES_FILE),
      { markDone: sumups.markDone },
    );
    // The command and the workers read their own RECORDS_FAMILIES_FILE: say when they disagree.
    if (outcome.settings !== settings)
      logger.warn(
        { jobId: job.id, asked: settings, used: outcome.settings },
        'records:recompute ran with other records settings than this worker (RECORDS_FAMILIES_FILE or the datatypes differ)',
      );
    return { ...outcome, sumups: await sumups.finish() };
  },
  // records:recompute asks one per user: the gear totals and challenges are rebuilt with the statistics.
  'sumups-rebuild': async (job, { db, markDone }) =>
    rebuildSumupsJob(db, job.data.userId, rebuildProgressBefore(job.data.userId, markDone)),
  'challenge-refresh': async (job, { db, markDone }) => refreshChallengeJob(db, job.data, markDone),
  // Batch jobs staff started (POST /v2/jobs): enqueue the work, then follow it until done.
  'records-recompute-job': batchJobStep,
  'statistics-rebuild-job': batchJobStep,
};
