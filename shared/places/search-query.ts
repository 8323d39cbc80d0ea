import { z } from 'zod';
import type { FieldError } from '../errors.ts';
import placesReferential from '../referentials/places-tags-filters.json' with { type: 'json' };
import { distanceKm, parseLngLat } from './geojson.ts';

/** Default page size when `limit` is absent (docs/places.md), and the spec's maximum. */
export const DEFAULT_LIMIT = 20;
export const MAX_LIMIT = 100;
/** Longest radius and bounding-box side, in kilometres. */
export const MAX_EXTENT_KM = 100;

/** Search bounds on activity filter values: `min_<filter>` / `max_<filter>`. Levels are 0..2. */
export const RANGE_FILTERS = {
  difficulty: 'level',
  duration: 'number',
  distance: 'number',
  elevation_gain: 'number',
  cellphone_service: 'level',
  quality: 'level',
} as const;
type RangeFilter = keyof typeof RANGE_FILTERS;

const SURFACES = placesReferential.filters.find((f) => f.slug === 'surface')?.values ?? [];

export type LngLat = [number, number];
export type SearchArea =
  | { kind: 'bbox'; sw: LngLat; ne: LngLat }
  | { kind: 'radius'; origin: LngLat; radiusKm: number };

export interface SearchParams {
  area: SearchArea;
  /** Point results are ordered by (user_origin, else origin, else the box centre). */
  reference: LngLat;
  sports?: number[];
  tags?: string[];
  surface?: string[];
  ranges: { filter: RangeFilter; min?: number; max?: number }[];
  createdAt?: 'asc' | 'desc';
  days?: number;
  partner?: string;
  featured?: boolean;
  limit: number;
  /** Page number from 1: the offset when `after` is absent; with `after`, only the next link's number. */
  page: number;
  /** Keyset paging: the page starts after this row of the search order (from links.next). */
  after?: SearchKey;
}

/**
 * A row's place in the search order, which is total: proximity (exact float8 metres), then the
 * place id; `created_at` first when ordering by it. Carried by `after` (see parseCursor).
 */
export interface SearchKey {
  proximityM: number;
  /** places.id (bigint), as decimal digits. */
  id: string;
  /** created_at, ISO 8601 in UTC with microseconds: present exactly when the search orders by created_at. */
  createdAt?: string;
}

type Raw = Record<string, string | string[] | undefined>;

/** A search query problem found across parameters: the parameter to name and what is wrong. */
export interface QueryProblem {
  param: string;
  message: string;
}

/** Refuses a value inside a preprocess or transform; the issue's path is the parameter's. */
export function refuse(ctx: z.RefinementCtx, message: string): never {
  ctx.addIssue({ code: 'custom', message });
  return z.NEVER;
}

/** A query-string parameter that takes one value: a repeated one is refused with `repeated`. */
export function once<S extends z.ZodType>(schema: S, repeated: string) {
  return z.preprocess((value, ctx) => (Array.isArray(value) ? refuse(ctx, repeated) : value), schema);
}

/** Query text matching `pattern` (decimal digits) becomes a number; other text stays, for the number schema to refuse. */
export const digits = (pattern: RegExp) => (value: unknown) =>
  typeof value === 'string' && pattern.test(value) ? Number(value) : value;

/** `true`/`1` and `false`/`0` as a boolean (documented as one); anything else is refused naming `name`. */
export function queryBoolean(name: string) {
  return z.preprocess(
    (value) => (value === 'true' || value === '1' ? true : value === 'false' || value === '0' ? false : value),
    z.boolean({ error: `${name} must be true or false` }),
  );
}

/**
 * A declared query schema with rules across its parameters: `rules` runs on the typed query once
 * every parameter is valid on its own, each problem naming its parameter (`query.origin`).
 */
export function withRules<T extends z.ZodObject>(fields: T, rules: (query: z.output<T>) => QueryProblem[]): T {
  return fields.superRefine(
    (query, ctx) => {
      for (const { param, message } of rules(query)) ctx.addIssue({ code: 'custom', path: [param], message });
    },
    { when: (payload) => payload.issues.length === 0 },
  );
}

