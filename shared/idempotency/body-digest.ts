import { createHash } from 'node:crypto';
import type { BodyFingerprint } from './key.ts';

/** What a multipart boundary delimiter becomes in the digest. */
const DELIMITER = Buffer.from('--boundary');

/**
 * The SHA-256 of a request body as it arrives, chunk by chunk: the bytes as sent (before any
 * Content-Encoding is undone), except that a multipart body's boundary delimiters are digested
 * as one fixed delimiter, so a client that draws a new boundary for each attempt still sends the
 * same body. `size` counts the bytes digested.
 */
export class BodyDigest {
  readonly #hash = createHash('sha256');
  readonly #needle: Buffer | undefined;
  /** The tail of the last chunk that may begin a delimiter split across chunks. */
  #pending = Buffer.alloc(0);
  #size = 0;

  constructor(contentType: string) {
    const boundary = multipartBoundary(contentType);
    this.#needle = boundary ? Buffer.from(`--${boundary}`) : undefined;
  }

  /** Bytes digested so far (a multipart body's tail of a few bytes may still be pending). */
  get size(): number {
    return this.#size;
  }

  update(chunk: Buffer): void {
    const needle = this.#needle;
    if (!needle) {
      this.#emit(chunk);
      return;
    }
    const bytes = this.#pending.length ? Buffer.concat([this.#pending, chunk]) : chunk;
    let start = 0;
    for (let at = bytes.indexOf(needle, start); at >= 0; at = bytes.indexOf(needle, start)) {
      this.#emit(bytes.subarray(start, at));
      this.#emit(DELIMITER);
      start = at + needle.length;
    }
    const keep = Math.max(start, bytes.length - (needle.length - 1));
    this.#emit(bytes.subarray(start, keep));
    this.#pending = Buffer.from(bytes.subarray(keep));
  }

  digest(): BodyFingerprint {
    this.#emit(this.#pending);
    this.#pending = Buffer.alloc(0);
    return { sha256: this.#hash.digest(), size: this.#size };
  }

  #emit(bytes: Buffer): void {
    this.#hash.update(bytes);
    this.#size += bytes.length;
  }
}

/** The `boundary` parameter of a multipart Content-Type (quoted or not), else undefined. */
export function multipartBoundary(contentType: string): string | undefined {
  if (!/^\s*multipart\//i.test(contentType)) return undefined;
  const m = /;\s*boundary\s*=\s*(?:"([^"]{1,70})"|([^\s;]{1,70}))/i.exec(contentType);
  return m?.[1] ?? m?.[2];
}

/** The digest of a whole body (tests, and bodies already in memory). */
export function digestBody(contentType: string, body: Buffer): BodyFingerprint {
  const digest = new BodyDigest(contentType);
  digest.update(body);
  return digest.digest();
}
