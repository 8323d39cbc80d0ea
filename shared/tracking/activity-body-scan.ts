import { parse as parseJson } from '@hapi/bourne';
import type { ActivityBody } from './activity-body.ts';
import { ACTIVITY_LIMITS } from './activity-content.ts';
import { type Datastream, emptyDatastream, emptyTrack, type Track } from './activity-data.ts';

/**
 * The fast path of an activity body (shared/tracking/activity-body.ts): the bytes of a body whose
 * streams are well formed, as recorders write them (elapsed seconds ascending, datatype ids
 * ascending within a sample, plain numbers), go straight to columns, without decoding the body
 * into one string or building an object per sample. That string alone is a large V8 object (a
 * 1-hour activity is 0.6 MB), and decoding it, JSON.parse and the object walk took about half of
 * the API's CPU per activity (bench/README.md, tracking-ingest).
 *
 * It answers only when it is sure to give what the generic path (JSON.parse, then
 * activity-content.ts) gives: anything else, from a syntax error to a sample out of order, a
 * string where a number goes or a limit passed, makes it give up (undefined), and the generic
 * path parses the body again, producing its result or naming each problem.
 * test/tracking-activity-body-scan.test.ts checks the two agree on random bodies, valid and broken.
 */

/** Thrown inside the scan to give up; never leaves this module. */
const GIVE_UP = Symbol('give up');

const QUOTE = 0x22;
const COMMA = 0x2c;
const MINUS = 0x2d;
const DOT = 0x2e;
const ZERO = 0x30;
const NINE = 0x39;
const COLON = 0x3a;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;
const BACKSLASH = 0x5c;

const DATASTREAM = Buffer.from('datastream');
const LOCATIONS = Buffer.from('locations');
const LATITUDE = Buffer.from('latitude');
const LONGITUDE = Buffer.from('longitude');
const ELEVATION = Buffer.from('elevation');
const NULL = Buffer.from('null');

/** 10^0 … 10^22: exact doubles, so a mantissa below 2^53 divided by one is correctly rounded (Clinger's fast path). */
const POWERS_OF_TEN = Array.from({ length: 23 }, (_, k) => 10 ** k);
/** Up to 15 digits, a decimal mantissa is an exact double. */
const MAX_FAST_DIGITS = 15;

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

class Scanner {
  pos = 0;
  readonly bytes: Buffer;
  constructor(bytes: Buffer) {
    this.bytes = bytes;
  }

  /** JSON whitespace: space, tab, line feed, carriage return. */
  skipSpace(): void {
    const b = this.bytes;
    let p = this.pos;
    for (;;) {
      const c = b[p];
      if (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) p++;
      else break;
    }
    this.pos = p;
  }

  expect(byte: number): void {
    this.skipSpace();
    if (this.bytes[this.pos] !== byte) throw GIVE_UP;
    this.pos++;
  }

  /** After a member: true for `,` (another follows), false for the closing byte. */
  next(close: number): boolean {
    this.skipSpace();
    const c = this.bytes[this.pos++];
    if (c === COMMA) return true;
    if (c === close) return false;
    throw GIVE_UP;
  }

  /** A member name without escapes, as [start, end) of its bytes between the quotes. */
  key(): [number, number] {
    this.expect(QUOTE);
    const b = this.bytes;
    const start = this.pos;
    let p = start;
    for (;;) {
      const c = b[p];
      if (c === QUOTE) break;
      // Escapes (a name may spell `datastream` with them) and control bytes: the generic path decides.
      if (c === BACKSLASH || c === undefined || c < 0x20) throw GIVE_UP;
      p++;
    }
    this.pos = p + 1;
    this.expect(COLON);
    this.skipSpace();
    return [start, p];
  }