/** Reads a raw query string with a declared query schema: the typed query, or every problem named. */
export function readQuery<S extends z.ZodType>(schema: S, raw: unknown): { query?: z.output<S>; errors: FieldError[] } {
  const result = schema.safeParse(raw);
  if (result.success) return { query: result.data, errors: [] };
  return {
    errors: result.error.issues.map((issue) => ({ path: ['query', ...issue.path].join('.'), message: issue.message })),
  };
}

/** One places search parameter: given at most once. */
const param = <S extends z.ZodType>(name: string, schema: S) => once(schema, `${name} was given more than once`);

/** `lng,lat` (documented as that string), read as a position. */
const position = (name: string) =>
  param(
    name,
    z.string().transform((value, ctx): LngLat => {
      const { point, error } = parseLngLat(value, name);
      return point ?? refuse(ctx, error?.message ?? `${name} must be "lng,lat"`);
    }),
  );

/** An integer parameter (documented as one) from `min` (to `max`), decimal digits in the query string. */
function integer(name: string, min: number, max?: number) {
  const range = max === undefined ? `${name} must be at least ${min}` : `${name} must be between ${min} and ${max}`;
  const n = z
    .number({ error: `${name} must be an integer` })
    // Integer text beyond 2^53 fails here alone (not once more by the bounds).
    .int({ error: range, abort: true })
    .min(min, range);
  return param(name, z.preprocess(digits(/^\s*-?\d+\s*$/), max === undefined ? n : n.max(max, range)));
}

/**
 * Comma-separated values (`357,340`), documented as an array (`style: form, explode: false`).
 * Each value must pass `item`; the ones that do not are named in one problem of the parameter.
 */
function commaList<T extends z.ZodType>(
  name: string,
  description: string,
  item: T,
  refused: (bad: string[]) => string,
) {
  return param(
    name,
    z.preprocess((value, ctx) => {
      if (typeof value !== 'string') return value;
      const items = value
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean);
      if (!items.length) return refuse(ctx, `${name} must be a comma-separated list`);
      const bad = items.filter((s) => !item.safeParse(s).success);
      return bad.length ? refuse(ctx, refused(bad)) : items;
    }, z.array(item)),
  )
    .optional()
    .meta({ description, param: { style: 'form', explode: false } });
}

const RADIUS = 'radius must be a number of kilometres greater than 0';
const UNITS: Record<RangeFilter, string> = {
  difficulty: '0..2',
  duration: 'minutes',
  distance: 'metres',
  elevation_gain: 'metres',
  cellphone_service: '0..2',
  quality: '0..2',
};
const bound = (side: 'min' | 'max', filter: RangeFilter) =>
  integer(`${side}_${filter}`, 0, RANGE_FILTERS[filter] === 'level' ? 2 : undefined)
    .optional()
    .meta({ description: `${side === 'min' ? 'at least' : 'at most'} (${UNITS[filter]}); one side alone allowed` });
/** `min_<filter>` and `max_<filter>` for every range filter. */
type Bound = `${'min' | 'max'}_${RangeFilter}`;
const bounds = Object.fromEntries(
  (Object.keys(RANGE_FILTERS) as RangeFilter[]).flatMap((filter) =>
    (['min', 'max'] as const).map((side) => [`${side}_${filter}`, bound(side, filter)]),
  ),
) as Record<Bound, ReturnType<typeof bound>>;

