import { HttpError } from './errors.ts';

interface MediaRange {
  type: string;
  subtype: string;
  q: number;
  /** Position in the header: among equally good ranges, the client's first choice wins. */
  order: number;
}

/** The media ranges of an `Accept` header; parameters other than `q` (a JSON-LD `profile`...) are ignored. */
function mediaRanges(accept: string): MediaRange[] {
  const out: MediaRange[] = [];
  for (const [order, part] of accept.split(',').entries()) {
    const [range = '', ...params] = part.split(';').map((s) => s.trim().toLowerCase());
    const m = /^([a-z0-9!#$&^_.+*-]+)\/([a-z0-9!#$&^_.+*-]+)$/.exec(range);
    if (!m?.[1] || !m[2] || (m[1] === '*' && m[2] !== '*')) continue;
    let q = 1;
    for (const p of params) {
      const qm = /^q\s*=\s*([01](\.\d{0,3})?)$/.exec(p);
      if (qm?.[1]) q = Math.min(1, Number(qm[1]));
    }
    out.push({ type: m[1], subtype: m[2], q, order });
  }
  return out;
}

/** How well a range matches a type: 3 exact, 2 `type/*`, 1 `*\/*`, 0 not at all. */
function specificity(range: MediaRange, type: string): number {
  const [t, s] = type.toLowerCase().split('/');
  if (range.type === '*') return 1;
  if (range.type !== t) return 0;
  if (range.subtype === '*') return 2;
  return range.subtype === s ? 3 : 0;
}

/**
 * The offered media type the client prefers (RFC 9110, 12.5.1): each offer takes the quality of
 * the most specific range matching it; the highest quality wins, then the client's order, then
 * ours. No (or an empty) `Accept` takes the first offer; nothing acceptable gives undefined.
 */
export function negotiate(accept: string | undefined, offered: readonly string[]): string | undefined {
  const ranges = mediaRanges(accept ?? '');
  if (!accept?.trim() || ranges.length === 0) return offered[0];
  let best: { type: string; q: number; order: number } | undefined;
  for (const type of offered) {
    let match: MediaRange | undefined;
    let matchSpecificity = 0;
    for (const range of ranges) {
      const s = specificity(range, type);
      if (s > matchSpecificity) {
        match = range;
        matchSpecificity = s;
      }
    }
    if (!match || match.q === 0) continue;
    const order = matchSpecificity === 1 ? Number.MAX_SAFE_INTEGER : match.order;
    if (!best || match.q > best.q || (match.q === best.q && order < best.order)) best = { type, q: match.q, order };
  }
  return best?.type;
}

/** Accept headers whose choice a negotiator keeps (clients send few distinct ones), and the longest kept. */
const KEPT_CHOICES = 64;
const KEPT_LENGTH = 256;

/**
 * `negotiate` over one operation's offers, each Accept header's choice kept once made (up to
 * KEPT_CHOICES headers of at most KEPT_LENGTH characters, then the oldest goes): the same header
 * is not parsed again per request.
 */
export function negotiator(offered: readonly string[]): (accept: string) => string | undefined {
  const chosen = new Map<string, string | undefined>();
  return (accept) => {
    if (chosen.has(accept)) return chosen.get(accept);
    const type = negotiate(accept, offered);
    if (accept.length > KEPT_LENGTH) return type;
    if (chosen.size >= KEPT_CHOICES) chosen.delete(chosen.keys().next().value as string);
    chosen.set(accept, type);
    return type;
  };
}

/** 406, naming what the operation can answer (API Platform's wording). */
export function notAcceptable(offered: readonly string[]): HttpError {
  const list = offered.map((t) => `"${t}"`).join(', ');
  return new HttpError(
    406,
    'Not Acceptable',
    `The requested format is not supported. Supported MIME types are ${list} (send one in the Accept header).`,
  );
}
