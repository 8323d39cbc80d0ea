import { bodyParser } from '@koa/bodyparser';
import type { Context, Middleware } from 'koa';
import { readRawBody } from './raw-body.ts';

/** A route that accepts larger JSON bodies than the default limit (an activity with its streams). */
export interface RouteBodyLimit {
  method: string;
  /** The full path, prefix included (`/v2/activities`); a trailing slash matches too. */
  path: string;
  limitBytes: number;
  /**
   * The route's own reader of a JSON body, given its bytes (within the limit, decompressed): what
   * it returns is the request's body (an activity create parses its streams off the event loop).
   */
  read?: (bytes: Buffer, ctx: Context) => Promise<unknown>;
}

/** The media types read as JSON bodies. */
const JSON_TYPES = [
  'application/json',
  'application/ld+json',
  'application/vnd.api+json',
  'application/geo+json',
  'application/merge-patch+json',
];

/** The route limit a request falls under, if any. */
function routeBodyLimit(
  routes: readonly RouteBodyLimit[],
  ctx: { method: string; path: string },
): RouteBodyLimit | undefined {
  if (routes.length === 0) return undefined;
  const path = ctx.path.length > 1 && ctx.path.endsWith('/') ? ctx.path.slice(0, -1) : ctx.path;
  return routes.find((r) => r.method.toUpperCase() === ctx.method && r.path === path);
}

function jsonParser(limitBytes: number): Middleware {
  return bodyParser({
    enableTypes: ['json'],
    jsonLimit: limitBytes,
    encoding: 'utf-8',
    extendTypes: { json: JSON_TYPES },
    // An empty body is treated as absent (undefined), never as {}: validation then says so.
    parsedMethods: ['POST', 'PUT', 'PATCH', 'DELETE'],
  }) as Middleware;
}

/**
 * JSON bodies in every media type our services speak, with one size limit (413 above it), except
 * on the routes given their own limit: only those routes take larger bodies.
 */
export function jsonBody(limitBytes: number, routeLimits: readonly RouteBodyLimit[] = []): Middleware {
  const parse = jsonParser(limitBytes);
  if (routeLimits.length === 0) return parse;
  const parsers = new Map(routeLimits.map((r) => [r, r.read ? ownReader(r, r.read) : jsonParser(r.limitBytes)]));
  return (ctx, next) => {
    const route = routeBodyLimit(routeLimits, ctx);
    return ((route && parsers.get(route)) ?? parse)(ctx, next);
  };
}

/** A JSON body handed to its route's reader as bytes; any other body is left unread, as the JSON parser does. */
function ownReader(route: RouteBodyLimit, read: NonNullable<RouteBodyLimit['read']>): Middleware {
  return async (ctx, next) => {
    if (ctx.is(JSON_TYPES)) {
      const bytes = await readRawBody(ctx, { limit: route.limitBytes, decompress: true });
      (ctx.request as { body?: unknown }).body = await read(bytes, ctx);
    }
    await next();
  };
}
