import { createHash } from 'node:crypto';
import { sql } from 'kysely';
import type { Db } from '../../db/database.ts';
import { removeStorageFile, writeStorageFile } from '../../media/storage.ts';
import { type MarkDone, NO_MARK } from '../../queue/outbox.ts';
import { readActivityContent } from '../activities/content-read.ts';
import type { Track } from '../activities/data.ts';
import { TRACKING_STORAGE_ROOT, trackingMediaStoragePath, trackingMediaUrl } from '../activities/uploads.ts';
import { trackingWork } from '../unit-of-work.ts';
import { sportFamily } from './placeholder.ts';
import { type RenderedThumbnail, renderPlaceholder, renderTrackThumbnail, type ThumbnailFormat } from './render.ts';

/** The format of the thumbnails the job writes: PNG, which every client and mail reader shows. */
export const TRACK_THUMBNAIL_FORMAT: ThumbnailFormat = 'png';

/** Storage folders (under STORAGE_DIR, served at /v2/media/thumbnails/... and /v2/media/placeholders/...). */
const THUMBNAILS_DIR = `${TRACKING_STORAGE_ROOT}/thumbnails`;
const PLACEHOLDERS_DIR = `${TRACKING_STORAGE_ROOT}/placeholders`;

/**
 * The media path of a thumbnail URL this job wrote (any host: PUBLIC_URL may have changed
 * since). Any other value was set by the user (PUT /v2/activities/{id} `thumbnail`) and is never
 * replaced.
 */
const GENERATED = /\/v2\/media\/((?:thumbnails\/[A-Za-z0-9_-]+|placeholders)\/[a-z]+-[0-9a-f]{16}\.(?:png|webp))$/;

/** The storage path (under STORAGE_DIR) of a thumbnail URL this job wrote, else undefined (none, or the user's). */
export function generatedThumbnailPath(thumbnail: string | null): string | undefined {
  const generated = thumbnail === null ? undefined : GENERATED.exec(thumbnail)?.[1];
  return generated === undefined ? undefined : trackingMediaStoragePath(generated);
}

export type TrackThumbnailOutcome =
  | { status: 'done'; url: string; path: string; bytes: number; placeholder: boolean }
  | { status: 'skipped'; reason: string };

/** How many times the job draws again when the activity changed while it was drawing. */
const ATTEMPTS = 3;

function hasCoordinates(track: Track): boolean {
  for (let i = 0; i < track.latitude.length; i++)
    if (Number.isFinite(track.latitude[i]) && Number.isFinite(track.longitude[i])) return true;
  return false;
}

/** A name derived from the bytes: the same picture keeps its name (cacheable forever), a new one gets a new name. */
function digest(image: RenderedThumbnail): string {
  return createHash('sha256').update(image.data).digest('hex').slice(0, 16);
}

/**
 * Draws an activity's thumbnail and points its `thumbnail` at it: the simplified GPS track, or
 * for an activity without one, its sport family's placeholder (one file shared by every
 * activity of that family). Idempotent: the same activity gives the same bytes under the same
 * name. The column is set only if the activity is still the version that was drawn (otherwise it
 * is drawn again, as it is now) and only if the user has not set a thumbnail of their own.
 * The previous drawing of this activity is removed once replaced. `markDone` (the job's) commits
 * with the column.
 */
export async function drawActivityThumbnail(
  db: Db,
  config: { STORAGE_DIR: string; PUBLIC_URL: string },
  activityId: string,
  markDone: MarkDone = NO_MARK,
): Promise<TrackThumbnailOutcome> {
  // A drawing written but not recorded (the activity changed meanwhile): nobody else would remove it.
  let unrecorded: string | undefined;
  const forget = async (keep?: string) => {
    if (unrecorded && unrecorded !== keep) await removeStorageFile(config.STORAGE_DIR, unrecorded);
    unrecorded = undefined;
  };
  for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
    const found = await readActivityContent(db, activityId);
    if (!found) {
      await forget();
      return { status: 'skipped', reason: 'activity deleted' };
    }
    const { row, content } = found;
    const generated = row.thumbnail === null ? undefined : GENERATED.exec(row.thumbnail)?.[1];
    if (row.thumbnail !== null && generated === undefined) {
      await forget();
      return { status: 'skipped', reason: 'thumbnail set by the user' };
    }

    let image: RenderedThumbnail;
    let path: string;
    const placeholder = !hasCoordinates(content.track);
    if (placeholder) {
      const sport = await db
        .selectFrom('sports')
        .select('universe_id')
        .where('id', '=', row.sport_id)
        .executeTakeFirst();
      const family = sportFamily(sport?.universe_id);
      image = await renderPlaceholder(family, TRACK_THUMBNAIL_FORMAT);
      path = `${PLACEHOLDERS_DIR}/${family}-${digest(image)}.${image.format}`;
    } else {
      image = await renderTrackThumbnail(content.track, TRACK_THUMBNAIL_FORMAT);
      path = `${THUMBNAILS_DIR}/${row.id}/track-${digest(image)}.${image.format}`;
    }
    await writeStorageFile(config.STORAGE_DIR, path, image.data);
    const url = trackingMediaUrl(config.PUBLIC_URL, path);
    // Not a user's write, so the version stays; updated_at moves, so sync clients see the picture.
    const updated = await db.transaction().execute(async (trx) => {
      const result = await trx
        .updateTable('activities')
        .set({ thumbnail: url, updated_at: sql<Date>`now()` })
        .where('id', '=', row.id)
        .where('version', '=', row.version)
        .where(sql<boolean>`thumbnail is not distinct from ${row.thumbnail}`)
        .executeTakeFirst();
      if (result.numUpdatedRows > 0n) {
        await trackingWork(trx, async (uow) =>
          uow.emit({ type: 'ThumbnailDrawn', activity: { ...row, thumbnail: url } }),
        );
        await markDone(trx);
      }
      return result.numUpdatedRows > 0n;
    });
    if (!updated) {
      if (!placeholder) unrecorded = path;
      continue;
    }
    await forget(path);
    const previous = generated && trackingMediaStoragePath(generated);
    if (previous && previous !== path && previous.startsWith(`${THUMBNAILS_DIR}/${row.id}/`))
      await removeStorageFile(config.STORAGE_DIR, previous);
    return { status: 'done', url, path, bytes: image.data.length, placeholder };
  }
  // Changed under us every time: BullMQ retries later (the job is idempotent).
  await forget();
  throw new Error(`activity ${activityId} kept changing while its thumbnail was drawn`);
}
