import { setImmediate as nextTurn } from 'node:timers/promises';
import { copyBinaryRows, literal } from '../../db/copy-binary.ts';
import { type Db, poolOf } from '../../db/database.ts';
import type { ActivityRow, Visibility } from '../../db/schema/tracking.ts';
import { notFoundError } from '../../errors.ts';
import { channelFromBytes, int4ArrayFromBinary, trackFromWkb } from './binary.ts';
import type { ActivityContent, Datastream } from './data.ts';
import { emptyDatastream, emptyTrack } from './data.ts';

/**
 * An activity read whole (docs/tracking-activities.md): its row and its streams, decoded from
 * the bytes they are stored as (binary.ts) without a text step, for the reads that need the
 * content (GET with streams, exports, the jobs).
 */

/** A stream row above this size is decoded in a turn of the event loop of its own. */
const LARGE_STREAM_BYTES = 256 * 1024;

/** Tags of the streams query's rows: a datatype id (≥ 1) for a channel, else one of these. */
const TRACK_ROW = -1;
const ELAPSED_ROW = -2;

/**
 * The streams of activity `id` as one binary COPY (only when its row matches `only`, when given):
 * its rows are (tag, bytes), the track as WKB (`ST_AsBinary`), the elapsed seconds as
 * `array_send`, each channel's own bytes. Not one byte of them is text-encoded on the way
 * (copy-binary.ts).
 */
function streamsQuery(id: string, only: ContentFilter): string {
  const activity = literal(id);
  const conditions = [
    ...(only.ownerId === undefined ? [] : [`o.user_id = ${literal(only.ownerId)}`]),
    ...(only.visibilities === undefined ? [] : [`o.visibility in (${only.visibilities.map(literal).join(', ')})`]),
  ];
  const matching = conditions.length
    ? ` and exists (select from activities o where o.id = ${activity} and ${conditions.join(' and ')})`
    : '';
  return `select ${TRACK_ROW}, ST_AsBinary(t.track) from activity_tracks t where t.activity_id = ${activity}${matching}
    union all select ${ELAPSED_ROW}, array_send(d.elapsed) from activity_datastreams d where d.activity_id = ${activity}${matching}
    union all select c.datatype_id, c."values" from activity_stream_channels c where c.activity_id = ${activity}${matching}`;
}

/** Which activity rows a read may answer: the owner's, of these visibilities (another user's reads). */
interface ContentFilter {
  ownerId?: string | undefined;
  visibilities?: readonly Visibility[] | undefined;
}

/**
 * An activity and its content (streams as typed arrays), whoever owns it: for the jobs (records,
 * thumbnails, exports). Undefined when there is no such activity; with `ownerId`, also when it
 * belongs to someone else; with `visibilities`, also when it is not of one of them (nothing of a
 * hidden activity's streams is read). `db` must be one createDb made (the streams are read with COPY).
 */
export async function readActivityContent(
  db: Db,
  id: string,
  ownerId?: string,
  visibilities?: readonly Visibility[],
): Promise<{ row: ActivityRow; content: ActivityContent } | undefined> {
  let main = db.selectFrom('activities').selectAll().where('id', '=', id);
  if (ownerId !== undefined) main = main.where('user_id', '=', ownerId);
  if (visibilities !== undefined) main = main.where('visibility', 'in', visibilities);
  // Streams never change after the creation, so reading them beside the row (two connections,
  // in parallel) cannot mix two versions of an activity.
  const [row, streams] = await Promise.all([
    main.executeTakeFirst(),
    copyBinaryRows(poolOf(db), streamsQuery(id, { ownerId, visibilities })),
  ]);
  if (!row) return undefined;
  const datastream: Datastream = emptyDatastream();
  let track = emptyTrack();
  for (const [tagBytes, bytes] of streams) {
    if (!tagBytes || !bytes) continue;
    // Decoding a long track or channel takes a while: other requests run between two.
    if (bytes.length > LARGE_STREAM_BYTES) await nextTurn();
    const tag = tagBytes.readInt32BE(0);
    if (tag === TRACK_ROW) track = trackFromWkb(bytes);
    else if (tag === ELAPSED_ROW) datastream.elapsed = int4ArrayFromBinary(bytes);
    else datastream.channels.set(tag, channelFromBytes(bytes));
  }
  const content: ActivityContent = {
    sportId: row.sport_id,
    name: row.name,
    startdate: row.startdate,
    duration: row.duration,
    summaries: new Map(Object.entries(row.data_summaries).map(([k, v]) => [Number(k), v])),
    datastream,
    track,
  };
  return { row, content };
}

/** The caller's activity with its content; 404 when it is not theirs. */
export async function findActivityContent(
  db: Db,
  callerId: string,
  id: string,
): Promise<{ row: ActivityRow; content: ActivityContent }> {
  const found = await readActivityContent(db, id, callerId);
  if (!found) throw notFoundError(`No activity ${id}`);
  return found;
}
