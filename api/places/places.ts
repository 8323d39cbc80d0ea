import { z } from 'zod';
import { linkSchema } from '../../shared/places/links.ts';
import {
  createPlaceAs,
  deletePlaceAs,
  moderatePlace,
  pendingFeatures,
  placeFeature,
  updatePlaceAs,
} from '../../shared/places/place-service.ts';
import type { AppContext } from '../context.ts';
import { acceptLanguageHeader } from '../http/locale-header.ts';
import type { ApiRouter } from '../http/route.ts';
import { acceptLanguage, DELETED, readLocaleOf } from './common.ts';
import { activityBody, messageSchema, placeSchema } from './schemas.ts';
import { searchOperation } from './search.ts';
import { placesServiceResource } from './service-resource.ts';

const idParams = z.object({ place_id: z.string().min(1).max(200) });
const text = (max: number) => z.string().trim().max(max);
const contact = {
  email: z.email().nullable().optional(),
  phone: text(50).nullable().optional(),
  website: linkSchema().nullable().optional(),
  booking_url: linkSchema().nullable().optional(),
  social_username: text(200).nullable().optional(),
  address: text(500).nullable().optional(),
  city: text(200).nullable().optional(),
  province: text(200).nullable().optional(),
  country: z.string().optional(),
  notes: text(5000).optional(),
};

const postBody = z.strictObject({
  ...contact,
  external_place_id: text(200).min(1).optional(),
  geometry: z.unknown().optional(),
  name: text(200).min(1).optional(),
  activities: z.array(activityBody).min(1, 'at least one activity is required').max(50),
});

const approveQuery = z.object({
  revision: z
    .string()
    .regex(/^\d{1,20}$/, 'revision is the `revision` of a pending edit')
    .optional()
    .meta({ description: 'the newest pending_edits[].revision reviewed (required when the place has pending edits)' }),
});

const putBody = z.strictObject({
  ...contact,
  name: text(200).min(1).optional(),
  featured: z.boolean().optional(),
  partner: z
    .string()
    .regex(/^[a-z0-9][a-z0-9_-]{0,99}$/i, 'partner must be a partner slug')
    .nullable()
    .optional(),
});

