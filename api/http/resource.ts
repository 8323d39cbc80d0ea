import type { Context } from 'koa';
import { z } from 'zod';
import type { AppContext } from '../context.ts';
import type { Access } from './access.ts';
import type { Page, RequestView, Serializer } from './formats/format.ts';
import { geojsonSerializer } from './formats/geojson.ts';
import { hydraSerializer } from './formats/hydra.ts';
import type { HydraOperationKind } from './formats/hydra-classes.ts';
import { jsonSerializer } from './formats/json.ts';
import { jsonApiSerializer } from './formats/jsonapi.ts';
import { isBodyInputs, jsonSchemaOf } from './inputs.ts';
import type { HttpMethod } from './openapi.ts';
import { addOperation } from './operation.ts';
import type {
  AccessPair,
  ActionSpec,
  AnyObject,
  OperationSpec,
  RemoveSpec,
  ResourceOptions,
  Undef,
} from './resource-spec.ts';
import type { ResponseSpec } from './response-spec.ts';
import type { ApiRouter, BodySpec } from './route.ts';

export type { CallerResolver, OperationInput, Representation } from './resource-spec.ts';

/**
 * One resource declared once: each operation (list, get, create, update, remove, or a custom
 * action) becomes a route with its auth, validation, standard error responses and OpenAPI entry,
 * and its result is written by the resource's format (GeoJSON, JSON:API, Hydra, plain JSON),
 * paging envelope included. Handlers return domain values; errors are the service's dialect.
 */
export class Resource<
  CP extends AnyObject | Undef,
  IP extends AnyObject,
  RA extends AccessPair,
  C = undefined,
  Row = unknown,
  S extends z.ZodType = z.ZodType,
