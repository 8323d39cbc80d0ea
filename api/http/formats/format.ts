import type { z } from 'zod';

/** How a resource's items and lists are written on the wire. */
export type ResourceFormat = 'geojson' | 'jsonapi' | 'hydra' | 'json';

/**
 * Items already written as JSON by the database (comma-separated, no brackets): the hot search
 * path skips parsing and re-serializing them.
 */
export class SerializedItems {
  readonly json: string;
  readonly count: number;
  constructor(json: string, count: number) {
    this.json = json;
    this.count = count;
  }
}

/** One page of a list: the items and what the envelope's links and counts need. */
export interface Page<T> {
  items: readonly T[] | SerializedItems;
  /** 1-based page number. */
  page: number;
  limit: number;
  /** Every match, when the list knows it (JSON:API meta.total, hydra:totalItems, last links). */
  total?: number;
  /** When the total is not counted: whether a next page exists. */
  hasNext?: boolean;
  /** Parameters the next link adds, e.g. a keyset cursor that starts the next page (implies one). */
  next?: Record<string, string>;
  /** Query parameter of the page number in links (default `page`). */
  pageParam?: string;
  /**
   * A list paged by a cursor alone (no page numbers): its first link drops the `param`, its
   * next link sets it to `next` (none on the last page).
   */
  keyset?: { param: string; next?: string | undefined };
  /** Compound members of the page (JSON:API `include=`). */
  included?: Related[];
}

/** A related resource pulled into a compound document (JSON:API `included`). */
export interface Related {
  view: AnyJsonApiView;
  items: readonly unknown[];
}

/**
 * What a view writes for an item: the input of the item schema it is declared with, so a view
 * and its schema cannot drift (an undeclared schema accepts any object).
 */
export type ViewFields<S extends z.ZodType> =
  unknown extends z.input<S> ? Record<string, unknown> : z.input<S> & Record<string, unknown>;

/** How an item becomes a JSON:API resource object. */
export interface JsonApiView<T> {
  /** The JSON:API `type` member. */
  type: string;
  /** Base URL path of the item links (`/sports` makes `/sports/{id}`). */
  path: string;
  id: (item: T) => string;
  attributes: (item: T) => Record<string, unknown>;
  /** Linkage per relationship name: one `{type, id}`, several, or null (JSON:API 1.1, 7.2.2.2). */
  relationships?: (item: T) => Record<string, ResourceLinkage>;
}

/** Any JSON:API view, whatever its items (methods: see AnyHydraView). */
export interface AnyJsonApiView {
  type: string;
  path: string;
  id(item: unknown): string;
  attributes(item: unknown): Record<string, unknown>;
  relationships?(item: unknown): Record<string, ResourceLinkage>;
}

export type ResourceIdentifier = { type: string; id: string };
export type ResourceLinkage = ResourceIdentifier | ResourceIdentifier[] | null;

/** How an item becomes a JSON-LD node in API Platform's style, its members typed by the item schema S. */
export interface HydraView<T, S extends z.ZodType = z.ZodType> {
  /** The `@type` (also names the context: `<prefix>/contexts/<type>`). */
  type: string;
  /** Base IRI path of the items (`/v2/activities` makes `/v2/activities/{id}`). */
  path: string;
  id: (item: T) => string;
  /** The item's `@id` when it is not `path/id` (a tombstone names the activity it stands for). */
  iri?: (item: T) => string;
  /** The node's own members (everything but `@context`, `@id` and `@type`): the item schema's fields. */
  fields: (item: T) => ViewFields<S>;
}

/**
 * Any Hydra view, whatever its rows and item schema: what the serializers and links take. Its
 * functions are methods, so a view of any row type is one (method parameters are compared both
 * ways): the serializer hands each view the items its own resource's handlers returned.
 */
export interface AnyHydraView {
  type: string;
  path: string;
  id(item: unknown): string;
  iri?(item: unknown): string;
  fields(item: unknown): Record<string, unknown>;
}

/** What the request looks like, for links. */
export interface RequestView {
  /** Absolute base URL of the API (PUBLIC_URL). */
  baseUrl: string;
  /** Path of the request, prefix included (`/api/v1/places`). */
  path: string;
  /** The raw query string (no `?`). */
  querystring: string;
  /** Parsed query values, for sparse fieldsets. */
  query: Record<string, string | string[] | undefined>;
}

/** Every format: the item and list bodies, their content type, and their documentation schemas. */
export interface Serializer {
  contentType: string;
  item(item: unknown, req: RequestView): unknown;
  collection(page: Page<unknown>, req: RequestView): unknown;
  itemSchema(item: z.ZodType): z.ZodType;
  collectionSchema(item: z.ZodType): z.ZodType;
  /**
   * Other representations of the same items a client may ask for in `Accept` (Hydra: API
   * Platform's plain `application/json`). A format with alternates negotiates: this serializer
   * is the default, and a type none of them offers is a 406. Without, `Accept` is not looked at.
   */
  alternates?: readonly Serializer[];
}
