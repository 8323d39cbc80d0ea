import { setImmediate as nextTurn } from 'node:timers/promises';
import { copyBinaryRows, literal } from '../../db/copy-binary.ts';
import { type Db, poolOf } from '../../db/database.ts';
import { invalid, notFoundError } from '../../errors.ts';
import { channelFromBytes, int4ArrayFromBinary } from '../activities/binary.ts';
import { iri } from '../iri.ts';
import { RESOLUTIONS, type Resolution, sharedPositions } from './downsample.ts';
import { PREVIEW_ELAPSED, PREVIEW_SIZE } from './preview.ts';

/**
 * `GET /v2/activities/{id}/streams` (docs/tracking-activities.md, "Streams by datatype and
 * resolution"): some channels of an activity's datastream, downsampled, as columns. Only the
 * requested channels cross from PostgreSQL, in one binary COPY; a resolution the stored preview
 * can give (preview.ts) reads the preview instead of the streams when the activity has one.
 */

export interface StreamsRequest {
  /** Datatype ids; undefined for every channel of the activity. */
  datatypes: readonly number[] | undefined;
  resolution: Resolution;
}

export interface ActivityStreams {
  activityId: string;
  resolution: Resolution;
  /** Samples stored in the activity's datastream. */
  originalSize: number;
  /** Elapsed seconds of the samples kept, ascending. */
  elapsed: Int32Array;
  /** Datatype id to its values at those samples (NaN: no value), ascending ids. */
  channels: Map<number, Float64Array>;
}

/** What each row of the statement holds (its first field). */
const KIND = { owned: 0, elapsed: 1, channel: 2, preview: 3 } as const;

/**
 * The statement of a read (exported for bench/tracking-streams.ts, which times it bare): rows of
 * (kind, datatype, samples, bytes). An `owned` row when the activity is the owner's; then the
 * preview's rows when `preview` is asked and the activity has one, else the elapsed seconds and
 * the channels asked.
 */
export function streamsQuery(
  id: string,
  ownerId: string,
  datatypes: readonly number[] | undefined,
  preview = false,
): string {
  const activity = literal(id);
  const owned = `exists (select from activities o where o.id = ${activity} and o.user_id = ${literal(ownerId)})`;
  // Integers only reach the statement (the API parsed them); checked again, as COPY takes no parameters.
  if (datatypes?.some((d) => !Number.isSafeInteger(d))) throw new Error('datatype ids must be integers');
  const list = datatypes ? (datatypes.length ? datatypes.join(',') : 'null') : undefined;
  const previewed = `exists (select from activity_stream_previews e where e.activity_id = ${activity})`;
  const full = preview ? ` and not ${previewed}` : '';
  return `select ${KIND.owned}, 0, 0, null::bytea where ${owned}
    ${
      preview
        ? `union all select ${KIND.preview}, p.datatype_id, p.samples, p."values" from activity_stream_previews p
      where p.activity_id = ${activity}${list ? ` and p.datatype_id in (${PREVIEW_ELAPSED}, ${list})` : ''} and ${owned}`
        : ''
    }
    union all select ${KIND.elapsed}, 0, 0, array_send(d.elapsed) from activity_datastreams d
      where d.activity_id = ${activity} and ${owned}${full}
    union all select ${KIND.channel}, c.datatype_id, 0, c."values" from activity_stream_channels c
      where c.activity_id = ${activity}${list ? ` and c.datatype_id in (${list})` : ''} and ${owned}${full}`;
}

/** Asked datatypes that are in no referential row: each a 422 naming the parameter. */
async function unknownDatatypes(db: Db, ids: readonly number[]): Promise<number[]> {
  if (ids.length === 0) return [];
  const found = await db
    .selectFrom('datatypes')
    .select('id')
    .where('id', 'in', [...ids])
    .execute();
  const known = new Set(found.map((r) => r.id));
  return ids.filter((id) => !known.has(id));
}

/** A stream row above this size is decoded in a turn of the event loop of its own. */
const LARGE_STREAM_BYTES = 256 * 1024;

/**
 * The caller's activity's channels at a resolution: every sample (`full`), or the positions
 * LTTB keeps for the requested channels (sharedPositions: the same elapsed seconds for each),
 * from the activity's preview when the resolution is no finer than it. A datatype the activity
 * has no samples of is left out; one that does not exist is a 422 naming `parameter`; another
 * user's activity or a missing one a 404.
 */
export async function readActivityStreams(
  db: Db,
  ownerId: string,
  id: string,
  request: StreamsRequest,
  parameter = 'query.datatypes',
): Promise<ActivityStreams> {
  const asked = request.datatypes ? [...new Set(request.datatypes)] : undefined;
  const threshold = RESOLUTIONS[request.resolution];
  // A preview has PREVIEW_SIZE positions shared by all channels: a tenth of it per answer keeps its quality.
  const fromPreview = threshold * 10 <= PREVIEW_SIZE;
  const rows = await copyBinaryRows(poolOf(db), streamsQuery(id, ownerId, asked, fromPreview));
  let owned = false;
  let originalSize = 0;
  let elapsed: ArrayLike<number> = new Int32Array(0);
  const stored = new Map<number, Float64Array>();
  for (const [kindBytes, tagBytes, samplesBytes, bytes] of rows) {
    if (!kindBytes || !tagBytes || !samplesBytes) continue;
    // Decoding a long channel takes a while: other requests run between two.
    if (bytes && bytes.length > LARGE_STREAM_BYTES) await nextTurn();
    const kind = kindBytes.readInt32BE(0);
    const tag = tagBytes.readInt32BE(0);
    if (kind === KIND.owned) owned = true;
    else if (!bytes) continue;
    else if (kind === KIND.elapsed) {
      elapsed = int4ArrayFromBinary(bytes);
      originalSize = elapsed.length;
    } else if (kind === KIND.channel) stored.set(tag, channelFromBytes(bytes));
    else if (tag === PREVIEW_ELAPSED) {
      elapsed = channelFromBytes(bytes);
      originalSize = samplesBytes.readInt32BE(0);
    } else stored.set(tag, channelFromBytes(bytes));
  }
  if (!owned) throw notFoundError(`No activity ${id}`);
  const missing = asked?.filter((d) => !stored.has(d)) ?? [];
  const unknown = await unknownDatatypes(db, missing);
  if (unknown.length)
    throw invalid(unknown.map((d) => ({ path: parameter, message: `${iri('datatypes', d)} does not exist` })));
  const channels = [...stored].sort((a, b) => a[0] - b[0]);
  const keep = sharedPositions(
    elapsed,
    channels.map(([, values]) => values),
    threshold,
  );
  // Every sample kept (full): the columns as read, without a copy.
  if (keep.length === elapsed.length && elapsed instanceof Int32Array)
    return { activityId: id, resolution: request.resolution, originalSize, elapsed, channels: new Map(channels) };
  const pick = <T extends Int32Array | Float64Array>(out: T, from: ArrayLike<number>): T => {
    for (let k = 0; k < keep.length; k++) out[k] = from[keep[k] as number] as number;
    return out;
  };
  return {
    activityId: id,
    resolution: request.resolution,
    originalSize,
    elapsed: pick(new Int32Array(keep.length), elapsed),
    channels: new Map(channels.map(([d, values]) => [d, pick(new Float64Array(keep.length), values)])),
  };
}
