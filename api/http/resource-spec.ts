import type { Context } from 'koa';
import type { z } from 'zod';
import type { Access } from './access.ts';
import type { Principal } from './auth.ts';
import type { HydraView, JsonApiView, ResourceFormat } from './formats/format.ts';
import type { BodyOf } from './inputs.ts';
import type { HttpMethod } from './openapi.ts';
import type { ResponseSpec } from './response-spec.ts';
import type { BodySpec } from './route.ts';

/**
 * What a resource declaration says (api/http/resource.ts turns it into routes): its options and
 * each operation's spec, and what a handler is handed, typed by the operation's access.
 */

export type AnyObject = z.ZodObject;
export type Undef = z.ZodUndefined;

/** Access levels that always verify a token: their handlers get a Principal, never undefined. */
type VerifiedAccess = 'bearer' | 'bearer+key';

/** The principal a handler gets under an access level. */
export type PrincipalFor<A extends Access> = A extends VerifiedAccess ? Principal : Principal | undefined;

/** The service's caller a handler gets under an access level (see ResourceOptions.caller). */
export type CallerFor<A extends Access, C> = A extends VerifiedAccess ? C : C | undefined;

/**
 * How a service turns a verified principal into its own caller (the tracking user, the places
 * caller); declared once per resource, resolved by the layer before the handler runs.
 */
export type CallerResolver<C> = (principal: Principal) => C | Promise<C>;

/** What a handler gets: the validated request parts, the verified principal and the service's caller. */
export interface OperationInput<Q extends z.ZodType, P extends z.ZodType, B extends BodySpec, A extends Access, C> {
  query: z.output<Q>;
  params: z.output<P>;
  /** The validated body: a schema's output, or the value of the input that read it (api/http/inputs.ts). */
  body: BodyOf<B>;
  /** Set when the operation's access verified a token (always, for `bearer` and `bearer+key`). */
  principal: PrincipalFor<A>;
  /** The resource's caller for that principal (undefined when no caller resolver is declared). */
  caller: CallerFor<A, C>;
  ctx: Context;
}

/**
 * Error statuses an operation may answer besides the ones its shape implies (401, 404, 406, 422);
 * one of those given here says it in the operation's own words.
 */
export type ExtraErrors = Partial<Record<400 | 401 | 403 | 404 | 409 | 410 | 413 | 415 | 422 | 429, string>>;

/**
 * Writes an operation's result in another media type than the resource's format (an activity as
 * `application/gpx+xml`): returns the body (a string, Buffer or stream). The response's
 * Content-Type is that media type unless the writer sets its own.
 */
export type Representation<R> = (result: R, ctx: Context) => unknown;

export interface OperationSpec<Q extends z.ZodType, P extends z.ZodType, B extends BodySpec, R, A extends Access, C> {
  summary: string;
  description?: string;
  query?: Q;
  /** Request headers that change the answer (`Accept-Language`): validated and documented. */
  headers?: z.ZodObject;
  /** A JSON schema (read within BODY_LIMIT), or the operation's inputs per media type (api/http/inputs.ts). */
  body?: B;
  /** Overrides the resource's read or write access. */
  access?: A;
  /**
   * Takes an `Idempotency-Key` (api/http/idempotency.ts, docs/idempotency.md): a retry gets the
   * first success again. Every `create` does unless it says false; another operation that
   * creates says true. Needs a caller (a token or an API key).
   */
  idempotent?: boolean;
  /** Status of an invalid query (422 unless the service's spec says otherwise). */
  queryErrorStatus?: number;
  /** Errors to document besides 401 (access), 404 (item paths) and 422 (query or body). */
  errors?: ExtraErrors;
  /** More success responses to document (e.g. a 200 beside a create's 201). */
  responses?: Record<number, ResponseSpec>;
  /**
   * Media types this operation also answers in, chosen by the request's `Accept` header against
   * the format's own (Hydra: `application/ld+json`, the default, and `application/json`); a type
   * none of them offers is a 406. Keyed by media type; one of the format's own types given here
   * is written by the representation instead of the format.
   */
  representations?: Record<string, Representation<R>>;
  /**
   * Path suffixes that choose one media type whatever `Accept` says (`{ gpx: 'application/gpx+xml' }`
   * answers `/activities/{id}.gpx`): each is one of the representations, and its own route.
   */
  suffixes?: Record<string, string>;
  handler: (input: OperationInput<Q, P, B, A, C>) => R | Promise<R>;
}

/** A custom operation: any method, at a path below the collection or an item. */
export interface ActionSpec<
  Q extends z.ZodType,
  P extends AnyObject,
  B extends BodySpec,
  R,
  A extends Access,
  C,
  M extends HttpMethod,
> extends OperationSpec<Q, P, B, R, A, C> {
  method: M;
  /** Path after the collection path (`on: 'collection'`) or the item path (default). */
  path: string;
  on?: 'item' | 'collection';
  /** Path parameters when the action adds some (defaults to the item's or collection's). */
  params?: P;
  status?: number;
  /** The action's own response body: returned as is, documented with this schema. */
  response: z.ZodType;
  /** Extra methods answering the same route (spec aliases, e.g. POST beside PUT). */
  aliases?: HttpMethod[];
}

/** A resource's access for reads and for writes. */
export interface AccessPair {
  read: Access;
  write: Access;
}

export interface ResourceOptions<
  CP extends AnyObject | Undef,
  IP extends AnyObject,
  RA extends AccessPair,
  C,
  Row,
  S extends z.ZodType,
> {
  /** Collection path relative to the router prefix; may hold parameters (`/places/:place_id/activities`). */
  path: string;
  /** Parameters of the collection path, when it has some. */
  params?: CP;
  /** Item path after the collection path (`/:place_id`) and every parameter of the whole item path. */
  itemPath: string;
  itemParams: IP;
  format: ResourceFormat;
  /** One item as the format renders it (documents every item response). */
  item: S;
  /** How items become JSON:API resource objects (format `jsonapi`). */
  jsonapi?: JsonApiView<Row>;
  /** How rows become JSON-LD nodes (format `hydra`), typed by the item schema. */
  hydra?: HydraView<Row, NoInfer<S>>;
  access: RA;
  /** The service's caller of a verified principal, handed to every handler (`caller`). */
  caller?: CallerResolver<C>;
  /** Text of the documented 404 of item paths. */
  notFound?: string;
  tag?: string;
}

/** What a remove answers: nothing (204), or the body the service's spec shows. */
export interface RemoveSpec<P extends AnyObject, A extends Access, C>
  extends OperationSpec<Undef, P, Undef, void, A, C> {
  response?: { schema: z.ZodType; body: unknown };
}
