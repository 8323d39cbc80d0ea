import { bodyParser } from '@koa/bodyparser';
import type { Middleware } from 'koa';

/** A route that accepts larger JSON bodies than the default limit (an activity with its streams). */
export interface RouteBodyLimit {
  method: string;
  /** The full path, prefix included (`/v2/activities`); a trailing slash matches too. */
  path: string;
  limitBytes: number;
  /**
   * Top-level members the route itself checks value by value, refusing anything but numbers and
   * numeric keys (an activity's `datastream` and `locations`): the input guard does not walk them
   * a second time. Everything else in the body is guarded as on any route.
   */
  selfCheckedMembers?: readonly string[];
}

/** The route limit a request falls under, if any. */
export function routeBodyLimit(
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
    extendTypes: {
      json: [
        'application/json',
        'application/ld+json',
        'application/vnd.api+json',
        'application/geo+json',
        'application/merge-patch+json',
      ],
    },
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
  const parsers = new Map(routeLimits.map((r) => [r, jsonParser(r.limitBytes)]));
  return (ctx, next) => {
    const route = routeBodyLimit(routeLimits, ctx);
    return ((route && parsers.get(route)) ?? parse)(ctx, next);
  };
}
