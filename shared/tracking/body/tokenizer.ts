/**
 * The byte level of the activity body fast path (scan.ts): a cursor over the body's bytes that
 * reads JSON whitespace, punctuation, member names, integer keys and numbers exactly as JSON.parse
 * would, and skips values it does not need. Anything it is not sure of throws GIVE_UP, which
 * scan.ts turns into "leave the body to the generic path".
 */

/** Thrown inside the scan to give up; scanActivityBody catches it, it never leaves the scan. */
export const GIVE_UP = Symbol('give up');

const QUOTE = 0x22;
const COMMA = 0x2c;
const MINUS = 0x2d;
const DOT = 0x2e;
const ZERO = 0x30;
const NINE = 0x39;
const COLON = 0x3a;
export const OPEN_BRACE = 0x7b;
export const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;
const BACKSLASH = 0x5c;

/** 10^0 … 10^22: exact doubles, so a mantissa below 2^53 divided by one is correctly rounded (Clinger's fast path). */
const POWERS_OF_TEN = Array.from({ length: 23 }, (_, k) => 10 ** k);
/** Up to 15 digits, a decimal mantissa is an exact double. */
const MAX_FAST_DIGITS = 15;

export class Scanner {
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
