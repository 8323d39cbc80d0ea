import type { Context, Middleware } from 'koa';
import { z } from 'zod';
import type { AppContext } from '../context.ts';
import { type Access, accessCanRefuse, accessMiddleware, accessSecurity } from './access.ts';
import { Answer } from './answer.ts';
import { errorResponse } from './error-schemas.ts';
import type { Serializer } from './formats/format.ts';
import {
  accessHasCaller,
  documentIdempotencyErrors,
  idempotency,
  idempotencyKeyHeader,
  replayedHeaders,
} from './idempotency.ts';
import { type BodyInputs, bodyInputs, isBodyInputs, jsonInput, readBody } from './inputs.ts';
import { negotiator, notAcceptable } from './negotiation.ts';
import type { HttpMethod } from './openapi.ts';
import type { CallerResolver, OperationInput, OperationSpec, Representation } from './resource-spec.ts';
import type { ResponseSpec } from './response-spec.ts';
import { type ApiRouter, type BodySpec, operationIdOf, type Security } from './route.ts';
import { parseInput } from './validate.ts';

/**
 * One operation of the API, whole: its negotiation, credentials, caller, inputs, handler, the
 * writing of its result in the chosen media type, its path suffixes and its OpenAPI entry.
 * Resources (api/http/resource.ts) declare theirs through it; so does an operation that belongs
 * to no resource (an upload).
 */
export interface OperationDeclaration<
  Q extends z.ZodType,
  P extends z.ZodType,
  B extends BodySpec,
  R,
  A extends Access,
  C,
> {
  method: HttpMethod;
  /** Koa path relative to the router prefix. */
  path: string;
  params?: P;
  spec: OperationSpec<Q, P, B, R, A, C>;
  /** The access when the spec names none (it types the handler's principal and caller). */
  access: A;
  caller?: CallerResolver<C>;
  /** Runs after the credentials, before the body is read (a 404 that costs no upload). */
  middleware?: Middleware[];
  /** The credentials `middleware` checks when the access level does not name them (HTTP Basic client credentials). */
  security?: Security[];
  tag?: string;
  /** The documented 404 (item paths, or paths with parameters). */
  notFound?: string;
  status?: number;
  /** The media type of the operation's own success bodies (JSON unless said). */
  contentType?: string;
  /** The format's serializer, when the result is written by it (its alternates are negotiated). */
  serializer?: Serializer;
  /** Its documented successes (those of a page or a redirect may be in `spec.responses` instead). */
  success?: Record<number, ResponseSpec>;
  /** Whether it takes an Idempotency-Key when the spec does not say (a resource's `create` does). */
  idempotent?: boolean;
  /** The body to send for the handler's result (the result itself unless said). */
  write?: (ctx: Context, result: R, serializer: Serializer | undefined) => unknown;
  /**
   * The handler writes the response itself (a file, a page, a redirect): a result it returns is
   * the body as is, with no Content-Type set and no 204 for an undefined one.
   */
  writesResponse?: boolean;
  /** Its query accepts every query it can be sent (a pass-through): no 422 is documented for it. */
  queryCannotFail?: boolean;
}

type App = Pick<AppContext, 'verifier' | 'db' | 'config'>;

