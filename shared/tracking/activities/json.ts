import type { Datastream, Track } from './data.ts';

/**
 * The `datastream` and `locations` members written straight into bytes. A 24-hour activity at
 * 1 Hz is close to a million numbers: building objects for JSON.stringify takes several times
 * longer than writing the digits (bench/tracking-ingest.ts measures the read path). Every number
 * written parses back to the same double (see `writeNumber`).
 */

const POW10 = [1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9];
const MAX_SAFE = Number.MAX_SAFE_INTEGER;
/** The longest number written: String() of a double, e.g. -1.2345678901234567e-300. */
const NUMBER_BYTES = 25;

/** Two ASCII digits of 0..99, for writing integers two digits at a time. */
const PAIRS = new Uint8Array(200);
for (let i = 0; i < 100; i++) {
  PAIRS[2 * i] = 48 + Math.floor(i / 10);
  PAIRS[2 * i + 1] = 48 + (i % 10);
}

/**
 * A buffer of JSON text: growable (one Buffer in the end), or chunked (full chunks are set aside
 * for `drain`, so a long document can be sent while it is being written).
 */
export class JsonWriter {
  #buf: Buffer;
  #at = 0;
  readonly #chunked: boolean;
  #done: Buffer[] = [];

  constructor(capacity = 64 * 1024, options: { chunked?: boolean } = {}) {
    this.#buf = Buffer.allocUnsafe(capacity);
    this.#chunked = options.chunked ?? false;
  }

