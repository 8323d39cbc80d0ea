import { readFile } from 'node:fs/promises';
import { resolveStoragePath, writeStorageFile } from '../../shared/media/storage.ts';
import { renderThumbnail, thumbnailPathFor } from '../../shared/media/thumbnail.ts';
import { currentActivityImage, setActivityThumbnail } from '../../shared/places/images.ts';
import {
  drawActivityThumbnail,
  type TrackThumbnailOutcome,
} from '../../shared/tracking/thumbnail/activity-thumbnail.ts';
import type { QueueProcessor, TypedJob, WorkerDeps } from '../processor.ts';

export type ThumbnailOutcome =
  | { status: 'done'; thumbnailPath: string; width: number; height: number; bytes: number }
  | { status: 'skipped'; reason: string };

/**
 * Renders the thumbnail of an activity picture (job `activity-thumbnail`). Idempotent: the thumbnail
 * path derives from the original's path and the render is deterministic, so a second run writes
 * the same bytes to the same file and sets the same column. If the activity is gone or shows
 * another picture since, the job is skipped (a newer upload queued its own job).
 */
export async function renderActivityThumbnail(
  job: TypedJob<'thumbnails', 'activity-thumbnail'>,
  { config, db, logger }: WorkerDeps,
): Promise<ThumbnailOutcome> {
  const { activityId, imagePath } = job.data;
  const current = await currentActivityImage(db, activityId);
  if (!current) return { status: 'skipped', reason: 'activity deleted' };
  if (current.image_path !== imagePath) return { status: 'skipped', reason: 'activity picture replaced' };
  const source = resolveStoragePath(config.STORAGE_DIR, imagePath);
  if (!source) throw new Error(`invalid stored image path "${imagePath}"`);
  // A missing original throws: BullMQ retries (the storage volume may be briefly unavailable).
  const thumbnail = await renderThumbnail(await readFile(source));
  const thumbnailPath = thumbnailPathFor(imagePath);
  await writeStorageFile(config.STORAGE_DIR, thumbnailPath, thumbnail.data);
  if (!(await setActivityThumbnail(db, activityId, imagePath, thumbnailPath))) {
    return { status: 'skipped', reason: 'activity picture replaced while rendering' };
  }
  logger.debug({ activityId, thumbnailPath, bytes: thumbnail.data.length }, 'thumbnail rendered');
  return {
    status: 'done',
    thumbnailPath,
    width: thumbnail.width,
    height: thumbnail.height,
    bytes: thumbnail.data.length,
  };
}

/**
 * Draws a tracking activity's thumbnail from its GPS track, or its sport's placeholder (job
 * `activity-track-thumbnail`, see shared/tracking/thumbnail/activity-thumbnail.ts).
 */
export async function trackingActivityThumbnail(
  job: TypedJob<'thumbnails', 'activity-track-thumbnail'>,
  { config, db, logger }: WorkerDeps,
): Promise<TrackThumbnailOutcome> {
  const outcome = await drawActivityThumbnail(db, config, job.data.activityId);
  logger.debug({ activityId: job.data.activityId, version: job.data.version, ...outcome }, 'track thumbnail');
  return outcome;
}

/** Queue `thumbnails`. */
export const thumbnailsProcessor: QueueProcessor<'thumbnails'> = {
  'activity-thumbnail': renderActivityThumbnail,
  'activity-track-thumbnail': trackingActivityThumbnail,
};
