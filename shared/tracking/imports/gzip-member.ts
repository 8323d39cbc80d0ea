import { promisify } from 'node:util';
import { gunzip } from 'node:zlib';
import { limitName, ZIP_LIMITS, type ZipLimits } from './zip-limits.ts';

const gunzipAsync = promisify(gunzip);

/** Whether `bytes` start a gzip stream (RFC 1952 magic). */
export const isGzip = (bytes: Uint8Array) => bytes.length >= 2 && bytes[0] === 0x1f && bytes[1] === 0x8b;

export type Gunzipped = { bytes: Buffer } | { problem: string };

/**
 * A gzip-compressed member (`.fit.gz`, `.gpx.gz`, as Strava writes them) inflated at most to the
 * smaller of ZIP_LIMITS.maxEntryBytes and maxRatio × its size: zlib stops there, so a gzip bomb
 * costs no more memory than a legitimate file. A problem names the limit, or says it is not gzip.
 */
export async function gunzipMember(bytes: Buffer, limits: ZipLimits = ZIP_LIMITS): Promise<Gunzipped> {
  const byRatio = bytes.length * limits.maxRatio;
  const cap = Math.min(limits.maxEntryBytes, byRatio);
  try {
    return { bytes: await gunzipAsync(bytes, { maxOutputLength: cap }) };
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE')
      return {
        problem:
          cap === byRatio
            ? `it inflates more than ${limits.maxRatio} times its ${bytes.length} bytes (${limitName('maxRatio', limits)})`
            : `it inflates beyond ${limits.maxEntryBytes} bytes (${limitName('maxEntryBytes', limits)})`,
      };
    return { problem: `it is not a readable gzip file (${(error as Error).message})` };
  }
}
