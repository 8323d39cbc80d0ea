import { z } from 'zod';
import type { HydraView, Page, RequestView, Serializer } from './format.ts';
import { SerializedItems } from './format.ts';
import { hasNextPage, lastPage, nextPageQuery, pageQuery, selfIri } from './links.ts';

/** `/v2/contexts/Activity` for a view at `/v2/activities`: API Platform's context IRIs. */
export function contextIri(view: HydraView<never>): string {
  const root = /^\/[^/]+/.exec(view.path)?.[0] ?? '';
  return `${root}/contexts/${view.type}`;
}

function node(view: HydraView<never>, item: unknown) {
  return {
    '@id': `${view.path}/${encodeURIComponent(view.id(item as never))}`,
    '@type': view.type,
    ...view.fields(item as never),
  };
}

/** `hydra:search`: an IRI template over the list's filters (the names its query schema accepts). */
function searchTemplate(req: RequestView, filters: readonly string[]) {
  return {
    '@type': 'hydra:IriTemplate',
    'hydra:template': `${req.path}{?${filters.join(',')}}`,
    'hydra:variableRepresentation': 'BasicRepresentation',
    'hydra:mapping': filters.map((variable) => ({
      '@type': 'IriTemplateMapping',
      variable,
      property: variable.replace(/\[\]$/, '').replace(/^(order|exists)\[(.+)\]$/, '$2'),
      required: false,
    })),
  };
}

/** JSON-LD with Hydra collections, the way API Platform serves them. */
export function hydraSerializer(view: HydraView<never>, filters: readonly string[] = []): Serializer {
  return {
    contentType: 'application/ld+json',
    item: (item) => ({ '@context': contextIri(view), ...node(view, item) }),
    collection: (page: Page<unknown>, req) => {
      if (page.items instanceof SerializedItems) throw new Error('Hydra lists need items, not serialized JSON');
      const at = (n: number) => `${req.path}?${pageQuery(req, n, page.limit, page.pageParam)}`;
      const last = lastPage(page);
      return {
        '@context': contextIri(view),
        '@id': req.path,
        '@type': 'hydra:Collection',
        'hydra:member': page.items.map((item) => node(view, item)),
        ...(page.total !== undefined ? { 'hydra:totalItems': page.total } : {}),
        'hydra:view': {
          '@id': selfIri(req),
          '@type': 'hydra:PartialCollectionView',
          'hydra:first': at(1),
          ...(last !== undefined ? { 'hydra:last': at(last) } : {}),
          ...(page.page > 1 ? { 'hydra:previous': at(page.page - 1) } : {}),
          ...(hasNextPage(page) ? { 'hydra:next': `${req.path}?${nextPageQuery(req, page)}` } : {}),
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
        'hydra:view': z.object({ '@id': z.string(), '@type': z.string() }).loose(),
        'hydra:search': z.object({ '@type': z.string(), 'hydra:template': z.string() }).loose().optional(),
      }),
  };
}

/** A node's documentation: its fields with `@id` and `@type` (fields must be an object schema). */
function ld(item: z.ZodType) {
  const base = z.object({ '@id': z.string(), '@type': z.string() });
  return item instanceof z.ZodObject ? base.extend(item.shape) : base.loose();
}