/** Places: GeoJSON Features; reads are public (a token shows its owner's pending places), writes need one. */
export function placesResource(router: ApiRouter, app: AppContext) {
  const { db, config } = app;
  const places = placesServiceResource(router, app, {
    path: '/places',
    itemPath: '/:place_id',
    itemParams: idParams,
    format: 'geojson',
    item: placeSchema,
    notFound: 'No such place (or not visible)',
  })
    .list(searchOperation(app))
    .action({
      method: 'get',
      on: 'collection',
      path: '/pending',
      access: 'bearer',
      summary: "What of the caller's awaits moderation",
      headers: acceptLanguageHeader,
      description:
        "Places the token's user added that staff have not approved or rejected yet, and approved places carrying the user's pending edit (in `pending_edits`), most recently submitted first. Staff may pass `all=true` to list everyone's (the moderation queue).",
      query: z.object({ all: z.enum(['true', 'false']).optional() }),
      response: z.array(placeSchema),
      handler: ({ query, ctx, caller }) => pendingFeatures(db, config, caller, query.all === 'true', readLocaleOf(ctx)),
    })
    .get({
      summary: 'One place by uuid or slug',
      headers: acceptLanguageHeader,
      description:
        "Approved places are public. A pending or rejected place is shown only to its creator and to staff (send the token); others get 404. `notes` is in the Accept-Language locale, else en. `pending_edits` lists the changes waiting for staff: the caller's own, every one for staff, none for others.",
      handler: ({ params, ctx, caller }) => placeFeature(db, config, params.place_id, caller, readLocaleOf(ctx)),
    })
    .create({
      summary: 'Add a place (variant A: external_place_id; variant B: geometry, name, country)',
      headers: acceptLanguageHeader,
      description: [
        'Variant B creates a place from an RFC 7946 Point, LineString or Polygon ([lng, lat] order), a name and a 2-letter ISO country; city and province default to the nearest city of the offline dataset.',
        "Variant A (only external_place_id): no external provider is configured, so it adds the activities to the place already stored with that external_place_id (200): the approved one, else the caller's own pending one; 422 when there is none. Notes sent this way on an approved place wait for staff as a pending edit.",
        "Places added by users are pending until staff approve them; staff's places are approved at once. `notes` is stored in the Accept-Language locale (unsupported locale: 422). `website` and `booking_url` are absolute http(s) URLs.",
        "external_place_id is unique among approved places and among the caller's pending ones: 409 naming that place. Pending places of other users are neither reported nor in the way.",
      ].join('\n\n'),
      body: postBody,
      errors: { 409: 'external_place_id already used by an approved place or a pending place of the caller' },
      responses: {
        200: { description: 'Variant A: the existing place with the added activities', schema: placeSchema },
      },
      handler: async ({ body, ctx, caller }) => {
        const { uuid, created } = await createPlaceAs(db, caller, body, acceptLanguage(ctx));
        if (!created) ctx.status = 200;
        return placeFeature(db, config, uuid, caller, readLocaleOf(ctx));
      },
      location: (place) => `/api/v1/places/${place.properties.uuid}`,
    })
    .update({
      // PUT is the listed method; some descriptions of the spec show POST on this path: same route.
      methods: ['put', 'post'],
      summary: 'Update a place (contact, address, name, notes, featured)',
      headers: acceptLanguageHeader,
      description: [
        'The creator and staff may change every field. `featured` and `partner` may only be changed by partner accounts (403 for anyone else, the creator included); partners may change only those two on places they did not create.',
        "Staff changes apply at once, and so do the creator's while the place is pending or rejected. The creator's changes of an approved place (every field but `featured` and `partner`, notes included) wait for staff: the approved version stays public and the answer shows the change in `pending_edits` (a later change merges into it) until staff approve or reject it.",
        'Other users get 403 on a place they can see, 404 on a pending place of someone else. `notes` is written in the Accept-Language locale (unsupported: 422). The slug never changes, so links keep working. The answer shows `user` as a list with `user_id`.',
      ].join('\n\n'),
      body: putBody,
      errors: { 403: 'Not allowed to change this place or field' },
      handler: async ({ params, body, ctx, caller }) => {
        const uuid = await updatePlaceAs(db, caller, params.place_id, body, acceptLanguage(ctx));
        return placeFeature(db, config, uuid, caller, readLocaleOf(ctx), { userAsList: true });
      },
    })
    .remove({
      summary: 'Delete a place (its creator only)',
      description:
        'Only the creator may delete a place. Another caller gets 403 when the place is visible to them (approved, or any place for staff) and 404 otherwise (a pending place of someone else is not disclosed).',
      errors: { 403: 'Not the creator' },
      response: { schema: messageSchema, body: DELETED },
      handler: ({ params, caller }) => deletePlaceAs(db, caller, params.place_id),
    });
  for (const [action, status] of [
    ['approve', 'approved'],
    ['reject', 'rejected'],
  ] as const)
    places.action({
      method: 'post',
      path: `/${action}`,
      summary: `Moderation: ${action} a place (staff only)`,
      headers: acceptLanguageHeader,
      description:
        action === 'approve'
          ? 'Approves what waits on the place: it becomes approved (and appears in search) and its pending edits are applied. With pending edits, `revision` is required: the newest `pending_edits[].revision` reviewed (an edit changed since is a 409, never applied unseen). 409 when another approved place has its external_place_id. Any status may be changed again.'
          : 'Rejects what waits on the place: on an approved place with pending edits, the edits are dropped and the place stays as it was; otherwise the place becomes rejected (out of search; its creator still sees it). Any status may be changed again.',
      ...(action === 'approve' ? { query: approveQuery } : {}),
      errors: {
        403: 'Not a staff account',
        ...(action === 'approve'
          ? {
              409: 'An approved place already has this external_place_id, or the pending edits changed since `revision`',
            }
          : {}),
      },
      response: placeSchema,
      handler: async ({ params, query, ctx, caller }) => {
        const reviewed = (query as { revision?: string } | undefined)?.revision;
        const uuid = await moderatePlace(db, caller, params.place_id, status, reviewed);
        return placeFeature(db, config, uuid, caller, readLocaleOf(ctx));
      },
    });
  return places;
}
