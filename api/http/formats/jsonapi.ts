import { z } from 'zod';
import type {
  AnyJsonApiView,
  JsonApiView,
  Page,
  Related,
  RequestView,
  ResourceIdentifier,
  ResourceLinkage,
  Serializer,
} from './format.ts';
import { SerializedItems } from './format.ts';
import { hasNextPage, lastPage, nextPageQuery, pageQuery, selfUrl } from './links.ts';

const JSONAPI = { version: '1.1' } as const;

/** A JSON:API document's primary data with its compound members (`include=`). */
export class Compound<T> {
  readonly data: T;
  readonly included: Related[];
  constructor(data: T, included: Related[]) {
    this.data = data;
    this.included = included;
  }
}

/** `include` members for a compound document, typed by their view. */
export function related<T>(view: JsonApiView<T>, items: readonly T[]): Related {
  return { view, items };
}

/** `fields[type]=a,b` of the request, per type (JSON:API sparse fieldsets). */
function sparseFields(req: RequestView): Map<string, Set<string>> {
  const out = new Map<string, Set<string>>();
  for (const key of Object.keys(req.query)) {
    if (!key.startsWith('fields[')) continue;
    const m = /^fields\[([^\]]+)\]$/.exec(key);
    const value = req.query[key];
    if (m?.[1] && typeof value === 'string') out.set(m[1], new Set(value.split(',').filter(Boolean)));
  }
  return out;
}

/**
 * One resource object. Written with loops rather than entries/filter/fromEntries: it runs for
 * every item of every page, and without sparse fieldsets (the usual case) it keeps the view's
 * attributes object as it is. Members keep the view's order either way.
 */
function resourceObject(view: AnyJsonApiView, item: unknown, req: RequestView, fields: Map<string, Set<string>>) {
  const id = view.id(item);
  const wanted = fields.get(view.type);
  let attributes = view.attributes(item);
  if (wanted) {
    const kept: Record<string, unknown> = {};
    for (const name of Object.keys(attributes)) if (wanted.has(name)) kept[name] = attributes[name];
    attributes = kept;
  }
  const linkage = view.relationships?.(item);
  const relationships: Record<string, { data: ResourceLinkage }> = {};
  let linked = 0;
  if (linkage)
    for (const name of Object.keys(linkage))
      if (!wanted || wanted.has(name)) {
        relationships[name] = { data: linkage[name] as ResourceLinkage };
        linked++;
      }
  const self = { self: `${req.baseUrl}${view.path}/${encodeURIComponent(id)}` };
  return linked
    ? { type: view.type, id, attributes, relationships, links: self }
    : { type: view.type, id, attributes, links: self };
}

/** Included resource objects, each once, never repeating primary data (JSON:API 1.1, 7.4). */
function includedObjects(
  related: readonly Related[],
  primary: readonly ResourceIdentifier[],
  req: RequestView,
  fields: Map<string, Set<string>>,
) {
  const seen = new Set(primary.map((r) => `${r.type}\u0001${r.id}`));
  const out: ReturnType<typeof resourceObject>[] = [];
  for (const { view, items } of related)
    for (const item of items) {
      const key = `${view.type}\u0001${view.id(item)}`;
      if (seen.has(key)) continue;
      seen.add(key);
      out.push(resourceObject(view, item, req, fields));
    }
  return out;
}

/** JSON:API 1.1 documents: resource objects with relationships, `included`, links and meta. */
export function jsonApiSerializer(view: AnyJsonApiView): Serializer {
  return {
    contentType: 'application/vnd.api+json',
    item: (result, req) => {
      const compound = result instanceof Compound ? result : undefined;
      const item = compound ? compound.data : result;
      const fields = sparseFields(req);
      const data = resourceObject(view, item, req, fields);
      const included = compound ? includedObjects(compound.included, [data], req, fields) : [];
      return { jsonapi: JSONAPI, links: { self: selfUrl(req) }, data, ...(included.length ? { included } : {}) };
    },
    collection: (page: Page<unknown>, req) => {
      if (page.items instanceof SerializedItems) throw new Error('JSON:API lists need items, not serialized JSON');
      const fields = sparseFields(req);
      const data = page.items.map((item) => resourceObject(view, item, req, fields));
      const included = includedObjects(page.included ?? [], data, req, fields);
      const at = (n: number) => `${req.baseUrl}${req.path}?${pageQuery(req, n, page.limit, page.pageParam)}`;
      const last = lastPage(page);
      return {
        jsonapi: JSONAPI,
        links: {
          self: selfUrl(req),
          first: at(1),
          prev: page.page > 1 ? at(page.page - 1) : null,
          next: hasNextPage(page) ? `${req.baseUrl}${req.path}?${nextPageQuery(req, page)}` : null,
          ...(last !== undefined ? { last: at(last) } : {}),
        },
        ...(page.total !== undefined ? { meta: { total: page.total } } : {}),
        data,
        ...(included.length ? { included } : {}),
      };
    },
    itemSchema: (item) =>
      z.object({
        jsonapi: z.object({ version: z.string() }),
        links: z.object({ self: z.string() }),
        data: resourceSchema(view.type, item),
        included: z.array(z.object({ type: z.string(), id: z.string() }).loose()).optional(),
      }),
    collectionSchema: (item) =>
      z.object({
        jsonapi: z.object({ version: z.string() }),
        links: z.object({
          self: z.string(),
          first: z.string(),
          prev: z.string().nullable(),
          next: z.string().nullable(),
          last: z.string().optional(),
        }),
        meta: z.object({ total: z.number().int() }).optional(),
        data: z.array(resourceSchema(view.type, item)),
        included: z.array(z.object({ type: z.string(), id: z.string() }).loose()).optional(),
      }),
  };
}

function resourceSchema(type: string, attributes: z.ZodType) {
  return z.object({
    type: z.literal(type),
    id: z.string(),
    attributes,
    relationships: z.record(z.string(), z.object({ data: z.unknown() })).optional(),
    links: z.object({ self: z.string() }),
  });
}
