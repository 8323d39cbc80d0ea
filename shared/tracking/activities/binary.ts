import { endianness } from 'node:os';
import type { Track } from './data.ts';

/**
 * Stream columns in binary, both ways, so no sample is ever formatted or parsed as text on its
 * way to or from PostgreSQL. node-postgres sends a Buffer parameter in binary format: an `int4[]`
 * parameter is read by PostgreSQL's `array_recv`, a `geometry` one by PostGIS's WKB reader, a
 * channel (bytea) is stored as sent. Reads select `array_send(elapsed)`, `ST_AsBinary(track)` and
 * the channel bytes with a binary COPY (shared/db/copy-binary.ts).
 */

const INT4_OID = 23;
const SRID = 4326;

/** PostgreSQL's binary array header: ndim, no-nulls flag, element type, then size and lower bound. */
function arrayHeader(buf: Buffer, n: number, elementOid: number): number {
  if (n === 0) {
    buf.writeInt32BE(0, 0);
    buf.writeInt32BE(0, 4);
    buf.writeUInt32BE(elementOid, 8);
    return 12;
  }
  buf.writeInt32BE(1, 0);
  buf.writeInt32BE(0, 4);
  buf.writeUInt32BE(elementOid, 8);
  buf.writeInt32BE(n, 12);
  buf.writeInt32BE(1, 16);
  return 20;
}

const LITTLE_ENDIAN = endianness() === 'LE';

/**
 * A datastream channel as stored (activity_stream_channels.values, migration 0047): float64
 * little-endian, NaN where a sample has no value. On a little-endian machine, the array's own bytes.
 */
export function channelBytes(values: Float64Array): Buffer {
  const bytes = Buffer.from(values.buffer, values.byteOffset, values.byteLength);
  return LITTLE_ENDIAN ? bytes : Buffer.from(bytes).swap64();
}

/** A stored channel back to its values (a copy: the driver's buffer need not be 8-byte aligned). */
export function channelFromBytes(buf: Buffer): Float64Array {
  if (buf.length % 8 !== 0) throw new Error(`channel of ${buf.length} bytes, not a whole number of float64`);
  const out = new Float64Array(buf.length / 8);
  const bytes = new Uint8Array(out.buffer);
  bytes.set(buf);
  if (!LITTLE_ENDIAN) Buffer.from(out.buffer).swap64();
  return out;
}

/** An `int4[]` parameter. */
export function int4ArrayParam(values: Int32Array): Buffer {
  const n = values.length;
  const buf = Buffer.allocUnsafe(20 + n * 8);
  const view = new DataView(buf.buffer, buf.byteOffset, buf.length);
  let o = arrayHeader(buf, n, INT4_OID);
  for (let i = 0; i < n; i++) {
    view.setInt32(o, 4);
    view.setInt32(o + 4, values[i] as number);
    o += 8;
  }
  return buf.subarray(0, o);
}

/** Elements of a one-dimensional binary array: the offset of the first one and their count. */
function arrayBody(buf: Buffer, elementOid: number): { offset: number; n: number } {
  const ndim = buf.readInt32BE(0);
  const oid = buf.readUInt32BE(8);
  if (oid !== elementOid) throw new Error(`binary array of element type ${oid}, expected ${elementOid}`);
  if (ndim === 0) return { offset: 12, n: 0 };
  if (ndim !== 1) throw new Error(`binary array of ${ndim} dimensions, expected 1`);
  return { offset: 20, n: buf.readInt32BE(12) };
}

/** `array_send(int4[])` back to values (the column has no NULLs). */
export function int4ArrayFromBinary(buf: Buffer): Int32Array {
  const { offset, n } = arrayBody(buf, INT4_OID);
  const view = new DataView(buf.buffer, buf.byteOffset, buf.length);
  const out = new Int32Array(n);
  let o = offset;
  for (let i = 0; i < n; i++) {
    if (view.getInt32(o) !== 4) throw new Error('int4[] element of unexpected length (NULL?)');
    out[i] = view.getInt32(o + 4);
    o += 8;
  }
  return out;
}

const EWKB_Z = 0x80000000;
const EWKB_M = 0x40000000;
const EWKB_SRID = 0x20000000;
const WKB_POINT = 1;
const WKB_LINESTRING = 2;

/**
 * The track as EWKB (SRID 4326, little-endian): a LineString ZM, or a Point ZM for a single
 * location. X longitude, Y latitude, Z elevation (NaN unknown), M the elapsed second.
 * Undefined for an empty track.
 */
export function trackToEwkb(track: Track): Buffer | undefined {
  const n = track.elapsed.length;
  if (n === 0) return undefined;
  const line = n > 1;
  const header = 1 + 4 + 4 + (line ? 4 : 0);
  const buf = Buffer.allocUnsafe(header + n * 32);
  buf.writeUInt8(1, 0);
  buf.writeUInt32LE(((line ? WKB_LINESTRING : WKB_POINT) | EWKB_Z | EWKB_M | EWKB_SRID) >>> 0, 1);
  buf.writeUInt32LE(SRID, 5);
  if (line) buf.writeUInt32LE(n, 9);
  const view = new DataView(buf.buffer, buf.byteOffset, buf.length);
  let o = header;
  for (let i = 0; i < n; i++) {
    view.setFloat64(o, track.longitude[i] as number, true);
    view.setFloat64(o + 8, track.latitude[i] as number, true);
    view.setFloat64(o + 16, track.elevation[i] as number, true);
    view.setFloat64(o + 24, track.elapsed[i] as number, true);
    o += 32;
  }
  return buf;
}

/**
 * A track from the WKB of `ST_AsBinary` (ISO: type 3001/3002 for ZM) or `ST_AsEWKB` (flags):
 * a Point or LineString with Z and M.
 */
export function trackFromWkb(buf: Buffer): Track {
  const little = buf.readUInt8(0) === 1;
  const readU32 = (o: number) => (little ? buf.readUInt32LE(o) : buf.readUInt32BE(o));
  const view = new DataView(buf.buffer, buf.byteOffset, buf.length);
  const readF64 = (o: number) => view.getFloat64(o, little);
  const code = readU32(1);
  let o = 5;
  let base: number;
  let zm: boolean;
  if (code & (EWKB_Z | EWKB_M | EWKB_SRID)) {
    base = code & 0xff;
    zm = (code & EWKB_Z) !== 0 && (code & EWKB_M) !== 0;
    if (code & EWKB_SRID) o += 4;
  } else {
    base = code % 1000;
    zm = Math.floor(code / 1000) === 3;
  }
  if (!zm || (base !== WKB_POINT && base !== WKB_LINESTRING))
    throw new Error(`track WKB of type ${code}: expected a Point or LineString with Z and M`);
  let n = 1;
  if (base === WKB_LINESTRING) {
    n = readU32(o);
    o += 4;
  }
  const track: Track = {
    elapsed: new Int32Array(n),
    latitude: new Float64Array(n),
    longitude: new Float64Array(n),
    elevation: new Float64Array(n),
  };
  for (let i = 0; i < n; i++) {
    track.longitude[i] = readF64(o);
    track.latitude[i] = readF64(o + 8);
    track.elevation[i] = readF64(o + 16);
    track.elapsed[i] = readF64(o + 24);
    o += 32;
  }
  return track;
}
