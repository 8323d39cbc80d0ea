/**
 * The rules of the Idempotency-Key header (docs/idempotency.md; the IETF httpapi draft
 * "The Idempotency-Key HTTP Header Field"), without HTTP: what a key may be, whose it is, when
 * a retry is the same request, and which answers are kept.
 */

/** Longest key, in characters (a UUID is 36). */
export const MAX_KEY_LENGTH = 255;

export type ParsedKey = { key: string } | { problem: string };

/**
 * The key a header value carries: a Structured Field string as the draft says (`"8e03...24"`,
 * with `\"` and `\\` escapes), or, as most clients send it, the bare characters (`8e03...24`);
 * both name the same key. 1 to 255 characters, visible ASCII (a quoted key may hold spaces).
 */
export function parseIdempotencyKey(value: string): ParsedKey {
  const text = value.replace(/^[ \t]+|[ \t]+$/g, '');
  const key = text.startsWith('"') ? unquote(text) : text;
  if (key === undefined)
    return { problem: 'is not a quoted string (an sf-string: printable ASCII, only \\" and \\\\ escaped)' };
  if (key === '') return { problem: 'is empty' };
  if (key.length > MAX_KEY_LENGTH) return { problem: `has ${key.length} characters; at most ${MAX_KEY_LENGTH}` };
  if (!text.startsWith('"') && !/^[\x21-\x7e]+$/.test(key))
    return { problem: 'may hold only visible ASCII characters (letters, digits, punctuation; a UUID fits)' };
  return { key };
}

/** An sf-string's value (RFC 8941, 4.2.5), or undefined when `text` is not exactly one. */
function unquote(text: string): string | undefined {
  let out = '';
  for (let i = 1; i < text.length; i++) {
    const c = text[i] as string;
    if (c === '\\') {
      const next = text[++i];
      if (next !== '"' && next !== '\\') return undefined;
      out += next;
    } else if (c === '"') {
      return i === text.length - 1 ? out : undefined;
    } else if (c < ' ' || c > '~') {
      return undefined;
    } else out += c;
  }
  return undefined;
}

/**
 * Whose keys these are: the account's for a caller with one (whichever app it uses), else the
 * API client's. Another caller's identical key is another key.
 */
export function keyScope(caller: {
  accountId?: string | undefined;
  clientId?: string | undefined;
}): string | undefined {
  if (caller.accountId) return `account:${caller.accountId}`;
  if (caller.clientId) return `client:${caller.clientId}`;
  return undefined;
}

/** What makes a retry the same request, besides its body. */
export interface RequestFingerprint {
  method: string;
  /** The path with the query string, as sent. */
  path: string;
  /** The media type and its parameters, normalized (mediaTypeFingerprint). */
  contentType: string;
  /** The values of the request headers the operation declares (they change its outcome). */
  headers: Record<string, string>;
}

/** The body's digest (body-digest.ts). */
export interface BodyFingerprint {
  sha256: Buffer;
  size: number;
}

/**
 * A Content-Type as compared between retries: lower case, without spaces, and without a
 * multipart `boundary` (a client may draw a new one for each attempt; the body digest ignores
 * it too).
 */
export function mediaTypeFingerprint(contentType: string): string {
  return contentType
    .split(';')
    .map((part) => part.trim().toLowerCase().replace(/\s+/g, ''))
    .filter((part, i) => part !== '' && (i === 0 || !part.startsWith('boundary=')))
    .join(';');
}

/** What differs between the request a key was first used for and this one, else undefined. */
export function requestDifference(first: RequestFingerprint, sent: RequestFingerprint): string | undefined {
  if (first.method !== sent.method || first.path !== sent.path)
    return `it was first used for ${first.method} ${first.path}`;
  if (first.contentType !== sent.contentType)
    return `it was first used with Content-Type ${first.contentType || '(none)'}`;
  for (const name of new Set([...Object.keys(first.headers), ...Object.keys(sent.headers)]))
    if (first.headers[name] !== sent.headers[name])
      return `it was first used with another ${name} (${first.headers[name] ?? 'none'})`;
  return undefined;
}

/** Whether a body is the one the key was first used with (undefined: longer than that one). */
export function sameBody(first: BodyFingerprint, sent: BodyFingerprint | undefined): boolean {
  return sent !== undefined && sent.size === first.size && sent.sha256.equals(first.sha256);
}

/**
 * Whether an answer is kept for the retries: only a success. An error created nothing (every
 * write commits whole or not at all), so the same key may try again: a 422 with the body fixed, a
 * 409 or 429 later, a 5xx once the service is back (the draft leaves this to the server; Stripe
 * also lets a request that failed validation be sent again).
 */
export const answerIsKept = (status: number) => status >= 200 && status < 300;
