import { z } from 'zod';
import {
  createPartnerAs,
  deletePartnerAs,
  findPartners,
  partnerById,
  updatePartnerAs,
} from '../../shared/partners/partner-service.ts';
import { partnerCallerFrom } from '../../shared/partners/permissions.ts';
import { PAGE_SIZE, partnerSearchQuery } from '../../shared/partners/search-query.ts';
import type { AppContext } from '../context.ts';
import { type Page, SerializedItems } from '../http/formats/format.ts';
import { Resource } from '../http/resource.ts';
import type { ApiRouter } from '../http/route.ts';

/** A partner record, as every read and write returns it. */
export const partnerSchema = z.object({
  uuid: z.string(),
  slug: z.string().meta({ description: 'unique, never changes; the places `partner` field names a partner by it' }),
  title: z.string(),
  source: z.string(),
  description: z.string().nullable(),
  link: z.string(),
  featured: z.boolean(),
  partner: z.boolean().meta({ description: 'whether the entry is a partner of the operator' }),
  city: z.string().nullable(),
  province: z.string().nullable(),
  country: z.string().nullable().meta({ description: 'ISO 3166-1 alpha-2' }),
  lat: z.string().meta({ example: '50.6292' }),
  lng: z.string().meta({ example: '3.0573' }),
  radius: z.number().int().nullable(),
  image_ref: z.string().nullable(),
  user_id: z.number().int().meta({ description: "the partner's account number (accounts.number)" }),
  sports: z.array(z.object({ sport: z.number().int() })),
});

const sportRefs = z.array(z.object({ sport: z.union([z.number(), z.string()]) })).max(200);
const nullableText = z.string().nullable().optional();

/** `{partner: {...}}`: types here, every rule (required, ranges, country, link, sports) in shared/partners. */
const partnerBody = z.strictObject({
  partner: z.strictObject({
    user_id: z.union([z.number(), z.string()]).optional(),
    title: z.string().optional(),
    source: z.string().optional(),
    description: nullableText,
    link: z.string().optional(),
    featured: z.boolean().optional(),
    partner: z.boolean().optional(),
    city: nullableText,
    province: nullableText,
    country: nullableText,
    lat: z.union([z.number(), z.string()]).optional(),
    lng: z.union([z.number(), z.string()]).optional(),
    radius: z.number().nullable().optional(),
    image_ref: nullableText,
    slug: z.string().optional().meta({ description: 'on creation only (default: from the title)' }),
    sports_attributes: sportRefs.optional(),
    sport_attributes: sportRefs.optional().meta({ description: 'the same as sports_attributes (both spellings)' }),
  }),
});

const idParams = z.object({ partner_id: z.string().min(1).max(200) });

/** /api/v1/partners: public reads, staff-only writes (docs/partners.md). */
export function partnersResource(router: ApiRouter, app: AppContext) {
  const { db } = app;
  return new Resource(router, app, {
    path: '/partners',
    itemPath: '/:partner_id',
    itemParams: idParams,
    format: 'json',
    item: partnerSchema,
    access: { read: 'public', write: 'bearer' },
    caller: partnerCallerFrom,
    notFound: 'No such partner',
  })
    .list({
      summary: 'Search partners',
      description: [
        `A bare JSON array of at most ${PAGE_SIZE} partner records (page n holds results ${PAGE_SIZE}·(n-1)+1 to ${PAGE_SIZE}·n; fewer than ${PAGE_SIZE} means the last page).`,
        'With `nearby[]=lat,lng` they are ordered by distance from that position (nearest first, ties by creation order); without it, by creation order. `sport`, `featured` and `partner` filter.',
        'Every invalid parameter is a 422 whose errors name it (`query.nearby[]`, `query.page`...).',
      ].join('\n\n'),
      query: partnerSearchQuery,
      handler: async ({ query }): Promise<Page<never>> => {
        const found = await app.reads.read(undefined, ({ pool }) => findPartners(pool, query));
        return {
          // The records come serialized and joined by PostgreSQL: only the brackets are added.
          items: new SerializedItems(found.json, found.count),
          page: found.page,
          limit: PAGE_SIZE,
          hasNext: found.count === PAGE_SIZE,
        };
      },
    })
    .get({
      summary: 'One partner by uuid or slug',
      handler: ({ params }) => partnerById(db, params.partner_id),
    })
    .create({
      summary: 'Add a partner (staff)',
      description:
        'Required: user_id (an account number), title, source, link (http or https), lat, lng and at least one existing sport in `sports_attributes` (or `sport_attributes`). `country` is an ISO 3166-1 alpha-2 code. Answers the created partner.',
      body: partnerBody,
      errors: { 403: 'Not a staff account', 409: 'slug already used' },
      handler: ({ body, caller }) => createPartnerAs(db, caller, body.partner),
      location: (p) => `/api/v1/partners/${p.uuid}`,
    })
    .action({
      // PUT is the spec's example; one description shows POST on this path: same route.
      method: 'put',
      aliases: ['post'],
      path: '',
      summary: 'Update a partner (staff)',
      description:
        'Changes the fields sent (sports, when sent, replace the list; the slug never changes). Answers `{partner: {...}}` with every field. Invalid values: 422 naming each field.',
      body: partnerBody,
      errors: { 403: 'Not a staff account' },
      response: z.object({ partner: partnerSchema }),
      handler: async ({ params, body, caller }) => ({
        partner: await updatePartnerAs(db, caller, params.partner_id, body.partner),
      }),
    })
    .remove({
      summary: 'Delete a partner (staff)',
      description: 'Places whose `partner` named it lose that slug (set to null). Answers 204.',
      errors: { 403: 'Not a staff account' },
      handler: ({ params, caller }) => deletePartnerAs(db, caller, params.partner_id),
    });
}