const searchFields = z.object({
  sw: position('sw').optional().meta({ description: 'south-west corner `lng,lat`; with ne', example: '3.06,50.63' }),
  ne: position('ne').optional().meta({ description: 'north-east corner `lng,lat`; with sw', example: '3.1,50.7' }),
  origin: position('origin')
    .optional()
    .meta({ description: 'centre `lng,lat` of a radius search; with radius', example: '3.06,50.63' }),
  radius: param(
    'radius',
    z.preprocess(
      (value) => (typeof value === 'string' && value.trim() !== '' ? Number(value) : value),
      z.number({ error: RADIUS }).gt(0, RADIUS).max(MAX_EXTENT_KM, `radius must not exceed ${MAX_EXTENT_KM} km`),
    ),
  )
    .optional()
    .meta({ description: `kilometres around origin, at most ${MAX_EXTENT_KM}` }),
  user_origin: position('user_origin')
    .optional()
    .meta({ description: 'end-user position for proximity order (default: origin, or the box centre)' }),
  sports: commaList(
    'sports',
    'sport ids, comma-separated (`357,340`): places with one of these sports',
    z.preprocess(digits(/^\d{1,9}$/), z.number().int().min(0).max(999_999_999)),
    () => 'sports must be comma-separated sport ids (integers)',
  ),
  tags: commaList(
    'tags',
    'tag slugs, comma-separated: one activity must have them all',
    z.enum(placesReferential.tags),
    (bad) => `unknown tag(s): ${bad.join(', ')}`,
  ),
  surface: commaList(
    'surface',
    'surfaces, comma-separated (any)',
    z.enum(SURFACES),
    (bad) => `unknown surface(s): ${bad.join(', ')}; known: ${SURFACES.join(', ')}`,
  ),
  ...bounds,
  limit: integer('limit', 1, MAX_LIMIT)
    .default(DEFAULT_LIMIT)
    .meta({ description: `results per page, 1..${MAX_LIMIT}, default ${DEFAULT_LIMIT}` }),
  page: integer('page', 1, 1_000_000)
    .default(1)
    .meta({ description: 'page number from 1 (with `after`, only numbers the page)' }),
  after: param(
    'after',
    z
      .string()
      .transform(
        (value, ctx) =>
          parseCursor(value) ?? refuse(ctx, 'after must be the cursor of a links.next URL of this search'),
      ),
  )
    .optional()
    .meta({ description: 'cursor of links.next: the page starts after that place (keyset paging); opaque' }),
  created_at: param('created_at', z.enum(['asc', 'desc'], { error: 'created_at must be asc or desc' }))
    .optional()
    .meta({ description: 'order by creation date (then proximity)' }),
  days: integer('days', 1, 36_500).optional().meta({ description: 'only places created within this many days' }),
  partner: param('partner', z.string().regex(/^[a-z0-9][a-z0-9_-]{0,99}$/i, 'partner must be a partner slug'))
    .optional()
    .meta({ description: 'partner slug' }),
  featured: param('featured', queryBoolean('featured'))
    .optional()
    .meta({ description: 'featured places only (true) or the others (false); `1` and `0` too' }),
});

/** The search query as validated: typed parameters, defaults applied (limit, page). */
export type SearchQuery = z.output<typeof searchFields>;

/** The rules across parameters: a location (sw+ne or origin+radius, not both), 100 km, min ≤ max, the cursor's order. */
export function searchQueryProblems(q: SearchQuery): QueryProblem[] {
  const problems: QueryProblem[] = [];
  const problem = (param: string, message: string) => problems.push({ param, message });
  const has = (name: 'sw' | 'ne' | 'origin' | 'radius') => q[name] !== undefined;
  if (has('sw') !== has('ne')) problem(has('sw') ? 'ne' : 'sw', 'sw and ne must be sent together');
  if (has('origin') !== has('radius'))
    problem(has('origin') ? 'radius' : 'origin', 'origin and radius must be sent together');
  if (has('sw') && has('origin'))
    problem('origin', 'send either a bounding box (sw, ne) or a radius (origin, radius), not both');
  if (!has('sw') && !has('ne') && !has('origin') && !has('radius'))
    problem('origin', 'a location is required: sw and ne (bounding box) or origin and radius (km)');
  const { sw, ne } = q;
  if (sw && ne) {
    if (sw[1] > ne[1]) problem('sw', 'sw must be south of ne (sw latitude ≤ ne latitude)');
    else if (sw[0] > ne[0]) problem('sw', 'sw must be west of ne (boxes across the antimeridian are not supported)');
    else {
      const side = Math.max(distanceKm(sw, [ne[0], sw[1]]), distanceKm(sw, [sw[0], ne[1]]));
      if (side > MAX_EXTENT_KM)
        problem('ne', `the bounding box must not exceed ${MAX_EXTENT_KM} km per side (it is ${Math.round(side)} km)`);
    }
  }
  for (const filter of Object.keys(RANGE_FILTERS) as RangeFilter[]) {
    const lo = q[`min_${filter}`];
    const hi = q[`max_${filter}`];
    if (lo !== undefined && hi !== undefined && lo > hi)
      problem(`min_${filter}`, `min_${filter} must not exceed max_${filter}`);
  }
  if (q.after && (q.after.createdAt !== undefined) !== (q.created_at !== undefined))
    problem('after', 'after comes from a search with another order (created_at): follow links.next of this search');
  return problems;
}

