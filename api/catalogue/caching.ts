import { hash } from 'node:crypto';
import type { Middleware } from 'koa';

/** Seconds shared caches and clients may reuse a catalogue answer without asking again. */
export const CATALOGUE_MAX_AGE_S = 300;
const CACHE_CONTROL = `public, max-age=${CATALOGUE_MAX_AGE_S}`;

/**
 * HTTP caching of the read-only catalogue: a strong ETag from the bytes of the answer,
 * `Cache-Control: public, max-age=300`, `Vary: Accept-Language` (names are localized), and
 * 304 Not Modified with no body when `If-None-Match` names the current ETag. Errors are not cached.
 */
export function catalogueCaching(): Middleware {
  return async (ctx, next) => {
    await next();
    if ((ctx.method !== 'GET' && ctx.method !== 'HEAD') || ctx.status !== 200 || ctx.body == null) return;
    if (Buffer.isBuffer(ctx.body)) return;
    // The answer's bytes, encoded once: hashed for the ETag, then written as they are (Koa takes
    // their length instead of measuring a string, and the socket gets no string to encode).
    const bytes = Buffer.from(typeof ctx.body === 'string' ? ctx.body : JSON.stringify(ctx.body));
    // Koa keeps the Content-Type the handler's body gave the answer (it sets one for any body).
    const typed = ctx.res.hasHeader('Content-Type');
    ctx.body = bytes;
    if (!typed) ctx.remove('Content-Type');
    const etag = `"${hash('sha1', bytes, 'base64url')}"`;
    ctx.set('ETag', etag);
    ctx.set('Cache-Control', CACHE_CONTROL);
    ctx.vary('Accept-Language');
    if (matches(ctx.get('if-none-match'), etag)) {
      ctx.status = 304;
      ctx.body = null;
    }
  };
}

/** RFC 9110 13.1.2: `*` or any listed tag, compared weakly (a `W/` prefix is ignored). */
function matches(ifNoneMatch: string, etag: string): boolean {
  if (!ifNoneMatch) return false;
  if (ifNoneMatch.trim() === '*') return true;
  return ifNoneMatch.split(',').some((tag) => tag.trim().replace(/^W\//, '') === etag);
}
