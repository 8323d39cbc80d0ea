import { CompiledQuery } from 'kysely';
import type { Db } from '../db/database.ts';
import placesReferential from '../referentials/places-tags-filters.json' with { type: 'json' };
import { distanceKm, type FieldError, parseLngLat } from './geojson.ts';

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

const KNOWN_TAGS = new Set(placesReferential.tags);
const SURFACES = new Set(placesReferential.filters.find((f) => f.slug === 'surface')?.values ?? []);

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
  page: number;
}

type Raw = Record<string, string | string[] | undefined>;

/**
 * Validates the search query string; every problem is reported with its parameter
 * (`query.radius`). A location (sw+ne or origin+radius) is required (docs/places.md).
 */
export function parseSearchQuery(raw: Raw): { params?: SearchParams; errors: FieldError[] } {
  const errors: FieldError[] = [];
  const err = (name: string, message: string) => errors.push({ path: `query.${name}`, message });
  const get = (name: string): string | undefined => {
    const v = raw[name];
    if (Array.isArray(v)) {
      err(name, `${name} was given more than once`);
      return undefined;
    }
    return v;
  };
  const point = (name: string): LngLat | undefined => {
    const v = get(name);
    if (v === undefined) return undefined;
    const r = parseLngLat(v, name);
    if (r.error) errors.push(r.error);
    return r.point;
  };
  const int = (name: string, min: number, max = Number.MAX_SAFE_INTEGER): number | undefined => {
    const v = get(name);
    if (v === undefined) return undefined;
    if (!/^-?\d+$/.test(v.trim())) {
      err(name, `${name} must be an integer`);
      return undefined;
    }
    const n = Number(v);
    if (n < min || n > max) {
      err(
        name,
        max === Number.MAX_SAFE_INTEGER
          ? `${name} must be at least ${min}`
          : `${name} must be between ${min} and ${max}`,
      );
      return undefined;
    }
    return n;
  };
  const list = (name: string): string[] | undefined => {
    const v = get(name);
    if (v === undefined) return undefined;
    const items = v
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean);
    if (!items.length) err(name, `${name} must be a comma-separated list`);
    return items;
  };

  const has = (name: string) => raw[name] !== undefined;
  const sw = point('sw');
  const ne = point('ne');
  const origin = point('origin');
  const userOrigin = point('user_origin');
  let radius: number | undefined;
  if (has('radius')) {
    const v = get('radius');
    const n = v === undefined || v.trim() === '' ? Number.NaN : Number(v);
    if (!Number.isFinite(n) || n <= 0) err('radius', 'radius must be a number of kilometres greater than 0');
    else if (n > MAX_EXTENT_KM) err('radius', `radius must not exceed ${MAX_EXTENT_KM} km`);
    else radius = n;
  }
  if (has('sw') !== has('ne')) err(has('sw') ? 'ne' : 'sw', 'sw and ne must be sent together');
  if (has('origin') !== has('radius'))
    err(has('origin') ? 'radius' : 'origin', 'origin and radius must be sent together');
  if (has('sw') && has('origin'))
    err('origin', 'send either a bounding box (sw, ne) or a radius (origin, radius), not both');
  if (!has('sw') && !has('ne') && !has('origin') && !has('radius'))
    err('origin', 'a location is required: sw and ne (bounding box) or origin and radius (km)');
  let area: SearchArea | undefined;
  if (sw && ne) {
    if (sw[1] > ne[1]) err('sw', 'sw must be south of ne (sw latitude ≤ ne latitude)');
    else if (sw[0] > ne[0]) err('sw', 'sw must be west of ne (boxes across the antimeridian are not supported)');
    else {
      const width = distanceKm(sw, [ne[0], sw[1]]);
      const height = distanceKm(sw, [sw[0], ne[1]]);
      if (Math.max(width, height) > MAX_EXTENT_KM)
        err(
          'ne',
          `the bounding box must not exceed ${MAX_EXTENT_KM} km per side (it is ${Math.round(Math.max(width, height))} km)`,
        );
      else area = { kind: 'bbox', sw, ne };
    }
  } else if (origin && radius !== undefined) area = { kind: 'radius', origin, radiusKm: radius };

  let sports: number[] | undefined;
  const sportItems = list('sports');
  if (sportItems) {
    if (sportItems.every((s) => /^\d{1,9}$/.test(s))) sports = sportItems.map(Number);
    else err('sports', 'sports must be comma-separated sport ids (integers)');
  }
  const tags = list('tags');
  const unknownTags = tags?.filter((t) => !KNOWN_TAGS.has(t)) ?? [];
  if (unknownTags.length) err('tags', `unknown tag(s): ${unknownTags.join(', ')}`);
  const surface = list('surface');
  const unknownSurfaces = surface?.filter((s) => !SURFACES.has(s)) ?? [];
  if (unknownSurfaces.length)
    err('surface', `unknown surface(s): ${unknownSurfaces.join(', ')}; known: ${[...SURFACES].join(', ')}`);

  const ranges: SearchParams['ranges'] = [];
  for (const [filter, type] of Object.entries(RANGE_FILTERS) as [RangeFilter, string][]) {
    const max = type === 'level' ? 2 : undefined;
    const lo = int(`min_${filter}`, 0, max);
    const hi = int(`max_${filter}`, 0, max);
    if (lo !== undefined && hi !== undefined && lo > hi)
      err(`min_${filter}`, `min_${filter} must not exceed max_${filter}`);
    else if (lo !== undefined || hi !== undefined)
      ranges.push({ filter, ...(lo !== undefined ? { min: lo } : {}), ...(hi !== undefined ? { max: hi } : {}) });
  }
  let createdAt: 'asc' | 'desc' | undefined;
  const ca = get('created_at');
  if (ca !== undefined) {
    if (ca === 'asc' || ca === 'desc') createdAt = ca;
    else err('created_at', 'created_at must be asc or desc');
  }
  const days = int('days', 1, 36_500);
  const partner = get('partner');
  if (partner !== undefined && !/^[a-z0-9][a-z0-9_-]{0,99}$/i.test(partner))
    err('partner', 'partner must be a partner slug');
  let featured: boolean | undefined;
  const f = get('featured');
  if (f !== undefined) {
    if (['true', '1'].includes(f)) featured = true;
    else if (['false', '0'].includes(f)) featured = false;
    else err('featured', 'featured must be true or false');
  }
  let limit = DEFAULT_LIMIT;
  if (has('limit')) {
    const l = int('limit', 1);
    if (l !== undefined && l > MAX_LIMIT) err('limit', `limit must not exceed ${MAX_LIMIT}`);
    else if (l !== undefined) limit = l;
  }
  const page = has('page') ? int('page', 1, 1_000_000) : 1;

  if (errors.length || !area) return { errors };
  const reference: LngLat =
    userOrigin ??
    (area.kind === 'radius' ? area.origin : [(area.sw[0] + area.ne[0]) / 2, (area.sw[1] + area.ne[1]) / 2]);
  return {
    params: {
      area,
      reference,
      ...(sports ? { sports } : {}),
      ...(tags ? { tags } : {}),
      ...(surface ? { surface } : {}),
      ranges,
      ...(createdAt ? { createdAt } : {}),
      ...(days !== undefined ? { days } : {}),
      ...(partner !== undefined ? { partner } : {}),
      ...(featured !== undefined ? { featured } : {}),
      limit,
      page: page ?? 1,
    },
    errors,
  };
}

