import { job, type OutboxJob } from '../../queue/jobs.ts';

/**
 * The outbox job that draws an activity's thumbnail, for the activity's writes to add in their
 * transaction: at its creation, when its sport changes (a placeholder depends on it) and when
 * the user clears a thumbnail of their own; `requestedAt` for `npm run derived:rebuild` (its own job id).
 */
export function trackThumbnailJob(activity: { id: string; version: number }, requestedAt?: string): OutboxJob {
  return job('thumbnails', 'activity-track-thumbnail', {
    activityId: activity.id,
    version: activity.version,
    ...(requestedAt === undefined ? {} : { requestedAt }),
  });
}
