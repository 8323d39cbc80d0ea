import Router from '@koa/router';
import type { Context, Middleware } from 'koa';
import { z } from 'zod';
import type { ErrorFormat } from './error-format.ts';
import { errorResponse } from './error-schemas.ts';
import { type BodyInputs, type BodyOf, bodyInputs, isBodyInputs, jsonInput, readBody } from './inputs.ts';
import type { HttpMethod, OpenApiRegistry } from './openapi.ts';
import type { ResponseSpec } from './response-spec.ts';
import { parseInput } from './validate.ts';

/** A body an operation takes: one JSON schema, or its inputs per media type (api/http/inputs.ts). */
export type BodySpec = z.ZodType | BodyInputs<unknown>;

/** The credentials an operation takes, as /openapi.json's security schemes name them (api/http/openapi.ts). */
export type Security = 'bearer' | 'apiKey' | 'basic';

export interface RouteSpec<Q extends z.ZodType, P extends z.ZodType, B extends BodySpec> {
  method: HttpMethod;
  /** Koa path relative to the router prefix, e.g. `/places/:id`. */
  path: string;
  summary: string;
  description?: string;
  tags?: string[];
  /** Credentials the route requires (documented; enforced by `middleware`). */
  security?: Security[];
  query?: Q;
  params?: P;
  /** Request headers that change the answer (`Accept-Language`): validated and documented. */
  headers?: z.ZodObject;
  /** The operation's name in generated clients; derived from the method and path when unset. */
  operationId?: string;
  /** A JSON schema (read in any JSON media type, within BODY_LIMIT), or the operation's inputs. */
  body?: B;
  /** Status for an invalid query (422 unless a spec says otherwise). */
  queryErrorStatus?: number;
  responses: Record<number, ResponseSpec>;
  /** Runs before validation: auth, uploads... */
  middleware?: Middleware[];
  handler: (ctx: Context, input: { query: z.output<Q>; params: z.output<P>; body: BodyOf<B> }) => unknown;
}

/** A route's body as inputs: a bare schema is one JSON input. */
function inputsOf(body: BodySpec): BodyInputs<unknown> {
  return isBodyInputs(body)
    ? body
    : bodyInputs('Send the body as JSON (Content-Type: application/json)', jsonInput(body as z.ZodType));
}

/**
 * A service's routes, declared once: the same zod schemas validate each request and describe it
 * in /openapi.json. The router also tags each request with the service's error format.
 */
export class ApiRouter {
  readonly router: Router;
  /** The path every route of the router is below (`/v2`). */
  readonly prefix: string;
  readonly #registry: OpenApiRegistry;
  readonly #tag: string;
  /** The error dialect of the service this router mounts (documented error responses use it). */
  readonly errorFormat: ErrorFormat;
  /** The most bytes a body may have unless its input says otherwise (BODY_LIMIT). */
  readonly #bodyLimitBytes: number;

  constructor(options: {
    prefix: string;
    errorFormat: ErrorFormat;
    registry: OpenApiRegistry;
    tag: string;
    bodyLimitBytes: number;
    middleware?: Middleware[];
  }) {
    this.prefix = options.prefix;
    this.#registry = options.registry;
    this.#tag = options.tag;
    this.errorFormat = options.errorFormat;
    this.#bodyLimitBytes = options.bodyLimitBytes;
    this.router = new Router({ prefix: options.prefix });
    const format: Middleware = async (ctx, next) => {
      ctx.state.errorFormat = options.errorFormat;
      await next();
    };
    this.router.use(format, ...(options.middleware ?? []));
  }

  add<Q extends z.ZodType = z.ZodUndefined, P extends z.ZodType = z.ZodUndefined, B extends BodySpec = z.ZodUndefined>(
    spec: RouteSpec<Q, P, B>,
  ): this {
    const inputs = spec.body ? inputsOf(spec.body) : undefined;
    // A bare schema's handler gets the validated document; declared inputs' handlers get the tagged value.
    const unwrap = spec.body !== undefined && !isBodyInputs(spec.body);
    const handler: Middleware = async (ctx) => {
      const query = spec.query ? parseInput(spec.query, ctx.query, 'query', spec.queryErrorStatus) : undefined;
      const params = spec.params ? parseInput(spec.params, ctx.params, 'params', 404) : undefined;
      if (spec.headers) parseInput(spec.headers, ctx.headers, 'headers', 400);
      // Read after the credentials (the route's middleware): an unknown caller's body costs nothing.
      const read = inputs ? await readBody(ctx, inputs, this.#bodyLimitBytes) : undefined;
      const body = unwrap ? (read as { value: unknown }).value : read;
      const result = await spec.handler(ctx, { query, params, body } as Parameters<typeof spec.handler>[1]);
      if (result !== undefined && ctx.body === undefined) ctx.body = result;
    };
    this.router[spec.method](spec.path, ...(spec.middleware ?? []), handler);
    this.#document(spec, inputs);
    return this;
  }

  #document<Q extends z.ZodType, P extends z.ZodType, B extends BodySpec>(
    spec: RouteSpec<Q, P, B>,
    inputs: BodyInputs<unknown> | undefined,
  ): void {
    const responses: Record<
      string,
      { description: string; content?: Record<string, { schema?: z.ZodType }>; headers?: z.ZodObject }
    > = {};
    for (const [status, declared] of Object.entries(spec.responses)) {
      // An error declared with no body answers the service's own error document: say so.
      const bare = !declared.schema && !declared.alternates && Number(status) >= 400;
      const r = bare ? errorResponse(this.errorFormat, declared.description) : declared;
      const content: Record<string, { schema?: z.ZodType }> = {
        ...(r.schema ? { [r.contentType ?? 'application/json']: { schema: r.schema } } : {}),
        ...Object.fromEntries(
          Object.entries(r.alternates ?? {}).map(([type, schema]) => [type, schema ? { schema } : {}]),
        ),
      };
      responses[status] = {
        description: r.description,
        ...(Object.keys(content).length ? { content } : {}),
        ...(r.headers ? { headers: r.headers } : {}),
      };
    }
    const path = `${this.prefix}${spec.path}`;
    this.#registry.add(path, spec.method, {
      operationId: spec.operationId ?? operationIdOf(spec.method, path),
      summary: spec.summary,
      ...(spec.description ? { description: spec.description } : {}),
      tags: spec.tags ?? [this.#tag],
      ...(spec.security?.length ? { security: [Object.fromEntries(spec.security.map((s) => [s, []]))] } : {}),
      requestParams: {
        ...(spec.query instanceof z.ZodObject ? { query: spec.query } : {}),
        ...(spec.params instanceof z.ZodObject ? { path: spec.params } : {}),
        ...(spec.headers ? { header: spec.headers } : {}),
      },
      ...(inputs
        ? {
            requestBody: {
              // Optional when a request without a body is read and its schema takes none.
              required: !inputs.inputs.some((i) => i.readsNoBody && i.schema?.safeParse(undefined).success),
              content: Object.fromEntries(
                inputs.inputs.flatMap((i) => Object.entries(i.documented).map(([type, schema]) => [type, { schema }])),
              ),
            },
          }
        : {}),
      responses,
    });
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
