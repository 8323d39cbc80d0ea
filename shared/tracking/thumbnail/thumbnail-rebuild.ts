import { access } from 'node:fs/promises';
import { sql } from 'kysely';
import type { Db } from '../../db/database.ts';
import { resolveStoragePath } from '../../media/storage.ts';
import { job } from '../../queue/jobs.ts';
import { enqueueInTransaction } from '../../queue/outbox-write.ts';
import { trackThumbnailJob } from '../activities/thumbnail-job.ts';
import { activitiesInScope } from '../records/recompute-requests.ts';
import { hasFilters, type RecomputeScope } from '../records/recompute-scope.ts';
import { generatedThumbnailPath } from './activity-thumbnail.ts';

/** What `npm run derived:rebuild -- --thumbnails` found and asked for. */
export interface ThumbnailRebuildSummary {
  /** Tracking activities: jobs enqueued, drawings found in STORAGE_DIR, thumbnails the users set (not ours to draw). */
  activities: { total: number; enqueued: number; present: number; userSet: number };
  /** Place activity pictures: jobs enqueued, thumbnails found, originals missing from STORAGE_DIR (nothing to render from). */
  pictures: { total: number; enqueued: number; present: number; originalMissing: number };
}

export interface ThumbnailRebuildOptions {
  /** Also the thumbnails whose file is there. */
  force: boolean;
  /** Compact time of the request, in the job ids: the jobs that drew them first may still be completed in Redis. */
  requestedAt: string;
  /**
   * Only the tracking activities of this scope (a `thumbnails_rebuild` job's); the place pictures
   * only when it is every user's, unfiltered. Absent: everything.
   */
  scope?: RecomputeScope;
  pageSize?: number;
}

async function stored(storageDir: string, relative: string | null | undefined): Promise<boolean> {
  const full = relative ? resolveStoragePath(storageDir, relative) : undefined;
  if (!full) return false;
  try {
    await access(full);
    return true;
  } catch {
    return false;
  }
}

/**
 * Enqueues, through the outbox, the jobs that draw again the thumbnails STORAGE_DIR lacks (every
 * one with `force`): `activity-track-thumbnail` for each tracking activity whose thumbnail is ours
 * (or none yet), `activity-thumbnail` for each place activity picture whose original is there.
 * One transaction per page; the handlers are idempotent, so a job for a thumbnail that came back
 * meanwhile only writes the same file again.
 */
export async function enqueueThumbnailRebuild(
  db: Db,
  storageDir: string,
  { force, requestedAt, scope = { all: true }, pageSize = 500 }: ThumbnailRebuildOptions,
): Promise<ThumbnailRebuildSummary> {
  const summary: ThumbnailRebuildSummary = {
    activities: { total: 0, enqueued: 0, present: 0, userSet: 0 },
    pictures: { total: 0, enqueued: 0, present: 0, originalMissing: 0 },
  };

  let afterActivity = '';
  for (;;) {
    const page = await activitiesInScope(db, scope)
      .select(['a.id', 'a.version', 'a.thumbnail'])
      .where('a.id', '>', afterActivity)
      .orderBy('a.id')
      .limit(pageSize)
      .execute();
    if (page.length === 0) break;
    const todo = await Promise.all(
      page.map(async (a) => {
        const path = generatedThumbnailPath(a.thumbnail);
        if (a.thumbnail !== null && path === undefined) return 'user';
        return !force && (await stored(storageDir, path)) ? 'present' : a;
      }),
    );
    const jobs = todo.flatMap((a) => (typeof a === 'string' ? [] : [trackThumbnailJob(a, requestedAt)]));
    if (jobs.length > 0) await db.transaction().execute((trx) => enqueueInTransaction(trx, jobs));
    summary.activities.total += page.length;
    summary.activities.enqueued += jobs.length;
    summary.activities.present += todo.filter((a) => a === 'present').length;
    summary.activities.userSet += todo.filter((a) => a === 'user').length;
    afterActivity = page.at(-1)?.id ?? afterActivity;
  }

  // Place pictures belong to no tracking user or sport.
  if ('userId' in scope || hasFilters(scope)) return summary;
  let afterPicture = 0;
  for (;;) {
    const page = await db
      .selectFrom('place_activities')
      .select(['id', 'image_path', 'thumbnail_path'])
      .where('image_path', 'is not', null)
      .where('id', '>', afterPicture)
      .orderBy('id')
      .limit(pageSize)
      .execute();
    if (page.length === 0) break;
    const todo = await Promise.all(
      page.map(async (p) => {
        if (!(await stored(storageDir, p.image_path))) return 'missing';
        return !force && (await stored(storageDir, p.thumbnail_path)) ? 'present' : p;
      }),
    );
    const jobs = todo.flatMap((p) =>
      typeof p === 'string'
        ? []
        : [
            job('thumbnails', 'activity-thumbnail', {
              activityId: p.id,
              imagePath: p.image_path as string,
              requestedAt,
            }),
          ],
    );
    if (jobs.length > 0) await db.transaction().execute((trx) => enqueueInTransaction(trx, jobs));
    summary.pictures.total += page.length;
    summary.pictures.enqueued += jobs.length;
    summary.pictures.present += todo.filter((p) => p === 'present').length;
    summary.pictures.originalMissing += todo.filter((p) => p === 'missing').length;
    afterPicture = page.at(-1)?.id ?? afterPicture;
  }
  return summary;
}

/** The rebuild's jobs not done yet, and those failed for good (for `derived:rebuild --wait`). */
export async function thumbnailRebuildProgress(
  db: Db,
  requestedAt: string,
): Promise<{ pending: number; failed: number }> {
  const row = await db
    .selectFrom('outbox')
    .select([
      sql<number>`count(*) filter (where done_at is null and failed_at is null)`.as('pending'),
      sql<number>`count(*) filter (where done_at is null and failed_at is not null)`.as('failed'),
    ])
    .where('queue', '=', 'thumbnails')
    .where('job_id', 'like', `%-${requestedAt}`)
    .executeTakeFirstOrThrow();
  return { pending: Number(row.pending), failed: Number(row.failed) };
}