export function addOperation<Q extends z.ZodType, P extends z.ZodType, B extends BodySpec, R, A extends Access, C>(
  router: ApiRouter,
  app: App,
  d: OperationDeclaration<Q, P, B, R, A, C>,
): void {
  const { spec } = d;
  const access = spec.access ?? d.access;
  const contentType = d.contentType ?? 'application/json';
  const write = d.write ?? ((_ctx: Context, result: R) => result);
  const format = router.errorFormat;
  const errors: Record<number, ResponseSpec> = {};
  const refusal = accessCanRefuse(access);
  if (refusal) errors[401] = errorResponse(format, refusal);
  if (d.notFound) errors[404] = errorResponse(format, d.notFound);
  // What the operation can answer: the format's serializer, then its alternates and the
  // operation's own representations. With more than one, `Accept` chooses (406 when it can't).
  const serializers = d.serializer ? [d.serializer, ...(d.serializer.alternates ?? [])] : [];
  const representations: Record<string, Representation<R>> = spec.representations ?? {};
  const extra = Object.keys(representations);
  const own = d.serializer ? serializers.map((s) => s.contentType) : extra.length ? [contentType] : [];
  const offered = [...new Set([...own, ...extra])];
  const negotiates = offered.length > 1;
  const choose = negotiator(offered);
  if (negotiates) errors[406] = errorResponse(format, `Accept allows none of ${offered.join(', ')}`);
  for (const [status, text] of Object.entries(spec.errors ?? {})) errors[Number(status)] = errorResponse(format, text);
  if ((spec.query && !d.queryCannotFail) || spec.body)
    errors[spec.queryErrorStatus && !spec.body ? spec.queryErrorStatus : 422] ??= errorResponse(
      format,
      'Invalid request (each problem names its parameter or field)',
    );
  // Idempotency-Key (api/http/idempotency.ts): claimed after the credentials and `middleware`, before the body.
  const idempotent = spec.idempotent ?? d.idempotent ?? false;
  if (idempotent && !accessHasCaller(access))
    throw new Error(`${d.method.toUpperCase()} ${d.path}: an idempotent operation needs a caller (access ${access})`);
  if (idempotent) documentIdempotencyErrors(errors, format);
  const headers = idempotent
    ? (spec.headers?.extend(idempotencyKeyHeader.shape) ?? idempotencyKeyHeader)
    : spec.headers;
  const typed = (responses: Record<number, ResponseSpec>) =>
    Object.fromEntries(
      Object.entries(responses).map(([status, r]) => {
        const replayable = idempotent && Number(status) < 300 ? { headers: replayedHeaders } : {};
        return [status, { ...(r.schema ? { contentType } : {}), ...r, ...replayable }];
      }),
    );
  const middleware = [
    ...accessMiddleware(app, access),
    ...(d.middleware ?? []),
    ...(idempotent ? [idempotency(app, Object.keys(spec.headers?.shape ?? {}))] : []),
  ];
  // A suffixed path chooses its media type itself: it never answers 406.
  const { 406: _, ...unnegotiated } = errors;

  /** The route at `path`; `only` is the media type its path suffix chooses, whatever Accept says. */
  const register = (path: string, only?: string) => {
    const chooses = !only && negotiates;
    addRoute(router, {
      method: d.method,
      path,
      summary: only ? `${spec.summary} (${only})` : spec.summary,
      ...(spec.description ? { description: spec.description } : {}),
      ...(d.tag ? { tag: d.tag } : {}),
      security: d.security ?? accessSecurity(access),
      ...(spec.query ? { query: spec.query } : {}),
      ...(headers ? { headers } : {}),
      ...(d.params ? { params: d.params } : {}),
      ...(spec.body ? { body: spec.body } : {}),
      ...(spec.queryErrorStatus ? { queryErrorStatus: spec.queryErrorStatus } : {}),
      // Negotiation comes first, as in API Platform: a 406 costs no credential check or query.
      middleware: [...(chooses ? [acceptable(offered, choose)] : []), ...middleware],
      responses: only
        ? { 200: { description: `${spec.summary}, as ${only}`, alternates: { [only]: undefined } }, ...unnegotiated }
        : // Declared responses win over the computed errors (an OAuth error, an HTML 404 page).
          { ...errors, ...typed(d.success ?? {}), ...typed(spec.responses ?? {}) },
      handler: async (ctx, input) => {
        if (d.status) ctx.status = d.status;
        const principal = ctx.state.principal;
        const caller = principal && d.caller ? await d.caller(principal) : undefined;
        // The access middleware ran: a `bearer` operation has its principal (PrincipalFor).
        const result = await spec.handler({ ...input, principal, caller, ctx } as OperationInput<Q, P, B, A, C>);
        if (d.writesResponse) {
          if (result !== undefined && ctx.body === undefined) ctx.body = result;
          return;
        }
        if (result instanceof Answer) {
          ctx.status = result.status;
          ctx.set(result.headers);
          ctx.body = result.body;
          ctx.type = result.contentType;
          return;
        }
        const type = only ?? (chooses ? (choose(ctx.get('accept')) ?? contentType) : contentType);
        const representation = representations[type];
        if (representation) {
          ctx.type = type;
          ctx.body = await representation(result, ctx);
          return;
        }
        const body = write(ctx, result, serializers.find((s) => s.contentType === type) ?? serializers[0]);
        if (body === undefined) {
          if (ctx.status === 200 || ctx.status === 404) ctx.status = 204;
          return;
        }
        ctx.body = body;
        ctx.type = type;
      },
    });
  };
  // Suffixed paths first: `/activities/{id}.gpx` must be matched before `/activities/{id}`.
  for (const [suffix, type] of Object.entries(spec.suffixes ?? {})) register(`${d.path}.${suffix}`, type);
  register(d.path);
}

