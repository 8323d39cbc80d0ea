import { randomUUID } from 'node:crypto';
import type { Context } from 'koa';
import { z } from 'zod';
import { type Viewer, visibleTo } from '../../shared/places/activities.ts';
import { nearestCity } from '../../shared/places/cities.ts';
import { type FieldError, parseGeometry } from '../../shared/places/geojson.ts';
import {
  findPlace,
  isCountryCode,
  type PlaceRow,
  pendingPlaces,
  placeJson,
  placesJson,
  uniqueSlug,
} from '../../shared/places/places.ts';
import { type ActivityInput, checkActivity, sportRules } from '../../shared/places/rules.ts';
import {
  addActivities,
  createPlace,
  deletePlace,
  type NotesInput,
  setPlaceStatus,
  updatePlace,
} from '../../shared/places/writes.ts';
import type { AppContext } from '../context.ts';
import { hasRole, requireBearer } from '../http/auth.ts';
import { conflict, forbidden, notFound, unprocessable } from '../http/errors.ts';
import type { ApiRouter } from '../http/route.ts';
import { callerOf, DELETED, optionalBearer, readLocaleOf, requireStaff, viewerOf, writeLocaleOf } from './common.ts';
import { activityBody, messageSchema, placeSchema, problem } from './schemas.ts';

const idParams = z.object({ place_id: z.string().min(1).max(200) });
const text = (max: number) => z.string().trim().max(max);

const postBody = z.strictObject({
  external_place_id: text(200).min(1).optional(),
  geometry: z.unknown().optional(),
  name: text(200).min(1).optional(),
  country: z.string().optional(),
  activities: z.array(activityBody).min(1, 'at least one activity is required').max(50),
  notes: text(5000).optional(),
  address: text(500).nullable().optional(),
  city: text(200).nullable().optional(),
  province: text(200).nullable().optional(),
  email: z.email().nullable().optional(),
  phone: text(50).nullable().optional(),
  website: z.url().nullable().optional(),
  booking_url: z.url().nullable().optional(),
  social_username: text(200).nullable().optional(),
});

const putBody = z.strictObject({
  name: text(200).min(1).optional(),
  email: z.email().nullable().optional(),
  phone: text(50).nullable().optional(),
  website: z.url().nullable().optional(),
  booking_url: z.url().nullable().optional(),
  social_username: text(200).nullable().optional(),
  address: text(500).nullable().optional(),
  city: text(200).nullable().optional(),
  province: text(200).nullable().optional(),
  country: z.string().optional(),
  notes: text(5000).optional(),
  featured: z.boolean().optional(),
  partner: z
    .string()
    .regex(/^[a-z0-9][a-z0-9_-]{0,99}$/i, 'partner must be a partner slug')
    .nullable()
    .optional(),
});

/** Validates every activity of a body against its sport's allowed tags and filters. */
async function checkActivities(app: AppContext, bodies: Record<string, unknown>[]): Promise<ActivityInput[]> {
  const rules = await sportRules(
    app.db,
    bodies.map((b) => Number(b.sport_id)).filter((n) => Number.isSafeInteger(n)),
  );
  const errors: FieldError[] = [];
  const inputs: ActivityInput[] = [];
  const seen = new Set<number>();
  bodies.forEach((b, i) => {
    const r = checkActivity(b, `body.activities[${i}]`, rules, { update: false });
    errors.push(...r.errors);
    if (r.input) {
      if (seen.has(r.input.sport_id))
        errors.push({
          path: `body.activities[${i}].sport_id`,
          message: `sport ${r.input.sport_id} is listed twice: one activity per sport`,
        });
      seen.add(r.input.sport_id);
      inputs.push(r.input);
    }
  });
  if (errors.length) throw unprocessable(errors);
  return inputs;
}

/** Loads a place the caller may see (404 otherwise, no existence leak). */
export async function visiblePlace(app: AppContext, ctx: Context, id: string): Promise<PlaceRow> {
  const row = await findPlace(app.db, id, viewerOf(ctx));
  if (!row) throw notFound('Place not found');
  return row;
}

async function respondPlace(app: AppContext, ctx: Context, uuid: string, options: { userAsList?: boolean } = {}) {
  const row = await findPlace(app.db, uuid, viewerOf(ctx));
  if (!row) throw notFound('Place not found');
  return placeJson(app.db, row, app.config, readLocaleOf(ctx), options);
}

