import { CompiledQuery } from 'kysely';
import type { Db } from '../db/database.ts';
import { type SearchFeatureProperties, searchFeatureSchema } from './feature.ts';
import type { LngLat, SearchArea, SearchKey, SearchParams } from './search-query.ts';

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
  // planner away from the KNN scan to a sort of the whole area (bench/README.md, places-search).
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
  // Checked on each activity row, never through the GIN index on tags (`is true` is not an
  // indexable form): ANDing the bitmap of every activity with a common tag (millions at 10M
  // places) with the area's, then sorting, was the generic plan of a one-sport search at 10M.
  if (params.tags) act.push(`(a.tags @> ${ps.add(params.tags)}::text[]) is true`);
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
 *
 * Paging follows one total order, `(proximity_m, id)` or `(created_at, proximity_m, id)`, at
 * every step (places at the same position, or polygons around the reference point, tie on
 * proximity). Proximity order cannot name `id` here: in PostgreSQL 15 a second key turns the
 * KNN index scan into a sort of the whole area. So the KNN walk stops at `fetch first n rows
 * with ties`, which keeps every place tied with the last one, and the caller sorts those by
 * `(proximity_m, id)` and skips the `skip` first ones (rows of earlier pages; 0 with `after`).
 * created_at order is a sort (or an incremental sort on `places_created_at_idx`) anyway, so it
 * takes the id as a last key and applies limit and offset itself.
 * With `after` (keyset paging), only rows after that key in the same order are read: no offset,
 * and pages stay consistent when places are added or approved between two requests.
 */
function pageQuery(ps: Params, params: SearchParams, ref: string): { sql: string; skip?: string } {
  const sport = params.sports?.length === 1 ? params.sports[0] : undefined;
  let from: string;
  let distance: string;
  let id: string;
  let where: string[];
  if (sport !== undefined) {
    distance = `a.place_geog <-> ${ref}`;
    id = 'a.place_id'; // = p.id, but a condition on the activity alone is checked in its index scan

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
    id = 'p.id';
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
  const { after, createdAt, limit } = params;
  const offset = after ? 0 : (params.page - 1) * limit;
  // Rows after `after` in (proximity_m, id) order; the float8 is exact (see parseCursor). A row
  // comparison computes the distance once per row (`d > x or (d = x and …)` did it twice).
  const afterKey = (key: SearchKey) =>
    `(${distance}, ${id}) > (${ps.add(key.proximityM)}::float8, ${ps.add(key.id)}::bigint)`;
  const select = `select ${PLACE_COLUMNS}, ${distance} as proximity_m from ${from}`;
  if (createdAt) {
    if (after) {
      // A bound on created_at that places_created_at_idx can use, then the exact key test.
      const c = `${ps.add(after.createdAt)}::timestamptz`;
      const cmp = createdAt === 'desc' ? '<' : '>';
      where.push(`p.created_at ${cmp}= ${c}`, `(p.created_at ${cmp} ${c} or ${afterKey(after)})`);
    }
    return {
      sql:
        `${select} where ${where.join(' and ')} order by p.created_at ${createdAt}, ${distance}, ${id} ` +
        `limit ${ps.add(limit + 1)}${after ? '' : ` offset ${ps.add(offset)}`}`,
    };
  }
  if (after) where.push(afterKey(after));
  return {
    sql: `${select} where ${where.join(' and ')} order by ${distance} fetch first ${ps.add(offset + limit + 1)} rows with ties`,
    ...(after ? {} : { skip: ps.add(offset) }),
  };
}

/** Each member of a search result (feature.ts), in SQL over a page row `pg`. */
const SEARCH_PROPERTIES_SQL: { readonly [K in keyof SearchFeatureProperties]-?: string } = {
  uuid: 'pg.uuid',
  name: 'pg.name',
  slug: 'pg.slug',
  proximity: 'floor(pg.proximity_m + 0.5) / 1000',
  external_place_id: 'pg.external_place_id',
  contact_details: `json_build_object('email', pg.email, 'phone', pg.phone, 'website', pg.website,
    'booking_url', pg.booking_url, 'social_username', pg.social_username)`,
  address_components: `json_build_object('address', pg.address, 'city', pg.city,
    'province', pg.province, 'country', pg.country)`,
  activities: `(
      select coalesce(json_agg(json_build_object('sport_id', a.sport_id, 'tags', a.tags, 'attributes', a.attributes)
                               order by a.sport_id), '[]'::json)
      from place_activities a where a.place_id = pg.id)`,
};

/** The Feature of a page row `pg`: the members feature.ts lists, in its order. */
const FEATURE = `json_build_object(
  'type', 'Feature',
  'geometry', coalesce(pg.geojson::json, st_asgeojson(pg.geom)::json),
  'properties', json_build_object(${Object.keys(searchFeatureSchema.shape.properties.shape)
    .map((key) => `'${key}', ${SEARCH_PROPERTIES_SQL[key as keyof SearchFeatureProperties]}`)
    .join(',\n    ')}))::text`;

/**
 * The result of a search, one row: how many places the page query found from the page's start
 * (more than `limit` means there is a next page), the Features of the first `limit` of them, in
 * order, as JSON texts joined by commas (null when none), and when there is a next page, the
 * cursor of the page's last row for `after` (see parseCursor).
 */
export interface SearchRow {
  found: number;
  features: string | null;
  next_after: string | null;
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
  // The key of a row in that order, written as parseCursor reads it.
  const cursor =
    `encode(float8send(pg.proximity_m), 'hex') || '.' || pg.id` +
    (params.createdAt ? ` || '.' || (extract(epoch from pg.created_at) * 1000000)::bigint` : '');
  const limit = ps.add(params.limit);
  const n = `row_number() over (order by ${order})${page.skip ? ` - ${page.skip}` : ''}`;
  const sql =
    `select count(*)::int as found, string_agg(pg.feature, ',' order by pg.n) as features, ` +
    `case when count(*) > ${limit} then max(pg.after) end as next_after from (` +
    `select case when pg.n <= ${limit} then ${FEATURE} end as feature, ` +
    `case when pg.n = ${limit} then ${cursor} end as after, pg.n from (` +
    `select pg.*, ${n} as n from (${page.sql}) as pg) as pg${page.skip ? ' where pg.n > 0' : ''}) as pg`;
  const name = statementName(sql);
  return { sql, parameters: ps.values, ...(name ? { name } : {}) };
}

/**
 * A prepared-statement name per distinct search SQL (its text depends only on which parameters
 * are present, not on their values): pg prepares it once per connection, PostgreSQL skips the
 * parse and analysis of each search and, once its generic plan is as cheap as the custom ones
 * (bbox and radius searches), the planning too (bench/README.md, places-search). Bounded: past 100 shapes in a process, searches run unnamed.
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
