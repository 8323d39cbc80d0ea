import pg from 'pg';
import { to as copyTo } from 'pg-copy-streams';

/**
 * Rows of a query read with `COPY (…) TO STDOUT (FORMAT binary)`: every field as its raw binary
 * bytes (NULL as null). This is how large bytea values (stream columns) cross without text: the
 * driver decodes every result value as a UTF-8 string (pg-protocol has no binary mode, and pg's
 * `binary: true` re-encodes those strings, mangling bytes that are not UTF-8), so a bytea would
 * otherwise arrive hex- or base64-encoded, cost PostgreSQL the encoding, the socket a third more
 * bytes, and Node one large string per value to decode.
 *
 * COPY takes no parameters: `query` must carry its values as literals (see `literal`).
 */
export async function copyBinaryRows(pool: pg.Pool, query: string): Promise<(Buffer | null)[][]> {
  const client = await pool.connect();
  let failed = true;
  try {
    const chunks: Buffer[] = [];
    for await (const chunk of client.query(copyTo(`copy (${query}) to stdout (format binary)`)))
      chunks.push(chunk as Buffer);
    failed = false;
    return parseCopyBinary(Buffer.concat(chunks));
  } finally {
    // A connection whose COPY failed, or was left unfinished, is closed rather than reused.
    client.release(failed);
  }
}

/** A value as an SQL literal, for the statements `copyBinaryRows` runs. */
export const literal = (value: string): string => pg.escapeLiteral(value);

/** "PGCOPY\n\377\r\n\0": the signature that opens the binary COPY format. */
const SIGNATURE = Buffer.from([0x50, 0x47, 0x43, 0x4f, 0x50, 0x59, 0x0a, 0xff, 0x0d, 0x0a, 0x00]);

/**
 * The tuples of a whole binary COPY output (PostgreSQL documentation, "COPY", Binary Format):
 * signature, flags, header extension, then per tuple a 16-bit field count and per field a 32-bit
 * length (-1 for NULL) and the bytes; a field count of -1 ends it. Values are views on `data`.
 */
export function parseCopyBinary(data: Buffer): (Buffer | null)[][] {
  const fail = (what: string): never => {
    throw new Error(`binary COPY output: ${what}`);
  };
  if (data.length < SIGNATURE.length + 8 || !data.subarray(0, SIGNATURE.length).equals(SIGNATURE)) fail('no signature');
  let at = SIGNATURE.length + 4;
  at += 4 + data.readUInt32BE(at);
  const rows: (Buffer | null)[][] = [];
  for (;;) {
    if (at + 2 > data.length) fail('no end marker');
    const fields = data.readInt16BE(at);
    at += 2;
    if (fields === -1) break;
    const row: (Buffer | null)[] = new Array(fields);
    for (let i = 0; i < fields; i++) {
      if (at + 4 > data.length) fail('truncated tuple');
      const length = data.readInt32BE(at);
      at += 4;
      if (length === -1) {
        row[i] = null;
        continue;
      }
      if (length < 0 || at + length > data.length) fail('truncated field');
      row[i] = data.subarray(at, at + length);
      at += length;
    }
    rows.push(row);
  }
  return rows;
}