export function addPlaceRoutes(router: ApiRouter, app: AppContext): void {
  const auth = requireBearer(app.verifier);
  const optional = optionalBearer(app.verifier);

  router.add({
    method: 'get',
    path: '/places/pending',
    summary: "The caller's places awaiting moderation",
    description:
      "Places the token's user added that staff have not approved or rejected yet, newest first. Staff may pass `all=true` to list every pending place (the moderation queue).",
    security: ['bearer'],
    middleware: [auth],
    query: z.object({ all: z.enum(['true', 'false']).optional() }),
    responses: {
      200: { description: 'Pending places', schema: z.array(placeSchema) },
      401: problem('Missing or invalid token'),
    },
    handler: async (ctx, { query }) => {
      const caller = callerOf(ctx);
      const rows = await pendingPlaces(app.db, query.all === 'true' && caller.staff ? undefined : caller.accountId);
      return placesJson(app.db, rows, app.config, readLocaleOf(ctx));
    },
  });

  router.add({
    method: 'get',
    path: '/places/:place_id',
    summary: 'One place by uuid or slug',
    description:
      'Approved places are public. A pending or rejected place is shown only to its creator and to staff (send the token); others get 404. `notes` is in the Accept-Language locale, else en.',
    params: idParams,
    middleware: [optional],
    responses: {
      200: { description: 'The place', schema: placeSchema },
      404: problem('No such place (or not visible)'),
    },
    handler: async (ctx, { params }) => {
      const row = await visiblePlace(app, ctx, params.place_id);
      return placeJson(app.db, row, app.config, readLocaleOf(ctx));
    },
  });

  router.add({
    method: 'post',
    path: '/places',
    summary: 'Add a place (variant A: external_place_id; variant B: geometry, name, country)',
    description: [
      'Variant B creates a place from an RFC 7946 Point, LineString or Polygon ([lng, lat] order), a name and a 2-letter ISO country; city and province default to the nearest city of the offline dataset.',
      'Variant A (only external_place_id): no external provider is configured, so it adds the activities to the place already stored with that external_place_id (200), and answers 422 when there is none.',
      "Places added by users are pending until staff approve them; staff's places are approved at once. `notes` is stored in the Accept-Language locale (unsupported locale: 422).",
    ].join('\n\n'),
    security: ['bearer'],
    middleware: [auth],
    body: postBody,
    responses: {
      201: { description: 'Created place', schema: placeSchema },
      200: { description: 'Variant A: the existing place with the added activities', schema: placeSchema },
      401: problem('Missing or invalid token'),
      409: problem('external_place_id already used by another place'),
      422: problem('Invalid body (each problem with its path)'),
    },
    handler: async (ctx, { body }) => {
      const caller = callerOf(ctx);
      const locale = body.notes !== undefined ? writeLocaleOf(ctx) : undefined;
      if (body.geometry === undefined) return postVariantA(app, ctx, caller, body, locale);
      const errors: FieldError[] = [];
      const geo = parseGeometry(body.geometry, 'body.geometry');
      errors.push(...geo.errors);
      if (body.name === undefined) errors.push({ path: 'body.name', message: 'name is required with geometry' });
      if (body.country === undefined)
        errors.push({ path: 'body.country', message: 'country is required (2-letter ISO code)' });
      else if (!isCountryCode(body.country))
        errors.push({
          path: 'body.country',
          message: `"${body.country}" is not a 2-letter ISO 3166-1 country code (e.g. FR)`,
        });
      if (errors.length) throw unprocessable(errors);
      const activities = await checkActivities(app, body.activities);
      if (body.external_place_id) {
        const taken = await app.db
          .selectFrom('places')
          .select('uuid')
          .where('external_place_id', '=', body.external_place_id)
          .executeTakeFirst();
        if (taken)
          throw conflict('external_place_id is already used', [
            { path: 'body.external_place_id', message: `already used by place ${taken.uuid}` },
          ]);
      }
      const geometry = geo.geometry as NonNullable<typeof geo.geometry>;
      const country = body.country as string;
      let city = body.city ?? null;
      let province = body.province ?? null;
      if (!city || !province) {
        const near = await nearestCity(app.db, JSON.stringify(geometry), country);
        if (near && near.country === country) {
          city ??= near.name;
          province ??= near.admin_code;
        }
      }
      const uuid = randomUUID();
      const slug = await uniqueSlug(app.db, body.name as string, uuid);
      await createPlace(
        app.db,
        {
          uuid,
          slug,
          name: body.name as string,
          geometry,
          country,
          address: body.address ?? null,
          city,
          province,
          email: body.email ?? null,
          phone: body.phone ?? null,
          website: body.website ?? null,
          booking_url: body.booking_url ?? null,
          social_username: body.social_username ?? null,
          external_place_id: body.external_place_id ?? null,
          created_by: caller.accountId,
          approved: caller.staff,
        },
        activities,
        notesOf(locale, body.notes),
      );
      ctx.status = 201;
      ctx.set('Location', `${app.config.PUBLIC_URL}/api/v1/places/${uuid}`);
      return respondPlace(app, ctx, uuid);
    },
  });

  // PUT is the listed method; some descriptions of the spec show POST on this path: same route.
  for (const method of ['put', 'post'] as const)
    router.add({
      method,
      path: '/places/:place_id',
      summary:
        method === 'put' ? 'Update a place (contact, address, name, notes, featured)' : 'Update a place (alias of PUT)',
      description: [
        'The creator and staff may change every field. `featured` and `partner` may only be changed by partner accounts (403 for anyone else, the creator included); partners may change only those two on places they did not create.',
        'Other users get 403 on a place they can see, 404 on a pending place of someone else. `notes` is written in the Accept-Language locale (unsupported: 422). The slug never changes, so links keep working.',
      ].join('\n\n'),
      security: ['bearer'],
      middleware: [auth],
      params: idParams,
      body: putBody,
      responses: {
        200: { description: 'The updated place (`user` is a list with `user_id`)', schema: placeSchema },
        401: problem('Missing or invalid token'),
        403: problem('Not allowed to change this place or field'),
        404: problem('No such place (or not visible)'),
        422: problem('Invalid body'),
      },
      handler: async (ctx, { params, body }) => {
        const caller = callerOf(ctx);
        const row = await visiblePlace(app, ctx, params.place_id);
        const keys = Object.keys(body);
        if (!keys.length) throw unprocessable([{ path: 'body', message: 'send at least one updatable field' }]);
        const partner = hasRole(ctx.state.principal, 'partner');
        const owner = caller.staff || row.created_by === caller.accountId;
        const partnerFields = ['featured', 'partner'];
        if (keys.some((k) => partnerFields.includes(k)) && !partner)
          throw forbidden('Only partner accounts may change featured or partner');
        if (keys.some((k) => !partnerFields.includes(k)) && !owner)
          throw forbidden('Only the creator of the place or staff may change these fields');
        if (body.country !== undefined && !isCountryCode(body.country))
          throw unprocessable([
            { path: 'body.country', message: `"${body.country}" is not a 2-letter ISO 3166-1 country code` },
          ]);
        const locale = body.notes !== undefined ? writeLocaleOf(ctx) : undefined;
        const { notes, ...fields } = body;
        await updatePlace(app.db, row.id, fields, notesOf(locale, notes));
        return respondPlace(app, ctx, row.uuid, { userAsList: true });
      },
    });

  router.add({
    method: 'delete',
    path: '/places/:place_id',
    summary: 'Delete a place (its creator only)',
    description:
      'Only the creator may delete a place. Another caller gets 403 when the place is visible to them (approved, or any place for staff) and 404 otherwise (a pending place of someone else is not disclosed).',
    security: ['bearer'],
    middleware: [auth],
    params: idParams,
    responses: {
      200: { description: 'Deleted', schema: messageSchema },
      401: problem('Missing or invalid token'),
      403: problem('Not the creator'),
      404: problem('No such place (or not visible)'),
    },
    handler: async (ctx, { params }) => {
      const caller = callerOf(ctx);
      const row = await visiblePlace(app, ctx, params.place_id);
      if (row.created_by !== caller.accountId) throw forbidden('Only the creator of a place may delete it');
      await deletePlace(app.db, row.id);
      return DELETED;
    },
  });

  for (const [action, status] of [
    ['approve', 'approved'],
    ['reject', 'rejected'],
  ] as const) {
    router.add({
      method: 'post',
      path: `/places/:place_id/${action}`,
      summary: `Moderation: ${action} a place (staff only)`,
      description: `Sets the place status to ${status}. ${action === 'approve' ? 'Approved places appear in search.' : 'Rejected places stay out of search; their creator still sees them.'} Any status may be changed again.`,
      security: ['bearer'],
      middleware: [auth],
      params: idParams,
      responses: {
        200: { description: `The ${status} place`, schema: placeSchema },
        401: problem('Missing or invalid token'),
        403: problem('Not a staff account'),
        404: problem('No such place'),
      },
      handler: async (ctx, { params }) => {
        requireStaff(ctx);
        const row = await visiblePlace(app, ctx, params.place_id);
        await setPlaceStatus(app.db, row.id, status);
        return respondPlace(app, ctx, row.uuid);
      },
    });
  }
}

