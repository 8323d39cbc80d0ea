import { searchFeatureSchema } from '../../shared/places/feature.ts';
import { searchPlaces } from '../../shared/places/search-places.ts';
import { DEFAULT_LIMIT, MAX_LIMIT, type SearchQuery, searchQuery } from '../../shared/places/search-query.ts';
import type { AppContext } from '../context.ts';
import { type Page, SerializedItems } from '../http/formats/format.ts';

/** GET /places: the search, the list operation of the places resource (see places.ts). */
export function searchOperation(app: AppContext) {
  return {
    summary: 'Search places by bounding box or radius',
    // Search shows approved places only: no token is looked at (none is verified on the hot path).
    access: 'public' as const,
    description: [
      'A location is required: `sw`+`ne` or `origin`+`radius` (km), each at most 100 km; a search without one is a 422 naming `origin`.',
      `Results are approved places ordered by proximity to user_origin (else origin, else the box centre); lines and polygons match when they cross the area, their proximity is to their nearest point. Default limit ${DEFAULT_LIMIT}, at most ${MAX_LIMIT}. "count" is the number of features in this response (as in the original service, where a full page shows count = limit); links.next is null on the last page.`,
      'Places at the same distance are ordered by an internal id, so paging returns each match once. links.next carries `after`, a cursor that starts the next page after the last place of this one (pages stay consistent while places are added); `page` alone still works (page n = results (n-1)·limit+1 to n·limit).',
      'Every invalid parameter is a 422 whose errors name it (query.radius, query.ne...).',
    ].join('\n\n'),
    query: searchQuery,
    item: searchFeatureSchema,
    handler: async ({ query }: { query: SearchQuery }): Promise<Page<never>> => {
      const found = await app.reads.read(undefined, ({ pool }) => searchPlaces(pool, query));
      return {
        // The Features come serialized and joined by PostgreSQL: only the envelope is written here.
        items: new SerializedItems(found.featuresJson, found.count),
        page: found.page,
        limit: found.limit,
        ...(found.nextAfter ? { next: { after: found.nextAfter } } : {}),
      };
    },
  };
}
