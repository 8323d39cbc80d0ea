import { type PictureThumbnailOutcome, renderPictureThumbnail } from '../../shared/places/picture-thumbnail.ts';
import {
  drawActivityThumbnail,
  type TrackThumbnailOutcome,
} from '../../shared/tracking/thumbnail/activity-thumbnail.ts';
import { batchJobStep } from '../batch-job-step.ts';
import type { JobDeps, QueueProcessor, TypedJob } from '../processor.ts';

/**
 * Renders the thumbnail of a place activity's picture (job `activity-thumbnail`, see
 * shared/places/picture-thumbnail.ts).
 */
export async function renderActivityThumbnail(
  job: TypedJob<'thumbnails', 'activity-thumbnail'>,
  { config, db, logger, markDone }: JobDeps,
): Promise<PictureThumbnailOutcome> {
  const outcome = await renderPictureThumbnail(db, config.STORAGE_DIR, job.data, markDone);
  logger.debug({ activityId: job.data.activityId, ...outcome }, 'thumbnail');
  return outcome;
}

/**
 * Draws a tracking activity's thumbnail from its GPS track, or its sport's placeholder (job
 * `activity-track-thumbnail`, see shared/tracking/thumbnail/activity-thumbnail.ts).
 */
export async function trackingActivityThumbnail(
  job: TypedJob<'thumbnails', 'activity-track-thumbnail'>,
  { config, db, logger, markDone }: JobDeps,
): Promise<TrackThumbnailOutcome> {
  const outcome = await drawActivityThumbnail(db, config, job.data.activityId, markDone);
  logger.debug({ activityId: job.data.activityId, version: job.data.version, ...outcome }, 'track thumbnail');
  return outcome;
}

/**
 * Queue `thumbnails`. A `thumbnails_rebuild` batch job (POST /v2/jobs) runs here, beside the
 * drawings it enqueues: a process that draws thumbnails also follows their rebuild.
 */
export const thumbnailsProcessor: QueueProcessor<'thumbnails'> = {
  'activity-thumbnail': renderActivityThumbnail,
  'activity-track-thumbnail': trackingActivityThumbnail,
  'thumbnails-rebuild-job': batchJobStep,
};