/** Notes to write when the body has some (in the request's write locale). */
function notesOf(locale: NotesInput['locale'] | undefined, text: string | undefined): NotesInput | undefined {
  return locale && text !== undefined ? { locale, text } : undefined;
}

/** Variant A: adds the activities to the place already known by this external id. */
async function postVariantA(
  app: AppContext,
  ctx: Context,
  caller: Viewer,
  body: z.output<typeof postBody>,
  locale: ReturnType<typeof writeLocaleOf> | undefined,
) {
  if (!body.external_place_id)
    throw unprocessable([
      {
        path: 'body.geometry',
        message: 'send geometry, name and country (variant B), or external_place_id (variant A)',
      },
    ]);
  const row = await app.db
    .selectFrom('places as p')
    .select(['p.id', 'p.uuid'])
    .where('p.external_place_id', '=', body.external_place_id)
    .where(visibleTo(caller))
    .executeTakeFirst();
  if (!row)
    throw unprocessable([
      {
        path: 'body.external_place_id',
        message:
          'no place has this external_place_id, and no external place provider is configured to look it up: send geometry, name and country (variant B)',
      },
    ]);
  const activities = await checkActivities(app, body.activities);
  await addActivities(app.db, row.id, activities, caller.accountId, notesOf(locale, body.notes));
  ctx.status = 200;
  return respondPlace(app, ctx, row.uuid);
}