> {
  readonly #router: ApiRouter;
  readonly #app: Pick<AppContext, 'verifier' | 'db' | 'hydra' | 'config'>;
  readonly #options: ResourceOptions<CP, IP, RA, C, Row, S>;
  readonly #baseUrl: string;

  constructor(
    router: ApiRouter,
    app: Pick<AppContext, 'verifier' | 'db' | 'config' | 'hydra'>,
    options: ResourceOptions<CP, IP, RA, C, Row, S>,
  ) {
    this.#router = router;
    this.#app = app;
    this.#options = options;
    this.#baseUrl = app.config.PUBLIC_URL;
    // Hydra resources describe themselves for the API documentation, contexts and entrypoint.
    if (options.format === 'hydra' && options.hydra)
      app.hydra.declare(options.hydra.type, options.hydra.path, options.item);
  }

  /** GET on the collection: a Page (or every item) in the format's list envelope. */
  list<Q extends z.ZodType = Undef, T = unknown, A extends Access = RA['read']>(
    spec: OperationSpec<Q, CP, Undef, Page<T> | readonly T[], A, C> & { item?: z.ZodType },
  ): this {
    const filters = spec.query instanceof z.ZodObject ? Object.keys(spec.query.shape) : [];
    const serializer = this.#serializer(filters);
    const item = spec.item ?? this.#options.item;
    return this.#add('get', this.#options.path, this.#options.params, spec, {
      kind: 'list',
      access: this.#options.access.read,
      item: false,
      serializer,
      ...(spec.item ? { listItem: spec.item } : {}),
      success: {
        200: { description: 'One page', ...this.#content(serializer, (s) => s.collectionSchema(item), spec) },
      },
      write: (ctx, result, chosen) => {
        const page = Array.isArray(result)
          ? { items: result, page: 1, limit: Math.max(1, result.length), total: result.length }
          : (result as Page<unknown>);
        return chosen.collection(page, this.#request(ctx));
      },
    });
  }

  get<Q extends z.ZodType = Undef, R = unknown, A extends Access = RA['read']>(
    spec: OperationSpec<Q, IP, Undef, R, A, C>,
  ): this {
    return this.#itemOperation('get', 'get', spec, this.#options.access.read, 200, 'The item');
  }

  /**
   * POST on the collection; 201 unless the handler sets another status. `at` answers it at
   * another path instead (a spec's twin path for one of its inputs, e.g. /file_import/activities).
   */
  create<Q extends z.ZodType = Undef, B extends BodySpec = Undef, R = unknown, A extends Access = RA['write']>(
    spec: OperationSpec<Q, CP, B, R, A, C> & { location?: (item: R) => string; at?: string },
  ): this {
    const serializer = this.#serializer();
    return this.#add('post', spec.at ?? this.#options.path, this.#options.params, spec, {
      kind: 'create',
      access: this.#options.access.write,
      item: false,
      status: 201,
      idempotent: true,
      serializer,
      success: {
        201: { description: 'Created', ...this.#content(serializer, (s) => s.itemSchema(this.#options.item), spec) },
      },
      write: (ctx, result, chosen) => {
        if (spec.location && ctx.status === 201) ctx.set('Location', `${this.#baseUrl}${spec.location(result)}`);
        return chosen.item(result, this.#request(ctx));
      },
    });
  }

  /** PUT on an item (and the spec's aliases, e.g. POST). */
  update<B extends BodySpec = Undef, R = unknown, A extends Access = RA['write']>(
    spec: OperationSpec<Undef, IP, B, R, A, C> & { methods?: HttpMethod[] },
  ): this {
    for (const method of spec.methods ?? ['put'])
      this.#itemOperation('update', method, spec, this.#options.access.write, 200, 'The updated item');
    return this;
  }

  remove<A extends Access = RA['write']>(spec: RemoveSpec<IP, A, C>): this {
    const response = spec.response;
    return this.#add('delete', this.#itemPath(), this.#options.itemParams, spec, {
      kind: 'remove',
      access: this.#options.access.write,
      item: true,
      status: response ? 200 : 204,
      success: response
        ? { 200: { description: 'Deleted', schema: response.schema } }
        : { 204: { description: 'Deleted' } },
      write: () => response?.body,
    });
  }

  /** A custom operation; its result is written as is and documented by `response`. */
  action<
    Q extends z.ZodType = Undef,
    P extends AnyObject = IP,
    B extends BodySpec = Undef,
    M extends HttpMethod = HttpMethod,
    // A GET reads; every other method writes (as the access chosen below).
    A extends Access = M extends 'get' ? RA['read'] : RA['write'],
  >(spec: ActionSpec<Q, P, B, unknown, A, C, M>): this {
    const onItem = (spec.on ?? 'item') === 'item';
    const path = `${onItem ? this.#itemPath() : this.#options.path}${spec.path}`;
    const params = spec.params ?? (onItem ? this.#options.itemParams : this.#options.params);
    const write = spec.method === 'get' || spec.method === 'delete' ? 'read' : 'write';
    const access = spec.method === 'delete' ? this.#options.access.write : this.#options.access[write];
    for (const method of [spec.method, ...(spec.aliases ?? [])])
      this.#add(method, path, params as P, spec, {
        kind: 'action',
        access,
        item: onItem,
        status: spec.status ?? 200,
        success: { [spec.status ?? 200]: { description: spec.summary, schema: spec.response } },
        write: (_ctx, result) => result,
      });
    return this;
  }

  #itemOperation<Q extends z.ZodType, B extends BodySpec, R, A extends Access>(
    kind: 'get' | 'update',
    method: HttpMethod,
    spec: OperationSpec<Q, IP, B, R, A, C>,
    access: Access,
    status: number,
    description: string,
  ): this {
    const serializer = this.#serializer();
    return this.#add(method, this.#itemPath(), this.#options.itemParams, spec, {
      kind,
      access,
      item: true,
      status,
      serializer,
      success: {
        [status]: { description, ...this.#content(serializer, (s) => s.itemSchema(this.#options.item), spec) },
      },
      write: (ctx, result, chosen) => chosen.item(result, this.#request(ctx)),
    });
  }

  /** A success response's documented bodies: the format's, its alternates' and the operation's representations. */
  #content(
    serializer: Serializer,
    schema: (s: Serializer) => z.ZodType,
    spec: { representations?: Record<string, unknown> },
  ): Pick<ResponseSpec, 'schema' | 'alternates'> {
    const alternates: Record<string, z.ZodType | undefined> = {};
    for (const alternate of serializer.alternates ?? []) alternates[alternate.contentType] = schema(alternate);
    // A representation may also take over one of the format's own types (to write it faster):
    // that type stays documented with the format's schema.
    for (const type of Object.keys(spec.representations ?? {}))
      if (type !== serializer.contentType && !(type in alternates)) alternates[type] = undefined;
    return { schema: schema(serializer), ...(Object.keys(alternates).length ? { alternates } : {}) };
  }

  #add<Q extends z.ZodType, P extends z.ZodType, B extends BodySpec, R, A extends Access>(
    method: HttpMethod,
    path: string,
    params: P | undefined,
    spec: OperationSpec<Q, P, B, R, A, C>,
    shape: {
      kind: HydraOperationKind;
      access: Access;
      item: boolean;
      status?: number;
      /** The format's serializer, when the result is written by it (its alternates are negotiated). */
      serializer?: Serializer;
      /** The items of a list when they differ from the resource's item schema. */
      listItem?: z.ZodType;
      /** Takes an Idempotency-Key unless the spec says otherwise (creates). */
      idempotent?: boolean;
      success: Record<number, ResponseSpec>;
      write: (ctx: Context, result: R, serializer: Serializer) => unknown;
    },
  ): this {
    const fallback = shape.serializer ?? this.#serializer();
    addOperation(this.#router, this.#app, {
      method,
      path,
      ...(params ? { params } : {}),
      spec,
      // The operation's access type (A) was inferred from the same spec and options.
      access: (spec.access ?? shape.access) as A,
      ...(this.#options.caller ? { caller: this.#options.caller } : {}),
      ...(this.#options.tag ? { tag: this.#options.tag } : {}),
      ...(shape.item || params ? { notFound: this.#options.notFound ?? 'Not found' } : {}),
      ...(shape.status ? { status: shape.status } : {}),
      contentType: this.#contentType(),
      ...(shape.serializer ? { serializer: shape.serializer } : {}),
      ...(shape.idempotent ? { idempotent: true } : {}),
      success: shape.success,
      write: (ctx, result, serializer) => shape.write(ctx, result, serializer ?? fallback),
    });
    if (this.#options.format === 'hydra' && this.#options.hydra) {
      const body = spec.body && (isBodyInputs(spec.body) ? jsonSchemaOf(spec.body) : (spec.body as z.ZodType));
      this.#app.hydra.operation(this.#options.hydra.type, {
        kind: shape.kind,
        method,
        path: `${this.#router.prefix}${path}`,
        summary: spec.summary,
        ...(spec.description ? { description: spec.description } : {}),
        ...(body ? { body } : {}),
        ...(shape.listItem ? { item: shape.listItem } : {}),
      });
    }
    return this;
  }

  #itemPath(): string {
    return `${this.#options.path}${this.#options.itemPath}`;
  }

  #contentType(): string {
    return this.#serializer().contentType;
  }

  #serializer(filters: readonly string[] = []): Serializer {
    const o = this.#options;
    switch (o.format) {
      case 'jsonapi':
        if (!o.jsonapi) throw new Error(`resource ${o.path}: format jsonapi needs a jsonapi view`);
        return jsonApiSerializer(o.jsonapi);
      case 'hydra':
        if (!o.hydra) throw new Error(`resource ${o.path}: format hydra needs a hydra view`);
        return hydraSerializer(o.hydra, filters);
      case 'geojson':
        return geojsonSerializer();
      default:
        return jsonSerializer();
    }
  }

  #request(ctx: Context): RequestView {
    return {
      baseUrl: this.#baseUrl,
      path: ctx.path,
      querystring: ctx.querystring,
      query: ctx.query as RequestView['query'],
    };
  }
}
