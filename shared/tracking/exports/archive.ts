import { randomBytes } from 'node:crypto';
import { createWriteStream, type WriteStream } from 'node:fs';
import { rm } from 'node:fs/promises';
import { finished } from 'node:stream/promises';
import type { ActivityRow } from '../../db/schema/tracking.ts';
import type { ActivityContent } from '../activities/data.ts';
import { gpxChunks } from '../formats/gpx-export.ts';
import { ZipArchive } from './zip-archive.ts';

/**
 * The zip of a bulk export (docs/tracking-exports.md): one GPX 1.1 file per activity,
 * `gpx/<YYYY-MM-DD>_<HHMMSS>_<id>.gpx` (start in UTC), then `activities.json`, the array of the
 * activities' JSON without their streams, in the same order. Everything streams: one activity's
 * content is in memory at a time, the summaries go to a temporary file, and the zip is written to
 * a temporary file renamed into place once complete, so a reader never sees half an archive.
 * With the same activities and `mtime`, the bytes are the same (entries carry `mtime`, not the
 * time of the run), so a job that runs twice writes the same archive.
 */

/** One activity to export, or null for one that went away since it was listed (counted, not written). */
export type ExportedActivity = { row: ActivityRow; content: ActivityContent } | null;

export interface ArchiveOptions {
  /** The time stamped on every entry (the export's creation time). */
  mtime: Date;
  /** An activity's JSON without streams, as the API answers it in plain JSON. */
  summaryOf: (row: ActivityRow) => Record<string, unknown>;
  /** Called after each activity with how many were handled so far. */
  onProgress?: (handled: number) => Promise<void> | void;
}

export interface ArchiveResult {
  bytes: number;
  /** Activities in the archive. */
  activities: number;
}

const two = (n: number) => String(n).padStart(2, '0');

/** `2024-05-01_063000_<id>`: the name of an activity's files, sorting by start (UTC), tied to the activity by its id. */
export function activityEntryBase(row: Pick<ActivityRow, 'id' | 'startdate'>): string {
  const d = row.startdate;
  const day = `${d.getUTCFullYear()}-${two(d.getUTCMonth() + 1)}-${two(d.getUTCDate())}`;
  const time = `${two(d.getUTCHours())}${two(d.getUTCMinutes())}${two(d.getUTCSeconds())}`;
  return `${day}_${time}_${row.id}`;
}

/** `gpx/2024-05-01_063000_<id>.gpx`: sorts by start, and the id ties the file to its JSON. */
export function gpxEntryName(row: Pick<ActivityRow, 'id' | 'startdate'>): string {
  return `gpx/${activityEntryBase(row)}.gpx`;
}

/** Bytes, not strings: yazl pipes the stream into byte transforms. Pauses (empty chunks) are dropped. */
export function* utf8(chunks: Iterable<string>): Generator<Buffer> {
  for (const chunk of chunks) if (chunk) yield Buffer.from(chunk, 'utf8');
}

/** Writes with back-pressure: waits for `drain` when the stream's buffer is full. */
async function write(stream: WriteStream, text: string): Promise<void> {
  if (!stream.write(text)) await new Promise<void>((resolve) => stream.once('drain', resolve));
}

/**
 * Writes the archive of `activities` (in their order) to the absolute path `file`, replacing it.
 * A failure leaves no file behind (temporary files are removed) and rejects.
 */
export async function writeActivitiesArchive(
  file: string,
  activities: AsyncIterable<ExportedActivity>,
  options: ArchiveOptions,
): Promise<ArchiveResult> {
  const zip = await ZipArchive.create(file, options.mtime);
  const jsonTemp = `${file}.${randomBytes(6).toString('hex')}.json.tmp`;
  const json = createWriteStream(jsonTemp);
  const jsonDone = finished(json);
  jsonDone.catch(() => {});
  try {
    let count = 0;
    let handled = 0;
    await write(json, '[');
    for await (const activity of activities) {
      if (activity) {
        // The next activity is read only once this one is in the zip: one in memory at a time.
        await zip.add(gpxEntryName(activity.row), utf8(gpxChunks(activity.content)));
        await write(json, `${count === 0 ? '\n' : ',\n'}${JSON.stringify(options.summaryOf(activity.row))}`);
        count++;
      }
      handled++;
      await options.onProgress?.(handled);
    }
    await write(json, count === 0 ? ']\n' : '\n]\n');
    json.end();
    await jsonDone;
    zip.addFile(jsonTemp, 'activities.json');
    return { bytes: await zip.finish(), activities: count };
  } catch (error) {
    json.destroy();
    await zip.abort();
    throw error;
  } finally {
    await rm(jsonTemp, { force: true });
  }
}
