import { z } from 'zod';
import type { AnyHydraView, Page, RequestView, Serializer } from './format.ts';
import { SerializedItems } from './format.ts';
import { hasNextPage, keysetQuery, lastPage, nextPageQuery, pageQuery, selfIri } from './links.ts';

/** Query parameters that page a list rather than filter it: not announced in `hydra:search`. */
const PAGING_PARAMETERS = new Set(['page', 'limit']);

/** `/v2/contexts/Activity` for a view at `/v2/activities`: API Platform's context IRIs. */
export function contextIri(view: Pick<AnyHydraView, 'path' | 'type'>): string {
  return `${iriRoot(view.path)}/contexts/${view.type}`;
}

/** The service prefix an IRI path lives under (`/v2` for `/v2/activities`). */
export function iriRoot(path: string): string {
  return /^\/[^/]+/.exec(path)?.[0] ?? '';
}

/** `@id` of an item: its collection path and its id, unless the view names it otherwise. */
export function itemIri(view: AnyHydraView, item: unknown): string {
  return view.iri ? view.iri(item) : `${view.path}/${encodeURIComponent(view.id(item))}`;
}

function node(view: AnyHydraView, item: unknown) {
  return { '@id': itemIri(view, item), '@type': view.type, ...view.fields(item) };
}

/** The property a filter variable is about: `order[name]`, `createdAt[after]` and `user[]` name `name`, `createdAt`, `user`. */
export function filterProperty(variable: string): string {
  const keyed = /^(?:order|exists)\[(.+)\]$/.exec(variable);
  return keyed?.[1] ?? variable.replace(/\[[^\]]*\]$/, '');
}

/** The filters of a list: the names its query schema accepts, paging aside (as API Platform lists them). */
export function listFilters(query: readonly string[], pageParam?: string): string[] {
  return query.filter((name) => !PAGING_PARAMETERS.has(name) && name !== pageParam);
}

/** `hydra:search`: an IRI template over the list's filters. */
export function searchTemplate(req: Pick<RequestView, 'path'>, filters: readonly string[]) {
  return {
    '@type': 'hydra:IriTemplate',
    'hydra:template': `${req.path}{?${filters.join(',')}}`,
    'hydra:variableRepresentation': 'BasicRepresentation',
    'hydra:mapping': filters.map((variable) => ({
      '@type': 'IriTemplateMapping',
      variable,
      property: filterProperty(variable),
      required: false,
    })),
  };
}

/**
 * API Platform's `json` format for the same resource: an item is its fields (relations as IRI
 * strings), a list a bare array of items, without `@context`, `@id`, `@type` or paging members.
 */
function plainJsonSerializer(view: AnyHydraView): Serializer {
  return {
    contentType: 'application/json',
    item: (item) => view.fields(item),
    collection: (page: Page<unknown>) => {
      if (page.items instanceof SerializedItems) throw new Error('Hydra lists need items, not serialized JSON');
      return page.items.map((item) => view.fields(item));
    },
    itemSchema: (item) => item,
    collectionSchema: (item) => z.array(item),
  };
}

/** A cursor-paged list's links: the first page (no cursor) and the next, when there is one. */
function keysetLinks(req: RequestView, keyset: NonNullable<Page<unknown>['keyset']>) {
  const at = (value?: string) => {
    const query = keysetQuery(req, keyset.param, value);
    return query ? `${req.path}?${query}` : req.path;
  };
  return {
    'hydra:first': at(),
    ...(keyset.next !== undefined ? { 'hydra:next': at(keyset.next) } : {}),
  };
}

/**
 * JSON-LD with Hydra collections, the way API Platform serves them (`application/ld+json`, the
 * default), and plain JSON on request (`Accept: application/json`).
 */
export function hydraSerializer(view: AnyHydraView, query: readonly string[] = []): Serializer {
  return {
    contentType: 'application/ld+json',
    item: (item) => ({ '@context': contextIri(view), ...node(view, item) }),
    collection: (page: Page<unknown>, req) => {
      if (page.items instanceof SerializedItems) throw new Error('Hydra lists need items, not serialized JSON');
      const at = (n: number) => `${req.path}?${pageQuery(req, n, page.limit, page.pageParam)}`;
      const last = lastPage(page);
      // The page number's or the cursor's parameter is no filter.
      const filters = listFilters(query, page.keyset?.param ?? page.pageParam);
      return {
        '@context': contextIri(view),
        '@id': req.path,
        '@type': 'hydra:Collection',
        'hydra:member': page.items.map((item) => node(view, item)),
        ...(page.total !== undefined ? { 'hydra:totalItems': page.total } : {}),
        'hydra:view': {
          '@id': selfIri(req),
          '@type': 'hydra:PartialCollectionView',
          ...(page.keyset
            ? keysetLinks(req, page.keyset)
            : {
                'hydra:first': at(1),
                ...(last !== undefined ? { 'hydra:last': at(last) } : {}),
                ...(page.page > 1 ? { 'hydra:previous': at(page.page - 1) } : {}),
                ...(hasNextPage(page) ? { 'hydra:next': `${req.path}?${nextPageQuery(req, page)}` } : {}),
              }),
        },
        ...(filters.length ? { 'hydra:search': searchTemplate(req, filters) } : {}),
      };
    },
    itemSchema: (item) => ld(item).extend({ '@context': z.string() }),
    collectionSchema: (item) =>
      z.object({
        '@context': z.string(),
        '@id': z.string(),
        '@type': z.literal('hydra:Collection'),
        'hydra:member': z.array(ld(item)),
        'hydra:totalItems': z.number().int().optional(),
        'hydra:view': z
          .object({
            '@id': z.string(),
            '@type': z.string(),
            'hydra:first': z.string(),
            'hydra:last': z.string().optional(),
            'hydra:previous': z.string().optional(),
            'hydra:next': z.string().optional(),
          })
          .loose(),
        'hydra:search': z
          .object({
            '@type': z.string(),
            'hydra:template': z.string(),
            'hydra:variableRepresentation': z.string(),
            'hydra:mapping': z.array(
              z.object({ '@type': z.string(), variable: z.string(), property: z.string(), required: z.boolean() }),
            ),
          })
          .optional(),
      }),
    alternates: [plainJsonSerializer(view)],
  };
}

/** A node's documentation: its fields with `@id` and `@type` (fields must be an object schema). */
function ld(item: z.ZodType) {
  const base = z.object({ '@id': z.string(), '@type': z.string() });
  return item instanceof z.ZodObject ? base.extend(item.shape) : base.loose();
}
