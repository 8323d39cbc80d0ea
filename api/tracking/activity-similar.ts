import { z } from 'zod';
import { SIMILAR_TOLERANCE, similarActivities } from '../../shared/tracking/activities/similar.ts';
import type { AppContext } from '../context.ts';
import type { ApiRouter } from '../http/route.ts';
import { ACTIVITIES_PATH, activitySchema, activityView } from './activity-schemas.ts';
import { pagingShape } from './schemas.ts';
import { idParams, trackingResource } from './tracking-resource.ts';

/**
 * GET /v2/activities/{id}/similar/{datatype} (docs/tracking-activities.md, "Similar activities"):
 * the caller's activities comparable to one, ranked by a datatype. The rule is
 * shared/tracking/activities/similar.ts.
 */

const similarParams = idParams.extend({
  // Checked by the rule after the activity (a 422 naming it, not a 404).
  datatype: z.string().max(256).meta({ description: 'a datatype id', example: '24' }),
});

const similarQuery = z.object({
  order: z
    .enum(['asc', 'desc'])
    .optional()
    .meta({ description: "overrides the datatype's order (see the description)" }),
  ...pagingShape,
});

const percent = Math.round(SIMILAR_TOLERANCE * 100);

export function activitySimilarResource(router: ApiRouter, app: AppContext): void {
  const { db } = app;
  trackingResource(router, app, {
    path: `${ACTIVITIES_PATH}/:id/similar/:datatype`,
    params: similarParams,
    itemPath: '',
    itemParams: similarParams,
    item: activitySchema,
    hydra: activityView,
    notFound: 'No such activity (or not yours)',
  }).list({
    summary: "The caller's activities similar to one, ranked by a datatype",
    description: `The caller's activities of the same sport as activity \`id\` whose distance (summary datatype 5) is within ±${percent} % of its own, bounds included, the activity itself among them; when it has no distance, those of the sport without one. Only those with a value of \`datatype\` (a summary; for 24, Duration, the activity's \`duration\`) are listed, best first: duration lowest first (the fastest over the distance), a datatype with \`recordWay\` 1 highest first, any other lowest first; \`order=asc|desc\` overrides it. Ties: earliest start, then id. An unknown datatype is a 422. Members are Activity items as in the list (without streams). Paging: \`page\`, \`limit\` (default 30, at most 100).`,
    query: similarQuery,
    handler: async ({ params, query, caller }) => {
      const found = await similarActivities(
        db,
        caller.id,
        params.id,
        { datatype: params.datatype, order: query.order },
        query,
      );
      return { ...found, page: query.page, limit: query.limit };
    },
  });
}
