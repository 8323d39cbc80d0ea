import { z } from 'zod';
import {
  addActivityAs,
  addActivityTag,
  deleteActivityAs,
  listActivities,
  placeTags,
  removeActivityTag,
  updateActivityAs,
  upsertActivitiesAs,
  visibleActivity,
} from '../../shared/places/activity-service.ts';
import type { AppContext } from '../context.ts';
import type { ApiRouter } from '../http/route.ts';
import { DELETED } from './common.ts';
import { activityBody, activitySchema, messageSchema } from './schemas.ts';
import { placesServiceResource } from './service-resource.ts';

const placeParams = z.object({ place_id: z.string().min(1).max(200) });
const activityParams = placeParams.extend({ sport_id: z.coerce.number().int().positive() });
const tagSlug = z.string().min(1).max(100);
const tags = z.array(z.string());

/** The activities of a place: one per sport, crowdsourced (any signed-in user may add one). */
export function activitiesResource(router: ApiRouter, app: AppContext) {
  const { db, config } = app;
  return placesServiceResource(router, app, {
    path: '/places/:place_id/activities',
    params: placeParams,
    itemPath: '/:sport_id',
    itemParams: activityParams,
    item: activitySchema,
    notFound: 'No such place or activity',
  })
    .list({
      summary: "A place's activities (filter values flat beside sport_id and tags)",
      item: z.record(z.string(), z.unknown()),
      handler: ({ params, caller }) => listActivities(db, config, params.place_id, caller),
    })
    .create({
      summary: 'Add one activity to a place',
      description:
        'Any signed-in user may add an activity to a place they can see (crowdsourcing). Tags and filter values must be allowed for the sport (422 with the path of each problem); a second activity of the same sport is a 409 (update it with PUT).',
      body: activityBody,
      errors: { 409: 'The place already has an activity of this sport' },
      handler: ({ params, body, caller }) => addActivityAs(db, config, caller, params.place_id, body),
    })
    .action({
      method: 'put',
      on: 'collection',
      path: '',
      summary: 'Update several activities; missing ones are created',
      description:
        'Body `{activities: [...]}`; each element names its sport_id. Existing activities are updated (tags replaced, filter values merged, null removes one); the others are created. All-or-nothing: any invalid element is a 422 and nothing changes. Returns every activity of the place.',
      body: z.strictObject({ activities: z.array(activityBody).min(1).max(50) }),
      response: z.array(activitySchema),
      handler: ({ params, body, caller }) => upsertActivitiesAs(db, config, caller, params.place_id, body.activities),
    })
    .update({
      // PUT is the listed method; the spec's examples also show POST on this path: same route.
      methods: ['put', 'post'],
      summary: 'Update one activity',
      description:
        'Accepts tags (replaced), photo_reference and filter values (merged; null removes one). sport_id and user are immutable: sending a different sport_id or any user is a 422. 404 when the place has no activity of this sport.',
      body: activityBody,
      handler: ({ params, body, caller }) =>
        updateActivityAs(db, config, caller, params.place_id, params.sport_id, body),
    })
    .remove({
      summary: 'Delete one activity',
      description: 'Allowed to the creator of the activity, the creator of the place and staff; others get 403.',
      errors: { 403: 'Not allowed' },
      response: { schema: messageSchema, body: DELETED },
      handler: ({ params, caller }) => deleteActivityAs(db, caller, params.place_id, params.sport_id),
    })
    .action({
      method: 'get',
      path: '/tags',
      summary: "An activity's tags",
      response: tags,
      handler: async ({ params, caller }) => (await visibleActivity(db, params.place_id, params.sport_id, caller)).tags,
    })
    .action({
      method: 'post',
      path: '/tags',
      summary: 'Add a tag to an activity',
      description:
        'Body `{slug}`; the tag must be allowed for the sport (422). Adding a tag already there changes nothing. Answers every tag now on the activity.',
      body: z.strictObject({ slug: tagSlug }),
      response: tags,
      handler: ({ params, body, caller }) => addActivityTag(db, caller, params.place_id, params.sport_id, body.slug),
    })
    .action({
      method: 'delete',
      path: '/tags/:slug',
      params: activityParams.extend({ slug: tagSlug }),
      summary: 'Remove a tag from an activity',
      response: messageSchema,
      handler: async ({ params, caller }) => {
        await removeActivityTag(db, caller, params.place_id, params.sport_id, params.slug);
        return DELETED;
      },
    });
}

/** The spec's short form `/places/{place_uuid}/tags`: tags of all activities of a place. */
export function placeTagsResource(router: ApiRouter, app: AppContext) {
  const { db } = app;
  return placesServiceResource(router, app, {
    path: '/places/:place_id/tags',
    params: placeParams,
    itemPath: '/:slug',
    itemParams: placeParams.extend({ slug: tagSlug }),
    item: z.string(),
    notFound: 'No such place or activity',
  })
    .list({
      summary: 'Tags of all activities of a place (short form)',
      handler: ({ params, caller }) => placeTags(db, params.place_id, caller),
    })
    .action({
      method: 'post',
      on: 'collection',
      path: '',
      summary: 'Add a tag to one activity of a place (short form; body names sport_id)',
      body: z.strictObject({ slug: tagSlug, sport_id: z.union([z.number().int(), z.string()]) }),
      response: tags,
      handler: ({ params, body, caller }) => addActivityTag(db, caller, params.place_id, body.sport_id, body.slug),
    });
}