  /** Room for `bytes` more bytes. */
  ensure(bytes: number): void {
    if (this.#at + bytes <= this.#buf.length) return;
    if (this.#chunked) {
      if (this.#at > 0) this.#done.push(this.#buf.subarray(0, this.#at));
      this.#buf = Buffer.allocUnsafe(Math.max(this.#buf.length, bytes));
      this.#at = 0;
      return;
    }
    const next = Buffer.allocUnsafe(Math.max(this.#buf.length * 2, this.#at + bytes));
    this.#buf.copy(next, 0, 0, this.#at);
    this.#buf = next;
  }

  /** The chunks filled since the last call (chunked mode). */
  drain(): Buffer[] {
    const done = this.#done;
    this.#done = [];
    return done;
  }

  /** Any text (UTF-8), e.g. a JSON.stringify result. */
  text(s: string): void {
    this.ensure(Buffer.byteLength(s));
    this.#at += this.#buf.write(s, this.#at, 'utf8');
  }

  /** ASCII text already known to fit (call `ensure` first). */
  ascii(s: string): void {
    const buf = this.#buf;
    let at = this.#at;
    for (let i = 0; i < s.length; i++) buf[at++] = s.charCodeAt(i);
    this.#at = at;
  }

  /** A few bytes (a member name): a loop beats a native copy at this size. */
  bytes(b: Uint8Array): void {
    const buf = this.#buf;
    let at = this.#at;
    for (let i = 0; i < b.length; i++) buf[at++] = b[i] as number;
    this.#at = at;
  }

  byte(c: number): void {
    this.#buf[this.#at++] = c;
  }

  /** A non-negative integer below 2^53. */
  uint(n: number): void {
    if (n < 4_294_967_296) {
      this.#small(n >>> 0);
      return;
    }
    // Above 32 bits: the high digits, then the low 9 zero-padded.
    const high = Math.floor(n / 1e9);
    this.#small(high);
    this.#padded(n - high * 1e9, 9);
  }

  /** An integer of 0..2^32-1 (uint32 arithmetic). */
  #small(n: number): void {
    const digits =
      n < 10
        ? 1
        : n < 100
          ? 2
          : n < 1000
            ? 3
            : n < 10000
              ? 4
              : n < 100000
                ? 5
                : n < 1000000
                  ? 6
                  : n < 10000000
                    ? 7
                    : n < 100000000
                      ? 8
                      : n < 1000000000
                        ? 9
                        : 10;
    this.#padded(n, digits);
  }

  /** `n` (< 2^32) written as exactly `digits` digits, zero-padded on the left. */
  #padded(n: number, digits: number): void {
    const buf = this.#buf;
    let at = this.#at + digits;
    this.#at = at;
    let v = n;
    let left = digits;
    while (left >= 2) {
      const q = (v / 100) >>> 0;
      const r = (v - q * 100) * 2;
      buf[--at] = PAIRS[r + 1] as number;
      buf[--at] = PAIRS[r] as number;
      v = q;
      left -= 2;
    }
    if (left === 1) buf[--at] = 48 + (v % 10);
  }

  /**
   * A finite number, as JSON. Integers and numbers with at most 9 decimals (sensor values,
   * coordinates) are written from their digits, after checking that `digits / 10^k` is exactly
   * the value, so the text parses back to the same double; anything else goes through String().
   */
  number(v: number): void {
    const a = v < 0 ? -v : v;
    if (a <= MAX_SAFE && Math.floor(a) === a) {
      if (v < 0) this.#buf[this.#at++] = 45;
      this.uint(a);
      return;
    }
    if (a >= 1e-6 && a < 1e9) {
      for (let k = 1; k <= 9; k++) {
        const p = POW10[k] as number;
        const digits = Math.round(a * p);
        if (digits / p !== a || digits > MAX_SAFE) continue;
        if (v < 0) this.#buf[this.#at++] = 45;
        let whole = Math.floor(digits / p);
        // Exact integer arithmetic (all below 2^53), whatever the rounding of the division.
        if (whole * p > digits) whole--;
        this.uint(whole);
        this.#buf[this.#at++] = 46;
        this.#padded(digits - whole * p, k);
        return;
      }
    }
    this.ascii(String(v));
  }

  /** The text written so far (a view: valid until the next write). */
  result(): Buffer {
    return this.#buf.subarray(0, this.#at);
  }
}

const QUOTE = 34;
const COMMA = 44;
const CLOSE = 125;

/** A datastream ready to write: its columns in datatype order and their member names. */
interface DatastreamColumns {
  elapsed: Int32Array;
  columns: Float64Array[];
  first: Buffer[];
  next: Buffer[];
  /** The most bytes one sample can take. */
  perSample: number;
}

function datastreamColumns(datastream: Datastream): DatastreamColumns {
  const ids = [...datastream.channels.keys()].sort((a, b) => a - b);
  return {
    elapsed: datastream.elapsed,
    columns: ids.map((id) => datastream.channels.get(id) as Float64Array),
    first: ids.map((id) => Buffer.from(`"${id}":`)),
    next: ids.map((id) => Buffer.from(`,"${id}":`)),
    perSample: 16 + ids.length * (14 + NUMBER_BYTES),
  };
}

/** Samples `from` to `to` (excluded) of `{"0":{"1":120,"5":0.4},"1":{...}}`, datatypes ascending. */
function writeSamples(w: JsonWriter, d: DatastreamColumns, from: number, to: number): void {
  const { elapsed, columns, first, next, perSample } = d;
  for (let i = from; i < to; i++) {
    w.ensure(perSample);
    if (i > 0) w.byte(COMMA);
    w.byte(QUOTE);
    w.uint(elapsed[i] as number);
    w.ascii('":{');
    let written = false;
    for (let c = 0; c < columns.length; c++) {
      const v = (columns[c] as Float64Array)[i] as number;
      if (Number.isNaN(v)) continue;
      w.bytes((written ? next[c] : first[c]) as Buffer);
      w.number(v);
      written = true;
    }
    w.byte(CLOSE);
  }
}

const LATITUDE = Buffer.from('":{"latitude":');
const LONGITUDE = Buffer.from(',"longitude":');
const ELEVATION = Buffer.from(',"elevation":');
const PER_POINT = 64 + 3 * NUMBER_BYTES;

/** Points `from` to `to` (excluded) of `{"0":{"latitude":…,"longitude":…,"elevation":…|null},…}`. */
function writePoints(w: JsonWriter, track: Track, from: number, to: number): void {
  for (let i = from; i < to; i++) {
    w.ensure(PER_POINT);
    if (i > 0) w.byte(COMMA);
    w.byte(QUOTE);
    w.uint(track.elapsed[i] as number);
    w.bytes(LATITUDE);
    w.number(track.latitude[i] as number);
    w.bytes(LONGITUDE);
    w.number(track.longitude[i] as number);
    w.bytes(ELEVATION);
    const elevation = track.elevation[i] as number;
    if (Number.isNaN(elevation)) w.ascii('null');
    else w.number(elevation);
    w.byte(CLOSE);
  }
}

/** Samples or points written between two looks for full chunks: a slice of work short enough to keep the loop free. */
const BATCH = 1024;

/**
 * A JSON object, in chunks of about `chunkBytes`: `head`'s members (JSON.stringify), then
 * `datastream` and `locations` written from the columns, without building an object per sample.
 * Lazily: a chunk is written when the consumer asks for it, so a paced response stream
 * (shared/runtime/paced-stream.ts) sends the largest activity while writing it, and other
 * requests run between chunks.
 */
export function* jsonWithStreamsChunks(
  head: Record<string, unknown>,
  streams: { datastream: Datastream; track: Track },
  chunkBytes = 64 * 1024,
): Generator<Buffer> {
  const w = new JsonWriter(chunkBytes, { chunked: true });
  const headText = JSON.stringify(head);
  w.text(headText.slice(0, -1));
  w.ensure(32);
  w.ascii(headText.length > 2 ? ',"datastream":{' : '"datastream":{');
  const d = datastreamColumns(streams.datastream);
  for (let from = 0; from < d.elapsed.length; from += BATCH) {
    writeSamples(w, d, from, Math.min(d.elapsed.length, from + BATCH));
    yield* w.drain();
  }
  w.ensure(32);
  w.ascii('},"locations":{');
  const n = streams.track.elapsed.length;
  for (let from = 0; from < n; from += BATCH) {
    writePoints(w, streams.track, from, Math.min(n, from + BATCH));
    yield* w.drain();
  }
  w.ensure(2);
  w.ascii('}}');
  yield* w.drain();
  yield w.result();
}

/** `jsonWithStreamsChunks` as one Buffer (for a document embedding the activity). */
export function jsonWithStreams(
  head: Record<string, unknown>,
  streams: { datastream: Datastream; track: Track },
): Buffer {
  const d = datastreamColumns(streams.datastream);
  const n = streams.track.elapsed.length;
  const headText = JSON.stringify(head);
  const w = new JsonWriter(Buffer.byteLength(headText) + 64 + d.elapsed.length * d.perSample + n * PER_POINT);
  w.text(headText.slice(0, -1));
  w.ascii(headText.length > 2 ? ',"datastream":{' : '"datastream":{');
  writeSamples(w, d, 0, d.elapsed.length);
  w.ascii('},"locations":{');
  writePoints(w, streams.track, 0, n);
  w.ascii('}}');
  return w.result();
}

/** Values `from` to `to` (excluded) of a JSON array of numbers, NaN written null. */
function writeValues(w: JsonWriter, values: ArrayLike<number>, from: number, to: number): void {
  for (let i = from; i < to; i++) {
    w.ensure(NUMBER_BYTES + 1);
    if (i > 0) w.byte(COMMA);
    const v = values[i] as number;
    if (Number.isNaN(v)) w.ascii('null');
    else w.number(v);
  }
}

/**
 * A JSON object, in chunks as `jsonWithStreamsChunks` writes them: `head`'s members, then
 * `columns` as arrays of numbers (NaN written null), each written from its typed array.
 */
export function* jsonWithColumnsChunks(
  head: Record<string, unknown>,
  columns: { elapsed: Int32Array; values: Map<number, Float64Array> },
  chunkBytes = 64 * 1024,
): Generator<Buffer> {
  const w = new JsonWriter(chunkBytes, { chunked: true });
  const headText = JSON.stringify(head);
  w.text(headText.slice(0, -1));
  function* array(values: ArrayLike<number>) {
    w.ensure(1);
    w.byte(0x5b); // [
    for (let from = 0; from < values.length; from += BATCH) {
      writeValues(w, values, from, Math.min(values.length, from + BATCH));
      yield* w.drain();
    }
    w.ensure(1);
    w.byte(0x5d); // ]
  }
  w.ensure(32);
  w.ascii(headText.length > 2 ? ',"elapsed":' : '"elapsed":');
  yield* array(columns.elapsed);
  w.ensure(16);
  w.ascii(',"values":{');
  let first = true;
  for (const [id, values] of columns.values) {
    w.ensure(32);
    w.ascii(`${first ? '' : ','}"${id}":`);
    first = false;
    yield* array(values);
  }
  w.ensure(2);
  w.ascii('}}');
  yield* w.drain();
  yield w.result();
}
