import { z } from 'zod';
import { type Page, type RequestView, SerializedItems, type Serializer } from './format.ts';
import { hasNextPage, nextPageQuery, selfUrl } from './links.ts';

/**
 * The places service's GeoJSON: an item is a Feature as the domain builds it; a list is the
 * search envelope `{links: {self, next}, count, data: FeatureCollection}`, where `count` is the
 * number of Features in this response and `next` is null on the last page.
 */
export function geojsonSerializer(): Serializer {
  return {
    contentType: 'application/json',
    item: (item) => item,
    collection: (page: Page<unknown>, req: RequestView) => {
      const links = {
        self: selfUrl(req),
        next: hasNextPage(page) ? `${req.baseUrl}${req.path}?${nextPageQuery(req, page)}` : null,
      };
      if (page.items instanceof SerializedItems)
        return `{"links":${JSON.stringify(links)},"count":${page.items.count},"data":{"type":"FeatureCollection","features":[${page.items.json}]}}`;
      return { links, count: page.items.length, data: { type: 'FeatureCollection', features: page.items } };
    },
    itemSchema: (item) => item,
    collectionSchema: (item) =>
      z.object({
        links: z.object({ self: z.string(), next: z.string().nullable() }),
        count: z.number().int().meta({ description: 'number of Features in this response' }),
        data: z.object({ type: z.literal('FeatureCollection'), features: z.array(item) }),
      }),
  };
}
