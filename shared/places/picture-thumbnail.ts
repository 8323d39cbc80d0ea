import { readFile } from 'node:fs/promises';
import type { Db } from '../db/database.ts';
import { resolveStoragePath, writeStorageFile } from '../media/storage.ts';
import { renderThumbnail, thumbnailPathFor } from '../media/thumbnail.ts';
import { type MarkDone, NO_MARK } from '../queue/outbox.ts';
import { currentActivityImage, setActivityThumbnail } from './images.ts';

export type PictureThumbnailOutcome =
  | { status: 'done'; thumbnailPath: string; width: number; height: number; bytes: number }
  | { status: 'skipped'; reason: string };

/**
 * Renders the thumbnail of a place activity's picture (job `activity-thumbnail`,
 * docs/places-pictures.md). Idempotent: the thumbnail path derives from the original's path and
 * the render is deterministic, so a second run writes the same bytes to the same file and sets the
 * same column. If the activity is gone or shows another picture since, it is skipped (a newer
 * upload queued its own job). `markDone` (the job's) commits with the thumbnail's column.
 */
export async function renderPictureThumbnail(
  db: Db,
  storageDir: string,
  { activityId, imagePath }: { activityId: number; imagePath: string },
  markDone: MarkDone = NO_MARK,
): Promise<PictureThumbnailOutcome> {
  const current = await currentActivityImage(db, activityId);
  if (!current) return { status: 'skipped', reason: 'activity deleted' };
  if (current.image_path !== imagePath) return { status: 'skipped', reason: 'activity picture replaced' };
  const source = resolveStoragePath(storageDir, imagePath);
  if (!source) throw new Error(`invalid stored image path "${imagePath}"`);
  // A missing original throws: BullMQ retries (the storage volume may be briefly unavailable).
  const thumbnail = await renderThumbnail(await readFile(source));
  const thumbnailPath = thumbnailPathFor(imagePath);
  await writeStorageFile(storageDir, thumbnailPath, thumbnail.data);
  const set = await db.transaction().execute(async (trx) => {
    const changed = await setActivityThumbnail(trx, activityId, imagePath, thumbnailPath);
    if (changed) await markDone(trx);
    return changed;
  });
  if (!set) return { status: 'skipped', reason: 'activity picture replaced while rendering' };
  return {
    status: 'done',
    thumbnailPath,
    width: thumbnail.width,
    height: thumbnail.height,
    bytes: thumbnail.data.length,
  };
}
