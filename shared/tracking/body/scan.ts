import { parse as parseJson } from '@hapi/bourne';
import { ACTIVITY_LIMITS } from '../activities/content.ts';
import { type Datastream, emptyDatastream, emptyTrack, type Track } from '../activities/data.ts';
import type { ActivityBody } from './activity-body.ts';
import { CLOSE_BRACE, GIVE_UP, OPEN_BRACE, Scanner } from './tokenizer.ts';

/**
 * The fast path of an activity body (shared/tracking/body/parse.ts): the bytes of a body whose
 * streams are well formed, as recorders write them (elapsed seconds ascending, datatype ids
 * ascending within a sample, plain numbers), go straight to columns, without decoding the body
 * into one string or building an object per sample. That string alone is a large V8 object (a
 * 1-hour activity is 0.6 MB), and decoding it, JSON.parse and the object walk took about half of
 * the API's CPU per activity (bench/README.md, tracking-ingest).
 *
 * It answers only when it is sure to give what the generic path (JSON.parse, then
 * activities/content.ts) gives: anything else, from a syntax error to a sample out of order, a
 * string where a number goes or a limit passed, makes it give up (undefined), and the generic
 * path parses the body again, producing its result or naming each problem.
 * test/tracking-activity-body-scan.test.ts checks the two agree on random bodies, valid and broken.
 */

const DATASTREAM = Buffer.from('datastream');
const LOCATIONS = Buffer.from('locations');
const LATITUDE = Buffer.from('latitude');
const LONGITUDE = Buffer.from('longitude');
const ELEVATION = Buffer.from('elevation');
const NULL = Buffer.from('null');

/**
 * Room for a 1-hour recording at 1 Hz before any growth. The columns end as views of their
 * doubled buffers (at most twice their length, for the request's lifetime) rather than as copies:
 * fewer large allocations per body, each one fresh pages and work for the collector.
 */
const INITIAL_CAPACITY = 4096;

/** A Float64Array that grows by doubling, NaN where nothing was set. */
class GrowingColumn {
  values = new Float64Array(INITIAL_CAPACITY).fill(Number.NaN);
  set(i: number, value: number): void {
    if (i >= this.values.length) {
      const grown = new Float64Array(Math.max(this.values.length * 2, i + 1)).fill(Number.NaN);
      grown.set(this.values);
      this.values = grown;
    }
    this.values[i] = value;
  }
  take(n: number): Float64Array {
    if (n > this.values.length) this.set(n - 1, Number.NaN);
    return this.values.subarray(0, n);
  }
}

class GrowingInts {
  values = new Int32Array(INITIAL_CAPACITY);
  length = 0;
  push(value: number): void {
    if (this.length === this.values.length) {
      const grown = new Int32Array(this.values.length * 2);
      grown.set(this.values);
      this.values = grown;
    }
    this.values[this.length++] = value;
  }
  take(): Int32Array {
    return this.values.subarray(0, this.length);
  }
}

const MAX_SECONDS_DIGITS = String(ACTIVITY_LIMITS.maxSeconds).length;

/** `datastream`: samples in ascending seconds, datatype ids ascending within each, numbers only. */
function scanDatastream(s: Scanner): Datastream {
  const elapsed = new GrowingInts();
  const channels = new Map<number, GrowingColumn>();
  s.expect(OPEN_BRACE);
  s.skipSpace();
  if (s.bytes[s.pos] === CLOSE_BRACE) {
    s.pos++;
    return emptyDatastream();
  }
  let previous = -1;
  // A recording names the same datatypes in every sample: the j-th member's column is looked up
  // only when its id differs from the previous sample's j-th.
  const ids: number[] = [];
  const columns: GrowingColumn[] = [];
  do {
    const t = s.integerKey(MAX_SECONDS_DIGITS);
    if (t <= previous || t > ACTIVITY_LIMITS.maxSeconds) throw GIVE_UP;
    previous = t;
    const i = elapsed.length;
    // Past the limit, the generic path names it.
    if (i >= ACTIVITY_LIMITS.maxSamples) throw GIVE_UP;
    elapsed.push(t);
    s.expect(OPEN_BRACE);
    s.skipSpace();
    if (s.bytes[s.pos] === CLOSE_BRACE) {
      s.pos++;
      continue;
    }
    let previousId = 0;
    let j = 0;
    do {
      const id = s.integerKey(9);
      if (id <= previousId) throw GIVE_UP;
      previousId = id;
      let channel = ids[j] === id ? columns[j] : channels.get(id);
      if (!channel) {
        channel = new GrowingColumn();
        channels.set(id, channel);
      }
      ids[j] = id;
      columns[j++] = channel;
      // Memory stays within the limit the generic path enforces (which then names it).
      if (channels.size * (i + 1) > ACTIVITY_LIMITS.maxDatastreamCells) throw GIVE_UP;
      channel.set(i, s.number());
    } while (s.next(CLOSE_BRACE));
  } while (s.next(CLOSE_BRACE));
  const n = elapsed.length;
  if (channels.size * n > ACTIVITY_LIMITS.maxDatastreamCells) throw GIVE_UP;
  return {
    elapsed: elapsed.take(),
    channels: new Map([...channels].map(([id, column]) => [id, column.take(n)])),
  };
}

