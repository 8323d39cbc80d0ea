import { z } from 'zod';
import type { FieldError } from '../errors.ts';
import { digits, once, type QueryProblem, queryBoolean, readQuery, refuse, withRules } from '../places/search-query.ts';

/** Partners per search page (the spec's page size). */
export const PAGE_SIZE = 25;
/** Deepest page: 4,000 pages of 25 reach 100,000 partners; beyond, narrow the search. */
export const MAX_PAGE = 4000;

export interface PartnerSearchParams {
  sport?: number;
  /** The end-user's position `[lat, lng]`: results nearest first. */
  nearby?: [number, number];
  featured?: boolean;
  partner?: boolean;
  page: number;
}

type Raw = Record<string, string | string[] | undefined>;

const NUMBER = /^[+-]?(\d+(\.\d*)?|\.\d+)$/;
const SPORT = 'sport must be a sport id (a positive integer)';
const PAGE = `page must be an integer from 1 to ${MAX_PAGE}`;

/** One partners search parameter: given at most once. */
const param = <S extends z.ZodType>(name: string, schema: S) => once(schema, `give ${name} once`);

/**
 * The end-user's position `[lat, lng]`, latitude first like the partner's own lat/lng fields:
 * one value `lat,lng` (the spec's form) or two values (`nearby[]=lat&nearby[]=lng`).
 */
const position = z
  .preprocess(
    (value, ctx) => {
      const values = Array.isArray(value) ? value.map(String) : [String(value)];
      const parts = values.length === 1 ? (values[0] as string).split(',') : values;
      const [lat, lng] = parts.map((p) => p.trim());
      const valid =
        parts.length === 2 &&
        lat &&
        lng &&
        NUMBER.test(lat) &&
        NUMBER.test(lng) &&
        Math.abs(Number(lat)) <= 90 &&
        Math.abs(Number(lng)) <= 180;
      return valid
        ? [Number(lat), Number(lng)]
        : refuse(ctx, 'nearby[] must be one position "lat,lng" in degrees (latitude -90..90, longitude -180..180)');
    },
    z.array(z.number().min(-180).max(180)).length(2),
  )
  .optional();

const partnerSearchFields = z.object({
  sport: param(
    'sport',
    z.preprocess(digits(/^\d{1,9}$/), z.number({ error: SPORT }).int(SPORT).min(1, SPORT).max(999_999_999, SPORT)),
  )
    .optional()
    .meta({ description: 'a sport id: partners serving it' }),
  'nearby[]': position.meta({
    description:
      "the end-user position, latitude first: `nearby[]=lat,lng` (the spec's form) or `nearby[]=lat&nearby[]=lng`; nearest partners first",
    example: [50.63, 3.06],
  }),
  nearby: position.meta({ description: 'the same as `nearby[]` (one of the two)' }),
  featured: param('featured', queryBoolean('featured'))
    .optional()
    .meta({ description: 'featured partners only (true) or the others (false); `1` and `0` too' }),
  partner: param('partner', queryBoolean('partner'))
    .optional()
    .meta({ description: 'partners of the operator only (true) or the others (false); `1` and `0` too' }),
  page: param(
    'page',
    z.preprocess(digits(/^\d{1,5}$/), z.number({ error: PAGE }).int(PAGE).min(1, PAGE).max(MAX_PAGE, PAGE)),
  )
    .default(1)
    .meta({ description: `page number from 1 to ${MAX_PAGE}, ${PAGE_SIZE} per page` }),
});

/** The partners search query as validated (page defaults to 1). */
export type PartnerSearchQuery = z.output<typeof partnerSearchFields>;

/** The one rule across parameters: the position is given one way. */
function partnerSearchProblems(q: PartnerSearchQuery): QueryProblem[] {
  return q['nearby[]'] && q.nearby ? [{ param: 'nearby[]', message: 'give nearby[] or nearby, not both' }] : [];
}

/**
 * GET /partners's query: typed parameters (`sport` and `page` integers, `nearby[]` two numbers,
 * booleans); what /openapi.json documents and the API validates (422 naming each parameter).
 */
export const partnerSearchQuery = withRules(partnerSearchFields, partnerSearchProblems);

/** What a valid search asks of the SQL. */
export function partnerSearchParams(q: PartnerSearchQuery): PartnerSearchParams {
  const near = q['nearby[]'] ?? q.nearby;
  return {
    ...(q.sport !== undefined ? { sport: q.sport } : {}),
    ...(near ? { nearby: [near[0] as number, near[1] as number] } : {}),
    ...(q.featured !== undefined ? { featured: q.featured } : {}),
    ...(q.partner !== undefined ? { partner: q.partner } : {}),
    page: q.page,
  };
}

/** Reads a raw query string; every invalid parameter is named (`query.sport`, `query.nearby[]`). */
export function parsePartnerSearch(raw: Raw): { params?: PartnerSearchParams; errors: FieldError[] } {
  const { query, errors } = readQuery(partnerSearchQuery, raw);
  return query ? { params: partnerSearchParams(query), errors } : { errors };
}
