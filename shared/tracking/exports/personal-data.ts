import { createReadStream } from 'node:fs';
import { readdir, stat } from 'node:fs/promises';
import { sql } from 'kysely';
import type { Db } from '../../db/database.ts';
import type { PersonalDataSection } from '../../kernel/registration.ts';
import { resolveStoragePath } from '../../media/storage.ts';
import { jsonWithStreamsChunks } from '../activities/json.ts';
import { TRACKING_STORAGE_ROOT } from '../activities/uploads.ts';
import { formatDateTime } from '../dates.ts';
import { deviceFields } from '../devices/device-fields.ts';
import type { UserDeviceRow } from '../devices/store.ts';
import { gpxChunks } from '../formats/gpx-export.ts';
import { measureFields } from '../measures/measure-fields.ts';
import type { Measure } from '../measures/store.ts';
import { recordFields } from '../records/record-fields.ts';
import type { UserRecord } from '../records/records-read.ts';
import type { ShareRow } from '../shares/store.ts';
import { shareUserFields } from '../sharing/share-fields.ts';
import type { ShareUserRow } from '../sharing/share-users.ts';
import { userFields } from '../users/fields.ts';
import { findTrackingUser } from '../users/store.ts';
import { type ArchiveOptions, type ArchiveResult, activityEntryBase, type ExportedActivity, utf8 } from './archive.ts';
import { shareFields } from './personal-data-fields.ts';
import { progressFiles } from './personal-data-progress.ts';
import { type ArchiveEntry, ZipArchive } from './zip-archive.ts';

/**
 * The zip of a personal data export (POST /v2/users/{id}/export_personal_data;
 * docs/accounts-lifecycle.md): everything the service holds of the user, in this order:
 *
 * - `profile.json`: the tracking User, then the other services' sections (`sections`: the account,
 *   with email, names..., and the applications allowed);
 * - per activity, oldest start first: `gpx/<start>_<id>.gpx` (GPX 1.1), `activities/<start>_<id>.json`
 *   (the activity as GET /v2/activities/{id} answers in plain JSON, streams included) and its drawn
 *   thumbnails, `photos/thumbnails/<id>/<file>`;
 * - `measures.json`, `records.json`, `devices.json`, `shares.json`, `share_users.json` (given and
 *   received), `equipments.json`,
 *   `measure_goals.json`, `challenges.json`: arrays of each resource as the API answers it in
 *   plain JSON;
 * - `photos/uploads/...`: the photos the user uploaded (POST /v2/upload), bytes as stored;
 * - `manifest.json`, last: every other file with its size and SHA-256, and the files a row names
 *   but the storage no longer holds (`missing`).
 *
 * Everything streams (one activity, one page of rows or one photo in memory at a time), and the
 * same data with the same `mtime` makes the same bytes.
 */

export const PERSONAL_DATA_VERSION = 1;

/** Rows read per query for the JSON arrays (keyset pages). */
const PAGE = 500;

export interface PersonalDataOptions extends ArchiveOptions {
  userId: string;
  exportId: string;
  /** STORAGE_DIR: the photos are read from it. */
  storageDir: string;
  /** PUBLIC_URL, for the share links. */
  publicUrl: string;
  /** The other services' members of `profile.json` (shared/services/index.ts), in order. */
  sections: readonly PersonalDataSection[];
}

/** A manifest's note of a file a row names that the storage does not hold. */
interface MissingFile {
  path: string;
  reason: string;
}

/** `[`, the members one per line, `]`: one chunk per page of rows. */
async function* jsonArray<T>(
  pages: AsyncIterable<T[]> | Iterable<T[]>,
  fields: (row: T) => unknown,
): AsyncGenerator<Buffer> {
  let first = true;
  yield Buffer.from('[');
  for await (const page of pages) {
    let text = '';
    for (const row of page) {
      text += `${first ? '\n' : ',\n'}${JSON.stringify(fields(row))}`;
      first = false;
    }
    if (text) yield Buffer.from(text);
  }
  yield Buffer.from(first ? ']\n' : '\n]\n');
}

/** Pages of rows read by `read(after)`, where `after` is the last row of the page before. */
async function* pages<T>(read: (after: T | undefined) => Promise<T[]>): AsyncGenerator<T[]> {
  let after: T | undefined;
  for (;;) {
    const page = await read(after);
    if (page.length > 0) yield page;
    if (page.length < PAGE) return;
    after = page[page.length - 1];
  }
}

/** A stored file's chunks, or why it cannot be read (checked before its entry starts). */
async function storedFile(storageDir: string, relative: string): Promise<{ file: string } | { missing: string }> {
  const file = resolveStoragePath(storageDir, relative);
  if (!file) return { missing: 'not a storage path' };
  const info = await stat(file).catch(() => undefined);
  if (!info?.isFile()) return { missing: 'not in the storage' };
  return { file };
}

/** `photos/<path below tracking/>`: the archive's name of a tracking file. */
const photoEntry = (storagePath: string) => `photos/${storagePath.slice(TRACKING_STORAGE_ROOT.length + 1)}`;

/** The files drawn for an activity (thumbnails of its track), sorted; none when its folder does not exist. */
async function thumbnailsOf(storageDir: string, activityId: string): Promise<string[]> {
  const folder = `${TRACKING_STORAGE_ROOT}/thumbnails/${activityId}`;
  const full = resolveStoragePath(storageDir, folder);
  if (!full) return [];
  const names = await readdir(full).catch(() => [] as string[]);
  // Temporary files of a drawing in progress are not pictures yet.
  return names
    .filter((n) => /^[A-Za-z0-9][A-Za-z0-9._-]*\.(png|webp|jpe?g)$/.test(n))
    .sort()
    .map((n) => `${folder}/${n}`);
}