/**
 * The search SQL is written as text with numbered parameters (not through the Kysely builder):
 * it is the hot path of the API, and building and compiling the query tree cost about a tenth
 * of the API's CPU per search. `Params` numbers the values in order of appearance.
 */
class Params {
  readonly values: unknown[] = [];
  add(value: unknown): string {
    this.values.push(value);
    return `$${this.values.length}`;
  }
}

const point = (ps: Params, p: LngLat) => `st_setsrid(st_makepoint(${ps.add(p[0])}, ${ps.add(p[1])}), 4326)`;

/**
 * The area as conditions on a geography (`p.geom::geography`, or the activity's copy
 * `a.place_geog`) and the place geometry `p.geom`.
 */
function areaConditions(ps: Params, area: SearchArea, geog: string): string[] {
  // The geography GiST index (places_geog_idx, or place_activities_geog_sport_idx) serves both
  // the area and the KNN order, so one index scan walks outwards from the reference point and
  // stops at the area's edge. The area test is written as an index condition (`&&` on a
  // geocentric box) plus an exact check without index support: ST_DWithin/ST_Intersects would
  // add conditions whose selectivity PostGIS badly underestimates on geography, steering the
  // planner away from the KNN scan (measured at 1M places: 200-800 ms sorts instead of ~10 ms).
  if (area.kind === 'radius') {
    const origin = `${point(ps, area.origin)}::geography`;
    const metres = ps.add(area.radiusKm * 1000);
    return [
      `${geog} && _st_expand(${origin}, ${metres}::float8)`,
      `st_distance(${geog}, ${origin}, false) <= ${metres}::float8`,
    ];
  }
  const box = `st_makeenvelope(${ps.add(area.sw[0])}, ${ps.add(area.sw[1])}, ${ps.add(area.ne[0])}, ${ps.add(area.ne[1])}, 4326)`;
  // 5 km margin: the geocentric box of the envelope's great-circle edges may miss points
  // next to a parallel (sagitta ≤ ~2 km for 100 km edges up to 85°); the exact test follows.
  return [`${geog} && _st_expand(${box}::geography, 5000::float8)`, `_st_intersects(p.geom, ${box})`];
}