/** Refuses a request whose `Accept` allows none of the offered media types; responses vary by it. */
function acceptable(offered: readonly string[], choose: (accept: string) => string | undefined): Middleware {
  return (ctx, next) => {
    ctx.vary('Accept');
    if (choose(ctx.get('accept')) === undefined) throw notAcceptable(offered);
    return next();
  };
}

/** What the router is handed for one path of an operation: validated, documented, then the handler. */
interface RouteSpec {
  method: HttpMethod;
  /** Koa path relative to the router prefix, e.g. `/places/:id`. */
  path: string;
  summary: string;
  description?: string;
  tag?: string;
  /** Credentials the route requires (documented; enforced by `middleware`). */
  security?: Security[];
  query?: z.ZodType;
  params?: z.ZodType;
  headers?: z.ZodObject;
  body?: BodySpec;
  /** Status for an invalid query (422 unless a spec says otherwise). */
  queryErrorStatus?: number;
  responses: Record<number, ResponseSpec>;
  /** Runs before validation: negotiation, credentials, idempotency... */
  middleware: Middleware[];
  /** Gets the validated parts (typed by the operation's declaration, whose schemas made them). */
  handler: (ctx: Context, input: { query: unknown; params: unknown; body: unknown }) => Promise<void>;
}

/** A route's body as inputs: a bare schema is one JSON input. */
function inputsOf(body: BodySpec): BodyInputs<unknown> {
  return isBodyInputs(body)
    ? body
    : bodyInputs('Send the body as JSON (Content-Type: application/json)', jsonInput(body));
}

/** The route on the Koa router and in /openapi.json: private, so an operation is only ever declared whole. */
function addRoute(router: ApiRouter, spec: RouteSpec): void {
  const inputs = spec.body ? inputsOf(spec.body) : undefined;
  // A bare schema's handler gets the validated document; declared inputs' handlers get the tagged value.
  const unwrap = spec.body !== undefined && !isBodyInputs(spec.body);
  const handler: Middleware = async (ctx) => {
    const query = spec.query ? parseInput(spec.query, ctx.query, 'query', spec.queryErrorStatus) : undefined;
    const params = spec.params ? parseInput(spec.params, ctx.params, 'params', 404) : undefined;
    if (spec.headers) parseInput(spec.headers, ctx.headers, 'headers', 400);
    // Read after the credentials (the route's middleware): an unknown caller's body costs nothing.
    const read = inputs ? await readBody(ctx, inputs, router.bodyLimitBytes) : undefined;
    const body = unwrap ? (read as { value: unknown }).value : read;
    await spec.handler(ctx, { query, params, body });
  };
  router.router[spec.method](spec.path, ...spec.middleware, handler);
  documentRoute(router, spec, inputs);
}

function documentRoute(router: ApiRouter, spec: RouteSpec, inputs: BodyInputs<unknown> | undefined): void {
  const responses: Record<
    string,
    { description: string; content?: Record<string, { schema?: z.ZodType }>; headers?: z.ZodObject }
  > = {};
  for (const [status, declared] of Object.entries(spec.responses)) {
    // An error declared with no body answers the service's own error document: say so.
    const bare = !declared.schema && !declared.alternates && Number(status) >= 400;
    const r = bare ? errorResponse(router.errorFormat, declared.description) : declared;
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
  const path = `${router.prefix}${spec.path}`;
  router.registry.add(path, spec.method, {
    operationId: operationIdOf(spec.method, path),
    summary: spec.summary,
    ...(spec.description ? { description: spec.description } : {}),
    tags: [spec.tag ?? router.tag],
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
