import { z } from 'zod';
import { COPRACTICE_MIN_PEOPLE } from '../../shared/catalogue/recommendations-compute.ts';
import {
  RECOMMENDATIONS_COUNT,
  recommendedSports,
  recommendedSportsIn,
} from '../../shared/catalogue/recommendations-read.ts';
import type { AppContext } from '../context.ts';
import { errorResponse } from '../http/error-schemas.ts';
import { addOperation } from '../http/operation.ts';
import type { ApiRouter } from '../http/route.ts';

const { min, max } = RECOMMENDATIONS_COUNT;
const query = z.object({
  count: z.coerce
    .number()
    .int()
    .min(min)
    .max(max)
    .default(RECOMMENDATIONS_COUNT.default)
    .meta({ description: `How many sport ids to return, ${min} to ${max} (default ${RECOMMENDATIONS_COUNT.default})` }),
});
const sportParam = z.string().meta({ description: 'Sport id (or slug)', example: '121' });
const list = z
  .array(z.string())
  .meta({ description: 'Sport ids as strings, best first', example: ['388', '175', '253'] });

const FALLBACK =
  'When the data gives fewer than `count` sports (none at all for a sport without places), the list is filled with the most widespread sports (most approved places first, then by id), so it is never empty. See docs/recommendations.md.';

/**
 * The recommendation calls of the catalogue (plain JSON arrays; errors in the router's format,
 * JSON:API for the catalogue). They only read what the `recommendations` job computed, so a
 * replica may answer them (api/reads.ts).
 * `base` is the path of the sports collection relative to the router's prefix ('/sports' for a
 * router at the root, '' for a router whose prefix is '/sports').
 */
export function addRecommendationRoutes(router: ApiRouter, app: AppContext, base = '/sports'): ApiRouter {
  const format = router.errorFormat;
  const errors = {
    404: errorResponse(format, 'Unknown sport, country or city'),
    422: errorResponse(format, 'count out of bounds, or a malformed location'),
  };
  addOperation(router, app, {
    method: 'get',
    path: `${base}/:id/recommendations`,
    params: z.object({ id: sportParam }),
    access: 'public',
    success: { 200: { description: 'Sport ids', schema: list } },
    spec: {
      summary: 'Sports practised with this one',
      description: `The sports most often practised with this one: at the same approved places and by the same people (tracking users with activities of both sports, counted only when at least ${COPRACTICE_MIN_PEOPLE} share the pair), most shared first, ties by id. ${FALLBACK}`,
      query,
      responses: errors,
      handler: ({ query, params }) =>
        app.reads.read(undefined, ({ db }) => recommendedSports(db, params.id, query.count)),
    },
  });
  addOperation(router, app, {
    method: 'get',
    path: `${base}/:id/recommendations/:location`,
    params: z.object({
      id: sportParam,
      location: z.string().meta({
        description: 'Country code (FR), city,country (Lille,FR) or city_country (montreal_ca)',
        example: 'Lille,FR',
      }),
    }),
    access: 'public',
    success: { 200: { description: 'Sport ids', schema: list } },
    spec: {
      summary: 'Sports popular in a city or a country',
      description: [
        "`location` is either a 2-letter ISO country code (`FR`): the sports with the most approved places per km² in that country; or a city: the sports offered by the most approved places within 20 km of it. A city is written as its name, a comma and its country code (`Lille,FR`, `New%20York%20City,US`), or as the catalogue's original key, the name in lower case with `_` (or `-`) for spaces and other separators, accents optional, then `_` and the country code (`montreal_ca`, `new_york_city_us`, `saint-etienne_fr`). Case does not matter; a city name (or key) shared by several cities of the country means the most populous.",
        `The sport itself is never listed; ties are broken by id. An unknown sport, country or city is a 404. ${FALLBACK}`,
      ].join('\n\n'),
      query,
      responses: errors,
      handler: ({ query, params }) =>
        app.reads.read(undefined, ({ db }) => recommendedSportsIn(db, params.id, params.location, query.count)),
    },
  });
  return router;
}