/** `locations`: points in ascending seconds, each `{latitude, longitude, elevation?}` in range. */
function scanTrack(s: Scanner): Track {
  const elapsed = new GrowingInts();
  const latitude = new GrowingColumn();
  const longitude = new GrowingColumn();
  const elevation = new GrowingColumn();
  s.expect(OPEN_BRACE);
  s.skipSpace();
  let previous = -1;
  if (s.bytes[s.pos] === CLOSE_BRACE) s.pos++;
  else
    do {
      const t = s.integerKey(MAX_SECONDS_DIGITS);
      if (t <= previous || t > ACTIVITY_LIMITS.maxSeconds) throw GIVE_UP;
      previous = t;
      const i = elapsed.length;
      if (i >= ACTIVITY_LIMITS.maxTrackPoints) throw GIVE_UP;
      elapsed.push(t);
      let seen = 0; // bits: latitude, longitude, elevation
      s.expect(OPEN_BRACE);
      do {
        const [start, end] = s.key();
        if (s.isAt(start, end, LATITUDE) && !(seen & 1)) {
          const v = s.number();
          if (!(v >= -90 && v <= 90)) throw GIVE_UP;
          latitude.set(i, v);
          seen |= 1;
        } else if (s.isAt(start, end, LONGITUDE) && !(seen & 2)) {
          const v = s.number();
          if (!(v >= -180 && v <= 180)) throw GIVE_UP;
          longitude.set(i, v);
          seen |= 2;
        } else if (s.isAt(start, end, ELEVATION) && !(seen & 4)) {
          if (s.isAt(s.pos, s.pos + NULL.length, NULL)) s.pos += NULL.length;
          else elevation.set(i, s.number());
          seen |= 4;
        } else throw GIVE_UP;
      } while (s.next(CLOSE_BRACE));
      if ((seen & 3) !== 3) throw GIVE_UP;
    } while (s.next(CLOSE_BRACE));
  const n = elapsed.length;
  return {
    elapsed: elapsed.take(),
    latitude: latitude.take(n),
    longitude: longitude.take(n),
    elevation: elevation.take(n),
  };
}

/**
 * The body with its streams as columns, or undefined when the generic path must decide (see
 * above). `decode` turns the bytes of the rest of the body into text, as the generic path does.
 */
export function scanActivityBody(bytes: Uint8Array, decode: (bytes: Uint8Array) => string): ActivityBody | undefined {
  const s = new Scanner(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength));
  try {
    let datastream: Datastream | undefined;
    let track: Track | undefined;
    /** [start, end) of each other member, name included. */
    const rest: [number, number][] = [];
    s.expect(OPEN_BRACE);
    s.skipSpace();
    if (s.bytes[s.pos] === CLOSE_BRACE) s.pos++;
    else
      do {
        s.skipSpace();
        const memberStart = s.pos;
        const [start, end] = s.key();
        if (s.isAt(start, end, DATASTREAM)) {
          if (datastream) throw GIVE_UP; // JSON.parse keeps the last: rare enough to leave to it
          datastream = scanDatastream(s);
        } else if (s.isAt(start, end, LOCATIONS)) {
          if (track) throw GIVE_UP;
          track = scanTrack(s);
        } else rest.push([memberStart, s.skipValue()]);
      } while (s.next(CLOSE_BRACE));
    s.skipSpace();
    if (s.pos !== s.bytes.length) throw GIVE_UP;
    if (!datastream && !track) return undefined; // nothing to gain: the generic path reads it
    const members = rest.map(([start, end]) => s.bytes.subarray(start, end));
    const text = decode(
      Buffer.concat([
        Buffer.from('{'),
        ...members.flatMap((m, i) => (i ? [Buffer.from(','), m] : [m])),
        Buffer.from('}'),
      ]),
    );
    return {
      body: parseJson(text, { protoAction: 'error' }),
      datastream: datastream ?? emptyDatastream(),
      track: track ?? emptyTrack(),
    };
  } catch (error) {
    if (error === GIVE_UP || error instanceof SyntaxError) return undefined;
    throw error;
  }
}
