import type { Context } from 'koa';
import { z } from 'zod';
import { type ActivityRow, activityJson, findActivity, flatActivityJson } from '../../shared/places/activities.ts';
import type { FieldError } from '../../shared/places/geojson.ts';
import { placeActivities } from '../../shared/places/places.ts';
import { type ActivityInput, checkActivity, parseSportId, sportRules } from '../../shared/places/rules.ts';
import {
  deleteActivity,
  insertActivity,
  setActivityTags,
  updateActivity,
  upsertActivities,
} from '../../shared/places/writes.ts';
import type { AppContext } from '../context.ts';
import { requireBearer } from '../http/auth.ts';
import { conflict, forbidden, notFound, unprocessable } from '../http/errors.ts';
import type { ApiRouter } from '../http/route.ts';
import { callerOf, DELETED, optionalBearer, viewerOf } from './common.ts';
import { visiblePlace } from './places.ts';
import { activityBody, activitySchema, messageSchema, problem } from './schemas.ts';

const placeParams = z.object({ place_id: z.string().min(1).max(200) });
const activityParams = z.object({ place_id: z.string().min(1).max(200), sport_id: z.coerce.number().int().positive() });
const tagParams = activityParams.extend({ slug: z.string().min(1).max(100) });

export function addActivityRoutes(router: ApiRouter, app: AppContext): void {
  const auth = requireBearer(app.verifier);
  const optional = optionalBearer(app.verifier);

  const activityOr404 = async (ctx: Context, placeId: string, sportId: number): Promise<ActivityRow> => {
    const place = await visiblePlace(app, ctx, placeId);
    const row = await findActivity(app.db, place.uuid, sportId, viewerOf(ctx));
    if (!row) throw notFound(`This place has no activity of sport ${sportId}`);
    return row;
  };
  const checkOne = async (body: Record<string, unknown>, path: string, mode: { update: boolean; sportId?: number }) => {
    const ids = mode.sportId !== undefined ? [mode.sportId] : [parseSportId(body.sport_id) ?? 0];
    const r = checkActivity(body, path, await sportRules(app.db, ids), mode);
    if (!r.input) throw unprocessable(r.errors);
    return r.input;
  };

  router.add({
    method: 'get',
    path: '/places/:place_id/activities',
    summary: "A place's activities (filter values flat beside sport_id and tags)",
    params: placeParams,
    middleware: [optional],
    responses: {
      200: { description: 'Activities', schema: z.array(z.record(z.string(), z.unknown())) },
      404: problem('No such place'),
    },
    handler: async (ctx, { params }) => {
      const place = await visiblePlace(app, ctx, params.place_id);
      return (await placeActivities(app.db, [place.id])).map((a) => flatActivityJson(a, app.config));
    },
  });

  router.add({
    method: 'post',
    path: '/places/:place_id/activities',
    summary: 'Add one activity to a place',
    description:
      'Any signed-in user may add an activity to a place they can see (crowdsourcing). Tags and filter values must be allowed for the sport (422 with the path of each problem); a second activity of the same sport is a 409 (update it with PUT).',
    security: ['bearer'],
    middleware: [auth],
    params: placeParams,
    body: activityBody,
    responses: {
      201: { description: 'The created activity', schema: activitySchema },
      401: problem('Missing or invalid token'),
      404: problem('No such place'),
      409: problem('The place already has an activity of this sport'),
      422: problem('Invalid activity'),
    },
    handler: async (ctx, { params, body }) => {
      const caller = callerOf(ctx);
      const place = await visiblePlace(app, ctx, params.place_id);
      const input = await checkOne(body, 'body', { update: false });
      if (!(await insertActivity(app.db, place.id, input, caller.accountId)))
        throw conflict(`This place already has an activity of sport ${input.sport_id}`, [
          { path: 'body.sport_id', message: 'one activity per sport: update it with PUT' },
        ]);
      ctx.status = 201;
      return activityJson((await findActivity(app.db, place.uuid, input.sport_id, caller)) as ActivityRow, app.config);
    },
  });

  router.add({
    method: 'put',
    path: '/places/:place_id/activities',
    summary: 'Update several activities; missing ones are created',
    description:
      'Body `{activities: [...]}`; each element names its sport_id. Existing activities are updated (tags replaced, filter values merged, null removes one); the others are created. All-or-nothing: any invalid element is a 422 and nothing changes. Returns every activity of the place.',
    security: ['bearer'],
    middleware: [auth],
    params: placeParams,
    body: z.strictObject({ activities: z.array(activityBody).min(1).max(50) }),
    responses: {
      200: { description: 'Every activity of the place', schema: z.array(activitySchema) },
      401: problem('Missing or invalid token'),
      404: problem('No such place'),
      422: problem('Invalid activities'),
    },
    handler: async (ctx, { params, body }) => {
      const caller = callerOf(ctx);
      const place = await visiblePlace(app, ctx, params.place_id);
      const existing = new Map((await placeActivities(app.db, [place.id])).map((a) => [a.sport_id, a]));
      const rules = await sportRules(
        app.db,
        body.activities.map((b) => parseSportId(b.sport_id) ?? 0),
      );
      const errors: FieldError[] = [];
      const inputs: ActivityInput[] = [];
      const seen = new Set<number>();
      body.activities.forEach((b, i) => {
        const sportId = parseSportId(b.sport_id);
        const path = `body.activities[${i}]`;
        const r = checkActivity(
          b,
          path,
          rules,
          sportId !== undefined && existing.has(sportId) ? { update: true, sportId } : { update: false },
        );
        errors.push(...r.errors);
        if (r.input) {
          if (seen.has(r.input.sport_id)) errors.push({ path: `${path}.sport_id`, message: 'sport listed twice' });
          seen.add(r.input.sport_id);
          inputs.push(r.input);
        }
      });
      if (errors.length) throw unprocessable(errors);
      await upsertActivities(app.db, place.id, inputs, existing, caller.accountId);
      return (await placeActivities(app.db, [place.id])).map((a) => activityJson(a, app.config));
    },
  });

  // PUT is the listed method; the spec's examples also show POST on this path: same route.
  for (const method of ['put', 'post'] as const)
    router.add({
      method,
      path: '/places/:place_id/activities/:sport_id',
      summary: method === 'put' ? 'Update one activity' : 'Update one activity (alias of PUT)',
      description:
        'Accepts tags (replaced), photo_reference and filter values (merged; null removes one). sport_id and user are immutable: sending a different sport_id or any user is a 422. 404 when the place has no activity of this sport.',
      security: ['bearer'],
      middleware: [auth],
      params: activityParams,
      body: activityBody,
      responses: {
        200: { description: 'The updated activity', schema: activitySchema },
        401: problem('Missing or invalid token'),
        404: problem('No such place or activity'),
        422: problem('Invalid update'),
      },
      handler: async (ctx, { params, body }) => {
        const row = await activityOr404(ctx, params.place_id, params.sport_id);
        const input = await checkOne(body, 'body', { update: true, sportId: params.sport_id });
        await updateActivity(app.db, row.id, row.attributes, input);
        return activityJson(
          (await findActivity(app.db, row.place_uuid, row.sport_id, viewerOf(ctx))) as ActivityRow,
          app.config,
        );
      },
    });

  router.add({
    method: 'delete',
    path: '/places/:place_id/activities/:sport_id',
    summary: 'Delete one activity',
    description: 'Allowed to the creator of the activity, the creator of the place and staff; others get 403.',
    security: ['bearer'],
    middleware: [auth],
    params: activityParams,
    responses: {
      200: { description: 'Deleted', schema: messageSchema },
      401: problem('Missing or invalid token'),
      403: problem('Not allowed'),
      404: problem('No such place or activity'),
    },
    handler: async (ctx, { params }) => {
      const caller = callerOf(ctx);
      const row = await activityOr404(ctx, params.place_id, params.sport_id);
      if (!caller.staff && row.created_by !== caller.accountId && row.place_created_by !== caller.accountId)
        throw forbidden('Only the creator of the activity or of the place, or staff, may delete it');
      await deleteActivity(app.db, row.id);
      return DELETED;
    },
  });

  // Tags of one activity.
  router.add({
    method: 'get',
    path: '/places/:place_id/activities/:sport_id/tags',
    summary: "An activity's tags",
    params: activityParams,
    middleware: [optional],
    responses: {
      200: { description: 'Tag slugs', schema: z.array(z.string()) },
      404: problem('No such place or activity'),
    },
    handler: async (ctx, { params }) => (await activityOr404(ctx, params.place_id, params.sport_id)).tags,
  });

  const addTag = async (ctx: Context, placeId: string, sportId: number, slug: string, path: string) => {
    const row = await activityOr404(ctx, placeId, sportId);
    const rules = (await sportRules(app.db, [sportId])).get(sportId);
    if (!rules?.tags.has(slug))
      throw unprocessable([
        {
          path,
          message: `tag "${slug}" is not allowed for sport ${sportId} (allowed: ${[...(rules?.tags ?? [])].sort().join(', ') || 'none'})`,
        },
      ]);
    const tags = [...new Set([...row.tags, slug])].sort();
    await setActivityTags(app.db, row.id, tags);
    return tags;
  };

  router.add({
    method: 'post',
    path: '/places/:place_id/activities/:sport_id/tags',
    summary: 'Add a tag to an activity',
    description:
      'Body `{slug}`; the tag must be allowed for the sport (422). Adding a tag already there changes nothing.',
    security: ['bearer'],
    middleware: [auth],
    params: activityParams,
    body: z.strictObject({ slug: z.string().min(1).max(100) }),
    responses: {
      200: { description: 'Every tag now on the activity', schema: z.array(z.string()) },
      401: problem('Missing or invalid token'),
      404: problem('No such place or activity'),
      422: problem('Tag not allowed for the sport'),
    },
    handler: (ctx, { params, body }) => addTag(ctx, params.place_id, params.sport_id, body.slug, 'body.slug'),
  });

  router.add({
    method: 'delete',
    path: '/places/:place_id/activities/:sport_id/tags/:slug',
    summary: 'Remove a tag from an activity',
    security: ['bearer'],
    middleware: [auth],
    params: tagParams,
    responses: {
      200: { description: 'Deleted', schema: messageSchema },
      401: problem('Missing or invalid token'),
      404: problem('No such place, activity, or tag on it'),
    },
    handler: async (ctx, { params }) => {
      const row = await activityOr404(ctx, params.place_id, params.sport_id);
      if (!row.tags.includes(params.slug)) throw notFound(`The activity has no tag "${params.slug}"`);
      await setActivityTags(
        app.db,
        row.id,
        row.tags.filter((t) => t !== params.slug),
      );
      return DELETED;
    },
  });

  // The short form `/places/{place_uuid}/tags` of the spec.
  router.add({
    method: 'get',
    path: '/places/:place_id/tags',
    summary: 'Tags of all activities of a place (short form)',
    params: placeParams,
    middleware: [optional],
    responses: { 200: { description: 'Tag slugs', schema: z.array(z.string()) }, 404: problem('No such place') },
    handler: async (ctx, { params }) => {
      const place = await visiblePlace(app, ctx, params.place_id);
      return [...new Set((await placeActivities(app.db, [place.id])).flatMap((a) => a.tags))].sort();
    },
  });
  router.add({
    method: 'post',
    path: '/places/:place_id/tags',
    summary: 'Add a tag to one activity of a place (short form; body names sport_id)',
    security: ['bearer'],
    middleware: [auth],
    params: placeParams,
    body: z.strictObject({ slug: z.string().min(1).max(100), sport_id: z.union([z.number().int(), z.string()]) }),
    responses: {
      200: { description: 'Every tag now on the activity', schema: z.array(z.string()) },
      401: problem('Missing or invalid token'),
      404: problem('No such place or activity'),
      422: problem('Tag not allowed for the sport'),
    },
    handler: async (ctx, { params, body }) => {
      const sportId = parseSportId(body.sport_id);
      if (sportId === undefined)
        throw unprocessable([{ path: 'body.sport_id', message: 'sport_id must be a sport id' }]);
      return addTag(ctx, params.place_id, sportId, body.slug, 'body.slug');
    },
  });
}