/** Conditions on the place itself (`places as p`) besides its area and status. */
function placeConditions(ps: Params, params: SearchParams): string[] {
  const out: string[] = [];
  if (params.days !== undefined) out.push(`p.created_at >= now() - make_interval(days => ${ps.add(params.days)})`);
  if (params.partner !== undefined) out.push(`p.partner = ${ps.add(params.partner)}`);
  if (params.featured !== undefined) out.push(`p.featured = ${ps.add(params.featured)}`);
  return out;
}

/** Conditions on one activity (`place_activities as a`) other than its sport: tags, surface, bounds. */
function activityConditions(ps: Params, params: SearchParams): string[] {
  const act: string[] = [];
  if (params.tags) act.push(`a.tags @> ${ps.add(params.tags)}::text[]`);
  if (params.surface) act.push(`a.attributes->>'surface' = any(${ps.add(params.surface)}::text[])`);
  for (const r of params.ranges) {
    // Stored values of these filters are numbers (validated on write); guard the cast anyway.
    // r.filter is one of the RANGE_FILTERS keys (a fixed list of identifiers), safe as a literal.
    const v = `(case when jsonb_typeof(a.attributes->'${r.filter}') = 'number' then (a.attributes->'${r.filter}')::numeric end)`;
    if (r.min !== undefined) act.push(`${v} >= ${ps.add(r.min)}`);
    if (r.max !== undefined) act.push(`${v} <= ${ps.add(r.max)}`);
  }
  return act;
}

const PLACE_COLUMNS =
  'p.id, p.uuid, p.name, p.slug, p.geom, p.geojson, p.external_place_id, p.email, p.phone, p.website, ' +
  'p.booking_url, p.social_username, p.address, p.city, p.province, p.country, p.created_at';

/**
 * The page of places (`limit + 1` rows, for links.next) with the columns the Feature needs and
 * `proximity_m`. Two plans, same results:
 * - one sport (`sports=121`): a KNN walk of the approved places' activities of the area in the
 *   GiST index `place_activities (place_geog, sport_id)` (migration 0022); tags and filter
 *   values are checked on the activity row, then the place is fetched by id. One activity per
 *   place and sport (unique), so no place appears twice.
 * - otherwise: a KNN walk of the approved places of the area (`places_geog_idx`); activity
 *   conditions, if any, are a correlated `(select true … limit 1)` probe per candidate (not
 *   EXISTS, which the planner turned into a hash of every matching activity of the country).
 */
function pageQuery(ps: Params, params: SearchParams, ref: string): string {
  const sport = params.sports?.length === 1 ? params.sports[0] : undefined;
  let from: string;
  let distance: string;
  let where: string[];
  if (sport !== undefined) {
    distance = `a.place_geog <-> ${ref}`;
    from = 'place_activities as a inner join places as p on p.id = a.place_id';
    where = [
      'a.place_approved',
      `a.sport_id = ${ps.add(sport)}::int`,
      ...areaConditions(ps, params.area, 'a.place_geog'),
      ...activityConditions(ps, params),
      `p.status = 'approved'`,
      ...placeConditions(ps, params),
    ];
  } else {
    distance = `p.geom::geography <-> ${ref}`;
    from = 'places as p';
    where = [
      `p.status = 'approved'`,
      ...areaConditions(ps, params.area, 'p.geom::geography'),
      ...placeConditions(ps, params),
    ];
    // One activity must match every activity condition (sport, tags, surface, bounds).
    const act = params.sports ? [`a.sport_id = any(${ps.add(params.sports)}::int[])`] : [];
    act.push(...activityConditions(ps, params));
    if (act.length)
      where.push(
        `coalesce((select true from place_activities a where a.place_id = p.id and ${act.join(' and ')} limit 1), false)`,
      );
  }
  // No tie-breaker after the distance: a second key would defeat the KNN index order.
  const order = params.createdAt ? `p.created_at ${params.createdAt}, ${distance}` : distance;
  return (
    `select ${PLACE_COLUMNS}, ${distance} as proximity_m from ${from} where ${where.join(' and ')} ` +
    `order by ${order} limit ${ps.add(params.limit + 1)} offset ${ps.add((params.page - 1) * params.limit)}`
  );
}

