/**
 * Writing GPX and TCX: numbers printed so that printing what was read back prints the same
 * text (fixed decimals, trailing zeros trimmed, never an exponent), times to the second in UTC,
 * text escaped and stripped of what XML 1.0 cannot hold.
 */

/** `x` with at most `digits` decimals, trailing zeros trimmed ("1614.68", "3", "-0.5"). */
export function fixed(x: number, digits: number): string {
  const s = x.toFixed(digits);
  if (digits === 0) return s === '-0' ? '0' : s;
  let end = s.length;
  while (s.charCodeAt(end - 1) === 48) end--; // '0'
  if (s.charCodeAt(end - 1) === 46) end--; // '.'
  const out = end === s.length ? s : s.slice(0, end);
  return out === '-0' ? '0' : out;
}

/** The number `fixed` prints, as a reader of the document gets it back. */
export const quantize = (x: number, digits: number) => Number(fixed(x, digits));

/** `YYYY-MM-DDTHH:MM:SSZ`. */
export const isoSecond = (ms: number) => `${new Date(ms).toISOString().slice(0, 19)}Z`;

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&apos;' };

/** Text for an element or attribute: escaped, without the characters XML 1.0 forbids. */
export function escapeXml(text: string): string {
  return text.replace(XML_INVALID, '').replace(/[&<>"']/g, (c) => ESCAPES[c] as string);
}

/** Characters XML 1.0 documents cannot contain (lone surrogates included). */
export const XML_INVALID = /[^\t\n\r\u0020-\uD7FF\uE000-\uFFFD\u{10000}-\u{10FFFF}]/gu;

/** Output in chunks of about this many characters (a response can stream them). */
export const CHUNK_CHARS = 64 * 1024;

/** The chunks of an export, joined: for callers who want the whole document. */
export function joinChunks(chunks: Iterable<string>): string {
  let out = '';
  for (const c of chunks) out += c;
  return out;
}
