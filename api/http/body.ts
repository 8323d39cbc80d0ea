import { bodyParser } from '@koa/bodyparser';
import type { Middleware } from 'koa';

/** JSON bodies in every media type our services speak, with one size limit (413 above it). */
export function jsonBody(limitBytes: number): Middleware {
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