  /**
   * A member name that is an integer without sign or leading zero, of at most `maxDigits` digits,
   * followed by its colon; its value.
   */
  integerKey(maxDigits: number): number {
    this.expect(QUOTE);
    const b = this.bytes;
    let p = this.pos;
    let c = b[p] as number;
    if (c === ZERO) {
      p++;
      if (b[p] !== QUOTE) throw GIVE_UP;
      this.pos = p + 1;
      this.expect(COLON);
      return 0;
    }
    let n = 0;
    let digits = 0;
    while (c >= ZERO && c <= NINE) {
      n = n * 10 + (c - ZERO);
      digits++;
      c = b[++p] as number;
    }
    if (digits === 0 || digits > maxDigits || c !== QUOTE) throw GIVE_UP;
    this.pos = p + 1;
    this.expect(COLON);
    return n;
  }

  /** A JSON number, exactly as JSON.parse reads it. */
  number(): number {
    this.skipSpace();
    const b = this.bytes;
    const start = this.pos;
    let p = start;
    let c = b[p] as number;
    const negative = c === MINUS;
    if (negative) c = b[++p] as number;
    let mantissa = 0;
    let digits = 0;
    if (c === ZERO) {
      c = b[++p] as number;
      digits = 1;
      if (c >= ZERO && c <= NINE) throw GIVE_UP; // a leading zero: not JSON
    } else if (c >= ZERO && c <= NINE) {
      while (c >= ZERO && c <= NINE) {
        mantissa = mantissa * 10 + (c - ZERO);
        digits++;
        c = b[++p] as number;
      }
    } else throw GIVE_UP;
    let fraction = 0;
    if (c === DOT) {
      c = b[++p] as number;
      while (c >= ZERO && c <= NINE) {
        mantissa = mantissa * 10 + (c - ZERO);
        fraction++;
        c = b[++p] as number;
      }
      if (fraction === 0) throw GIVE_UP;
    }
    let exact = digits + fraction <= MAX_FAST_DIGITS;
    if (c === 0x65 || c === 0x45) {
      c = b[++p] as number;
      if (c === 0x2b || c === MINUS) c = b[++p] as number;
      const exponentStart = p;
      while (c >= ZERO && c <= NINE) c = b[++p] as number;
      if (p === exponentStart) throw GIVE_UP;
      exact = false;
    }
    this.pos = p;
    if (!exact) {
      // Long mantissas and exponents: the engine's own conversion, the one JSON.parse uses.
      const value = Number(b.toString('latin1', start, p));
      if (!Number.isFinite(value)) throw GIVE_UP;
      return value;
    }
    const magnitude = fraction === 0 ? mantissa : mantissa / (POWERS_OF_TEN[fraction] as number);
    return negative ? -magnitude : magnitude;
  }

  /** Whether the bytes at the position are `word` (a member name's or a literal's). */
  isAt(start: number, end: number, word: Buffer): boolean {
    if (end - start !== word.length) return false;
    // A loop, not Buffer.compare: the words are a few bytes, and a call into C++ costs more.
    for (let i = 0; i < word.length; i++) if (this.bytes[start + i] !== word[i]) return false;
    return true;
  }

  /** Skips one JSON value of the rest of the body (JSON.parse checks it later); its end. */
  skipValue(): number {
    const b = this.bytes;
    let p = this.pos;
    let depth = 0;
    for (;;) {
      const c = b[p];
      if (c === undefined) throw GIVE_UP;
      if (c === QUOTE) {
        p++;
        for (;;) {
          const s = b[p];
          if (s === undefined) throw GIVE_UP;
          if (s === BACKSLASH) p += 2;
          else if (s === QUOTE) break;
          else p++;
        }
      } else if (c === OPEN_BRACE || c === OPEN_BRACKET) depth++;
      else if (c === CLOSE_BRACE || c === CLOSE_BRACKET) {
        if (depth === 0) break; // the end of the enclosing object
        depth--;
      } else if (c === COMMA && depth === 0) break;
      p++;
    }
    this.pos = p;
    return p;
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