/**
 * Writes the personal data archive of `options.userId` (see the top of this file) to the absolute
 * path `file`, with `activities` in their order. A failure leaves no file behind and rejects.
 */
export async function writePersonalDataArchive(
  db: Db,
  file: string,
  activities: AsyncIterable<ExportedActivity>,
  options: PersonalDataOptions,
): Promise<ArchiveResult> {
  const { userId, storageDir } = options;
  const zip = await ZipArchive.create(file, options.mtime);
  const missing: MissingFile[] = [];
  const addStored = async (relative: string, name: string) => {
    const found = await storedFile(storageDir, relative);
    if ('missing' in found) missing.push({ path: name, reason: found.missing });
    else await zip.add(name, createReadStream(found.file), { compress: false });
  };
  try {
    await zip.add('profile.json', [
      Buffer.from(`${JSON.stringify(await profile(db, userId, options.sections), null, 2)}\n`),
    ]);

    let count = 0;
    let handled = 0;
    for await (const activity of activities) {
      if (activity) {
        const base = activityEntryBase(activity.row);
        await zip.add(`gpx/${base}.gpx`, utf8(gpxChunks(activity.content)));
        const head = options.summaryOf(activity.row);
        await zip.add(`activities/${base}.json`, jsonWithStreamsChunks(head, activity.content, 256 * 1024));
        for (const path of await thumbnailsOf(storageDir, activity.row.id)) await addStored(path, photoEntry(path));
        count++;
      }
      handled++;
      await options.onProgress?.(handled);
    }

    await zip.add(
      'measures.json',
      jsonArray(
        pages((after: Measure | undefined) => {
          let q = db.selectFrom('user_measures').selectAll().where('user_id', '=', userId);
          if (after)
            q = q.where(sql<boolean>`(date, id) > (select m.date, m.id from user_measures m where m.id = ${after.id})`);
          return q.orderBy('date').orderBy('id').limit(PAGE).execute();
        }),
        measureFields,
      ),
    );
    await zip.add(
      'records.json',
      jsonArray(
        pages((after: UserRecord | undefined) => {
          let q = db.selectFrom('user_records').selectAll().where('user_id', '=', userId);
          if (after)
            q = q.where(
              sql<boolean>`(sport_id, type, datatype_id) > (${after.sport_id}, ${after.type}, ${after.datatype_id})`,
            );
          return q.orderBy('sport_id').orderBy('type').orderBy('datatype_id').limit(PAGE).execute();
        }),
        recordFields,
      ),
    );
    await zip.add(
      'devices.json',
      jsonArray(
        pages((after: UserDeviceRow | undefined) => {
          let q = db.selectFrom('user_devices').selectAll().where('user_id', '=', userId);
          if (after) q = q.where('id', '>', after.id);
          return q.orderBy('id').limit(PAGE).execute();
        }),
        deviceFields,
      ),
    );
    await zip.add(
      'shares.json',
      jsonArray(
        pages((after: ShareRow | undefined) => {
          let q = db.selectFrom('share_activities').selectAll().where('user_id', '=', userId);
          if (after) q = q.where('token', '>', after.token);
          return q.orderBy('token').limit(PAGE).execute();
        }),
        (s) => shareFields(s, options.publicUrl),
      ),
    );
    await zip.add(
      'share_users.json',
      jsonArray(
        pages((after: ShareUserRow | undefined) => {
          let q = db
            .selectFrom('share_users')
            .selectAll()
            .where((eb) => eb.or([eb('user_id', '=', userId), eb('friend_id', '=', userId)]));
          if (after) q = q.where('id', '>', after.id);
          return q.orderBy('id').limit(PAGE).execute();
        }),
        shareUserFields,
      ),
    );
    for (const [name, items] of await progressFiles(db, userId))
      await zip.add(
        name,
        jsonArray([items], (item) => item),
      );
    for await (const page of pages((after: { path: string } | undefined) => {
      let q = db.selectFrom('tracking_uploads').select('path').where('user_id', '=', userId);
      if (after) q = q.where('path', '>', after.path);
      return q.orderBy('path').limit(PAGE).execute();
    }))
      for (const { path } of page) await addStored(path, photoEntry(path));

    const manifest = {
      format: 'personal-data',
      version: PERSONAL_DATA_VERSION,
      user: userId,
      export: options.exportId,
      createdAt: formatDateTime(options.mtime),
      files: zip.entries.map((e: ArchiveEntry) => ({ path: e.path, bytes: e.bytes, sha256: e.sha256 })),
      missing,
    };
    await zip.add('manifest.json', [Buffer.from(`${JSON.stringify(manifest, null, 2)}\n`)]);
    return { bytes: await zip.finish(), activities: count };
  } catch (error) {
    await zip.abort();
    throw error;
  }
}

/** `profile.json`: the tracking User, then what the other services hold of the person behind it. */
async function profile(db: Db, userId: string, sections: readonly PersonalDataSection[]) {
  const user = await findTrackingUser(db, userId);
  if (!user) throw new Error(`tracking user ${userId} not found`);
  let members: Record<string, unknown> = { user: userFields(user) };
  for (const section of sections)
    members = { ...members, ...(await section(db, user.account_id, { dateTime: formatDateTime })) };
  return members;
}