/** The Feature of a page row `pg`, as the API returns it (same members, same order). */
const FEATURE = `json_build_object(
  'type', 'Feature',
  'geometry', coalesce(pg.geojson::json, st_asgeojson(pg.geom)::json),
  'properties', json_build_object(
    'uuid', pg.uuid, 'name', pg.name, 'slug', pg.slug,
    'proximity', floor(pg.proximity_m + 0.5) / 1000,
    'external_place_id', pg.external_place_id,
    'contact_details', json_build_object('email', pg.email, 'phone', pg.phone, 'website', pg.website,
                                         'booking_url', pg.booking_url, 'social_username', pg.social_username),
    'address_components', json_build_object('address', pg.address, 'city', pg.city,
                                            'province', pg.province, 'country', pg.country),
    'activities', (
      select coalesce(json_agg(json_build_object('sport_id', a.sport_id, 'tags', a.tags, 'attributes', a.attributes)
                               order by a.sport_id), '[]'::json)
      from place_activities a where a.place_id = pg.id)))::text`;

/**
 * The result of a search, one row: how many places the page query found (`limit + 1` means
 * there is a next page) and the Features of the first `limit` of them, in order, as JSON texts
 * joined by commas (null when none).
 */
export interface SearchRow {
  found: number;
  features: string | null;
}

/**
 * The whole search in one statement: the page of places (KNN `<->` on geography for proximity
 * order, or created_at) plus one extra row to know whether a next page exists; PostgreSQL builds
 * each place's GeoJSON Feature with its activities (no N+1) and joins them, so the API receives
 * one row and only wraps it in the envelope (no row objects, no JSON parse/stringify, and the
 * whole result arrives at once instead of in flushes while the rows are produced). Proximity is
 * in km rounded to the metre like Math.round (half up; distances are never negative). Pure: the
 * API runs it through pg, and the benchmark runs the same SQL and parameters through its own pool.
 */
export function compileSearchQuery(params: SearchParams): { sql: string; parameters: unknown[]; name?: string } {
  const ps = new Params();
  const ref = `${point(ps, params.reference)}::geography`;
  const page = pageQuery(ps, params, ref);
  const order = params.createdAt ? `pg.created_at ${params.createdAt}, pg.proximity_m, pg.id` : 'pg.proximity_m, pg.id';
  const sql =
    `select count(*)::int as found, string_agg(pg.feature, ',' order by pg.n) as features from (` +
    `select case when pg.n <= ${ps.add(params.limit)} then ${FEATURE} end as feature, pg.n from (` +
    `select pg.*, row_number() over (order by ${order}) as n from (${page}) as pg) as pg) as pg`;
  const name = statementName(sql);
  return { sql, parameters: ps.values, ...(name ? { name } : {}) };
}

/**
 * A prepared-statement name per distinct search SQL (its text depends only on which parameters
 * are present, not on their values): pg prepares it once per connection, PostgreSQL skips the
 * parse and analysis of each search and, once its generic plan is as cheap as the custom ones
 * (bbox and radius searches, measured), the planning too: about a quarter of PostgreSQL's CPU
 * per search. Bounded: past 100 shapes in a process, searches run unnamed.
 */
const STATEMENTS = new Map<string, string>();
const MAX_STATEMENTS = 100;
function statementName(sql: string): string | undefined {
  let name = STATEMENTS.get(sql);
  if (name === undefined && STATEMENTS.size < MAX_STATEMENTS) {
    name = `places_search_${STATEMENTS.size + 1}`;
    STATEMENTS.set(sql, name);
  }
  return name;
}

/** The search as a Kysely compiled query (for EXPLAIN in tests and tools) that it can also run. */
export function buildSearchQuery(db: Db, params: SearchParams) {
  const { sql, parameters } = compileSearchQuery(params);
  const compiled = CompiledQuery.raw(sql, parameters);
  return {
    compile: () => compiled,
    execute: async () => (await db.executeQuery<SearchRow>(compiled)).rows[0] as SearchRow,
  };
}
