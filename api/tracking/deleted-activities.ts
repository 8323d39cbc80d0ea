import { z } from 'zod';
import {
  type ActivityTombstone,
  listTombstones,
  TOMBSTONE_ORDERS,
} from '../../shared/tracking/activities/tombstones.ts';
import { formatDateTime } from '../../shared/tracking/dates.ts';
import { iri } from '../../shared/tracking/iri.ts';
import type { AppContext } from '../context.ts';
import type { HydraView } from '../http/formats/format.ts';
import type { ApiRouter } from '../http/route.ts';
import { dateFilterOf, dateFilterShape, orderOf, orderShape, pagingShape } from './schemas.ts';
import { trackingResource } from './tracking-resource.ts';

/**
 * /v2/deleted_activities (docs/tracking-sync.md): the tombstones of the caller's deleted
 * activities, so a sync client learns what went since its last sync. Read only.
 */

const deletedActivitySchema = z
  .object({
    id: z.string().meta({ description: "the deleted activity's id (never reused)" }),
    deletedAt: z.string().meta({ format: 'date-time' }),
  })
  .meta({ id: 'DeletedActivity' });

/** Each member's `@id` is the IRI the activity had, so a client matches it with what it holds. */
const deletedActivityView: HydraView<ActivityTombstone, typeof deletedActivitySchema> = {
  type: 'DeletedActivity',
  path: '/v2/deleted_activities',
  id: (t) => t.activity_id,
  iri: (t) => iri('activities', t.activity_id),
  fields: (t) => ({ id: t.activity_id, deletedAt: formatDateTime(t.deleted_at) }),
};

const listQuery = z.object({
  ...dateFilterShape('deletedAt'),
  ...orderShape(TOMBSTONE_ORDERS),
  ...pagingShape,
});

/** No item route: a tombstone is named by its activity's IRI, which answers 404 once it is gone. */
const noItem = z.object({ id: z.string() });

const days = (seconds: number) => (seconds % 86_400 === 0 ? `${seconds / 86_400} days` : `${seconds} seconds`);

/** /v2/deleted_activities: the caller's own tombstones, oldest first. */
export function deletedActivitiesResource(router: ApiRouter, app: AppContext): void {
  const kept = days(app.config.TRACKING_TOMBSTONE_TTL_S);
  trackingResource(router, app, {
    path: '/deleted_activities',
    itemParams: noItem,
    item: deletedActivitySchema,
    hydra: deletedActivityView,
  }).list({
    summary: "The caller's deleted activities (tombstones), for syncing",
    description: `One member per activity of the caller deleted in the last ${kept} (TRACKING_TOMBSTONE_TTL_S), then purged: a client whose last sync is older reads everything again. \`@id\` is the deleted activity's IRI; ids are never reused, so a tombstone means the activity is gone for good. \`deletedAt[after|before|strictly_after|strictly_before]\` bound the deletion time; \`order[deletedAt]=asc|desc\` (default: oldest first; ties by id). Paging: \`page\`, \`limit\` (default 30, at most 100). Syncing recipe: docs/tracking-sync.md.`,
    query: listQuery,
    handler: async ({ query, ctx, caller: user, principal }) => {
      const found = await app.reads.read(principal.accountId, ({ db }) =>
        listTombstones(
          db,
          user.id,
          { deletedAt: dateFilterOf(query, 'deletedAt'), order: orderOf(query, ctx.querystring, TOMBSTONE_ORDERS) },
          query,
        ),
      );
      return { ...found, page: query.page, limit: query.limit };
    },
  });
}
