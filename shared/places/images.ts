import { sql } from 'kysely';
import type { Db } from '../db/database.ts';
import { job } from '../queue/jobs.ts';
import { unitOfWork } from '../unit-of-work/unit-of-work.ts';

/** Where an activity picture is stored, relative to STORAGE_DIR. */
export function activityImagePath(placeUuid: string, sportId: number, name: string, ext: string): string {
  return `places/${placeUuid.toLowerCase()}/${sportId}/${name}.${ext}`;
}

/**
 * Points the activity at its new picture and stores the thumbnail job, in one transaction: the
 * job exists exactly when the new picture does. Returns the paths it replaced (to delete after
 * the commit).
 */
export async function setActivityImage(
  db: Db,
  activityId: number,
  imagePath: string,
): Promise<{ previousImage: string | null; previousThumbnail: string | null } | undefined> {
  return unitOfWork(db, async (uow) => {
    const { trx } = uow;
    const previous = await trx
      .selectFrom('place_activities')
      .select(['image_path', 'thumbnail_path'])
      .where('id', '=', activityId)
      .forUpdate()
      .executeTakeFirst();
    if (!previous) return undefined;
    await trx
      .updateTable('place_activities')
      .set({ image_path: imagePath, thumbnail_path: null, updated_at: sql<Date>`now()` })
      .where('id', '=', activityId)
      .execute();
    uow.enqueue(job('thumbnails', 'activity-thumbnail', { activityId, imagePath }));
    return { previousImage: previous.image_path, previousThumbnail: previous.thumbnail_path };
  });
}

/** The activity's current original, or undefined if the activity is gone. */
export async function currentActivityImage(
  db: Db,
  activityId: number,
): Promise<{ image_path: string | null; thumbnail_path: string | null } | undefined> {
  return db
    .selectFrom('place_activities')
    .select(['image_path', 'thumbnail_path'])
    .where('id', '=', activityId)
    .executeTakeFirst();
}

/**
 * Records the thumbnail, only if the activity still shows the original it was made from
 * (a newer upload wins). Returns whether it was recorded.
 */
export async function setActivityThumbnail(
  db: Db,
  activityId: number,
  imagePath: string,
  thumbnailPath: string,
): Promise<boolean> {
  const result = await db
    .updateTable('place_activities')
    .set({ thumbnail_path: thumbnailPath })
    .where('id', '=', activityId)
    .where('image_path', '=', imagePath)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}
