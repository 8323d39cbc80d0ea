import { createHash } from 'node:crypto';
import type { Middleware } from 'koa';

/** Seconds shared caches and clients may reuse a catalogue answer without asking again. */
export const CATALOGUE_MAX_AGE_S = 300;

/**
 * HTTP caching of the read-only catalogue: a strong ETag from the bytes of the answer,
 * `Cache-Control: public, max-age=300`, `Vary: Accept-Language` (names are localized), and
 * 304 Not Modified with no body when `If-None-Match` names the current ETag. Errors are not cached.
 */
export function catalogueCaching(): Middleware {
  return async (ctx, next) => {
    await next();
    if ((ctx.method !== 'GET' && ctx.method !== 'HEAD') || ctx.status !== 200 || ctx.body == null) return;
    const text = typeof ctx.body === 'string' ? ctx.body : Buffer.isBuffer(ctx.body) ? null : JSON.stringify(ctx.body);
    if (text === null) return;
    const type = ctx.type;
    ctx.body = text;
    ctx.type = type;
    const etag = `"${createHash('sha1').update(text).digest('base64url')}"`;
    ctx.set('ETag', etag);
    ctx.set('Cache-Control', `public, max-age=${CATALOGUE_MAX_AGE_S}`);
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