/**
 * GET /places's query: every parameter typed (numbers, lists, enums, limits) and the rules across
 * them; what /openapi.json documents and the API validates (a 422 naming each problem's parameter).
 */
export const searchQuery = withRules(searchFields, searchQueryProblems);

/** What a valid search query asks of the SQL: its area, reference point and filters. */
export function searchParams(q: SearchQuery): SearchParams {
  let area: SearchArea;
  if (q.sw && q.ne) area = { kind: 'bbox', sw: q.sw, ne: q.ne };
  else if (q.origin && q.radius !== undefined) area = { kind: 'radius', origin: q.origin, radiusKm: q.radius };
  else throw new Error('a search query without a location (searchQuery requires one)');
  const reference: LngLat =
    q.user_origin ??
    (area.kind === 'radius' ? area.origin : [(area.sw[0] + area.ne[0]) / 2, (area.sw[1] + area.ne[1]) / 2]);
  const ranges: SearchParams['ranges'] = [];
  for (const filter of Object.keys(RANGE_FILTERS) as RangeFilter[]) {
    const min = q[`min_${filter}`];
    const max = q[`max_${filter}`];
    if (min !== undefined || max !== undefined)
      ranges.push({ filter, ...(min !== undefined ? { min } : {}), ...(max !== undefined ? { max } : {}) });
  }
  return {
    area,
    reference,
    ...(q.sports ? { sports: q.sports } : {}),
    ...(q.tags ? { tags: q.tags } : {}),
    ...(q.surface ? { surface: q.surface } : {}),
    ranges,
    ...(q.created_at ? { createdAt: q.created_at } : {}),
    ...(q.days !== undefined ? { days: q.days } : {}),
    ...(q.partner !== undefined ? { partner: q.partner } : {}),
    ...(q.featured !== undefined ? { featured: q.featured } : {}),
    limit: q.limit,
    page: q.page,
    ...(q.after ? { after: q.after } : {}),
  };
}

/** Reads a raw query string (scripts, benchmarks, tests): the search's parameters, or every problem named. */
export function parseSearchQuery(raw: Raw): { params?: SearchParams; errors: FieldError[] } {
  const { query, errors } = readQuery(searchQuery, raw);
  return query ? { params: searchParams(query), errors } : { errors };
}

/**
 * The cursor of `after`, as the search SQL writes it for the last row of a page (search-sql.ts,
 * `next_after`): `<proximity>.<id>` or `<proximity>.<id>.<created_at>`, where proximity is the
 * float8 distance in metres as the 16 hex digits of its IEEE 754 bits (exact: ties are compared
 * with `=`, so a decimal rendering that rounds would skip or repeat rows), id the place id and
 * created_at in microseconds since 1970. Opaque to clients, who follow links.next.
 */
export function parseCursor(token: string): SearchKey | undefined {
  const m = /^([0-9a-f]{16})\.(\d{1,19})(?:\.(-?\d{1,19}))?$/.exec(token);
  if (!m) return undefined;
  const [, hex, id, micros] = m as unknown as [string, string, string, string | undefined];
  const proximityM = Buffer.from(hex, 'hex').readDoubleBE(0);
  if (!Number.isFinite(proximityM) || proximityM < 0 || BigInt(id) > 9_223_372_036_854_775_807n) return undefined;
  if (micros === undefined) return { proximityM, id };
  const createdAt = isoMicros(BigInt(micros));
  return createdAt ? { proximityM, id, createdAt } : undefined;
}

/** Microseconds since 1970 as an exact ISO 8601 UTC timestamp (Date alone keeps milliseconds). */
function isoMicros(micros: bigint): string | undefined {
  let ms = micros / 1000n;
  let us = micros % 1000n;
  if (us < 0n) {
    us += 1000n;
    ms -= 1n;
  }
  const date = new Date(Number(ms));
  if (Number.isNaN(date.getTime()) || date.getUTCFullYear() < 1 || date.getUTCFullYear() > 9999) return undefined;
  return date.toISOString().replace('Z', `${String(us).padStart(3, '0')}Z`);
}
