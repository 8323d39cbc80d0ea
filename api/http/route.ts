import Router from '@koa/router';
import type { Middleware } from 'koa';
import type { z } from 'zod';
import type { ErrorFormat } from './error-format.ts';
import type { BodyInputs } from './inputs.ts';
import type { HttpMethod, OpenApiRegistry } from './openapi.ts';

/** A body an operation takes: one JSON schema, or its inputs per media type (api/http/inputs.ts). */
export type BodySpec = z.ZodType | BodyInputs<unknown>;

/** The credentials an operation takes, as /openapi.json's security schemes name them (api/http/openapi.ts). */
export type Security = 'bearer' | 'apiKey' | 'basic';

/**
 * A service's routes, mounted under one prefix: the router tags each request with the service's
 * error format. Operations are declared on it with `addOperation` (api/http/operation.ts), the
 * one way to add one, so that the same zod schemas validate each request and describe it in
 * /openapi.json.
 */
export class ApiRouter {
  readonly router: Router;
  /** The path every route of the router is below (`/v2`). */
  readonly prefix: string;
  /** Where its operations are documented, under this default tag (api/http/operation.ts registers them). */
  readonly registry: OpenApiRegistry;
  readonly tag: string;
  /** The error dialect of the service this router mounts (documented error responses use it). */
  readonly errorFormat: ErrorFormat;
  /** The most bytes a body may have unless its input says otherwise (BODY_LIMIT). */
  readonly bodyLimitBytes: number;

  constructor(options: {
    prefix: string;
    errorFormat: ErrorFormat;
    registry: OpenApiRegistry;
    tag: string;
    bodyLimitBytes: number;
    middleware?: Middleware[];
  }) {
    this.prefix = options.prefix;
    this.registry = options.registry;
    this.tag = options.tag;
    this.errorFormat = options.errorFormat;
    this.bodyLimitBytes = options.bodyLimitBytes;
    this.router = new Router({ prefix: options.prefix });
    const format: Middleware = async (ctx, next) => {
      ctx.state.errorFormat = options.errorFormat;
      await next();
    };
    this.router.use(format, ...(options.middleware ?? []));
  }
}

/**
 * `getV2ActivitiesById` for GET /v2/activities/{id}: the method, then each path segment in
 * camelCase, a parameter as `By<Name>` and a suffix (`{id}.gpx`) as its own word; unique as the
 * paths are, stable as long as the path is.
 */
export function operationIdOf(method: HttpMethod, path: string): string {
  const word = (w: string) => (w ? w[0]?.toUpperCase() + w.slice(1) : '');
  const words = path
    .split(/[/.]/)
    .filter(Boolean)
    .map((segment) => {
      const param = /^[:*]([A-Za-z0-9_]+)$/.exec(segment);
      const name = (param?.[1] ?? segment)
        .split(/[^A-Za-z0-9]+/)
        .map(word)
        .join('');
      return param ? `By${name}` : name;
    });
  return `${method}${words.join('')}`;
}
