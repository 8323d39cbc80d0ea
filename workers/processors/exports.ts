import type { Queue } from 'bullmq';
import type { Config } from '../../shared/config.ts';
import { PERSONAL_DATA_SECTIONS } from '../../shared/services/index.ts';
import { activityFields } from '../../shared/tracking/activities/fields.ts';
import { type CleanupResult, cleanupExports } from '../../shared/tracking/exports/cleanup.ts';
import { buildExport, type ExportJobOutcome, markExportFailed } from '../../shared/tracking/exports/job.ts';
import { sweepOrphanJobFiles } from '../../shared/tracking/jobs/job-files-sweep.ts';
import type { JobDeps, QueueProcessor, TypedJob } from '../processor.ts';
import { upsertSchedule } from './schedule.ts';

/** The id of the BullMQ job scheduler that runs the cleanup of expired exports. */
export const EXPORTS_CLEANUP_SCHEDULER_ID = 'exports-cleanup-every';

/** Seconds between two cleanups: hourly, or every EXPORT_TTL_S when shorter, so a file outlives its link by at most that. */
export const cleanupIntervalSeconds = (config: Pick<Config, 'EXPORT_TTL_S'>) => Math.min(3600, config.EXPORT_TTL_S);

/**
 * Builds an export's zip (job `user-export`; shared/tracking/exports/job.ts). The archive's
 * `activities.json` holds each activity as the API answers it in plain JSON, without streams.
 * When the last attempt fails, the export is marked failed (the user may then ask again).
 */
export async function userExport(
  job: TypedJob<'exports', 'user-export'>,
  { config, db, logger, markDone }: JobDeps,
): Promise<ExportJobOutcome> {
  const { exportId } = job.data;
  try {
    const outcome = await buildExport(db, exportId, {
      storageDir: config.STORAGE_DIR,
      ttlSeconds: config.EXPORT_TTL_S,
      publicUrl: config.PUBLIC_URL,
      summaryOf: activityFields,
      personalData: PERSONAL_DATA_SECTIONS,
      onProgress: ({ handled, total }) => job.updateProgress({ handled, total }),
      markDone,
    });
    logger.info(outcome, 'export');
    return outcome;
  } catch (error) {
    if (job.attemptsMade + 1 >= (job.opts.attempts ?? 1))
      await markExportFailed(db, exportId, config.EXPORT_TTL_S, 'the archive could not be built');
    throw error;
  }
}

/** Deletes expired exports and their files, fails stale ones, sweeps orphan import files (job `cleanup-expired`). */
export async function cleanupExpiredExports(
  job: TypedJob<'exports', 'cleanup-expired'>,
  { config, db, logger }: JobDeps,
): Promise<CleanupResult & { orphanImportFiles: number }> {
  const result = await cleanupExports(db, config.STORAGE_DIR, config.EXPORT_TTL_S);
  // The imports' stored files have the same life: swept with them.
  const orphanImportFiles = await sweepOrphanJobFiles(db, config.STORAGE_DIR);
  logger.info({ requestedBy: job.data.requestedBy, ...result, orphanImportFiles }, 'exports cleaned up');
  return { ...result, orphanImportFiles };
}

/**
 * Creates or updates the job scheduler of the cleanup (idempotent: every worker process running
 * the queue may do it at start). The first run is at once, then one per interval.
 */
export async function scheduleExportsCleanup(queue: Queue, config: Config): Promise<void> {
  await upsertSchedule(queue, EXPORTS_CLEANUP_SCHEDULER_ID, 'cleanup-expired', cleanupIntervalSeconds(config));
}

/** Queue `exports`. */
export const exportsProcessor: QueueProcessor<'exports'> = {
  'user-export': userExport,
  'cleanup-expired': cleanupExpiredExports,
};
