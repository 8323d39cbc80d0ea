import type { Db } from '../../db/database.ts';
import type { NormalizedImage } from '../../media/image-input.ts';
import { randomName, removeStorageFile, writeStorageFile } from '../../media/storage.ts';
import { TRACKING_PREFIX } from '../iri.ts';

/**
 * Photos users upload for their activities (`images`, `thumbnail`): stored re-encoded under
 * STORAGE_DIR/tracking/uploads, one tracking_uploads row each naming its owner, and served
 * without credentials at PUBLIC_URL/v2/media/uploads/... (their names are random and unguessable,
 * so a shared activity's pictures show to anyone holding the share link).
 */

/** The storage folder of the tracking service; /v2/media/<path> serves STORAGE_DIR/tracking/<path>. */
export const TRACKING_STORAGE_ROOT = 'tracking';

/** Where an upload goes, below STORAGE_DIR: two letters of its name spread files over folders. */
export function uploadStoragePath(name: string, ext: string): string {
  return `${TRACKING_STORAGE_ROOT}/uploads/${name.slice(0, 2)}/${name}.${ext}`;
}

/** The public URL of a stored tracking file (`tracking/uploads/ab/abc.png` → `<PUBLIC_URL>/v2/media/uploads/ab/abc.png`). */
export function trackingMediaUrl(publicUrl: string, storagePath: string): string {
  return `${publicUrl}${TRACKING_PREFIX}/media/${storagePath.slice(TRACKING_STORAGE_ROOT.length + 1)}`;
}

/** The storage path behind a `/v2/media/<rest>` request path. */
export function trackingMediaStoragePath(rest: string): string {
  return `${TRACKING_STORAGE_ROOT}/${rest}`;
}

export interface StoredUpload {
  id: string;
  /** Relative to STORAGE_DIR. */
  path: string;
  contentType: string;
  bytes: number;
}

/**
 * Writes an uploaded photo (already decoded and re-encoded) and records who owns it. The file is
 * written first so a row never names a missing file; if the row cannot be written, the file goes.
 */
export async function storeUpload(
  db: Db,
  storageDir: string,
  userId: string,
  image: NormalizedImage,
): Promise<StoredUpload> {
  const path = uploadStoragePath(randomName(), image.ext);
  await writeStorageFile(storageDir, path, image.data);
  try {
    const row = await db
      .insertInto('tracking_uploads')
      .values({ user_id: userId, path, content_type: image.contentType, bytes: image.data.length })
      .returning('id')
      .executeTakeFirstOrThrow();
    return { id: row.id, path, contentType: image.contentType, bytes: image.data.length };
  } catch (error) {
    await removeStorageFile(storageDir, path).catch(() => {});
    throw error;
  }
}
