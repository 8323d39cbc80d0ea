import { PAGE_SIZE, type PartnerSearchParams } from './search-query.ts';

/** One partner record as every read returns it (alias `p` on partners); lat/lng as strings. */
export const PARTNER_JSON = `json_build_object(
  'uuid', p.uuid, 'slug', p.slug, 'title', p.title, 'source', p.source, 'description', p.description,
  'link', p.link, 'featured', p.featured, 'partner', p.partner,
  'city', p.city, 'province', p.province, 'country', p.country,
  'lat', p.lat::text, 'lng', p.lng::text, 'radius', p.radius, 'image_ref', p.image_ref, 'user_id', p.user_id,
  'sports', (select coalesce(json_agg(json_build_object('sport', s.sport_id) order by s.sport_id), '[]'::json)
             from partner_sports s where s.partner_id = p.id))`;

/** The search's one row: how many records the page holds and their JSON texts joined by commas. */
export interface PartnerSearchRow {
  found: number;
  partners: string | null;
}

/**
 * The search as one statement. With `nearby[]`, a KNN walk (`<->`) of partners_geog_idx from the
 * end-user's position; `fetch first n rows with ties` keeps every partner tied with the last one
 * (same point), and the outer query orders them by (distance, id) and skips earlier pages, so
 * paging follows one total order without turning the index scan into a sort (as the places
 * search does). Without it, partners come in id (creation) order. The sport filter is a
 * correlated probe per candidate, not EXISTS (which the planner may turn into a hash of every
 * partner of the sport). PostgreSQL writes the records' JSON: the API only adds the brackets.
 */
export function compilePartnerSearch(params: PartnerSearchParams): {
  sql: string;
  parameters: unknown[];
  name: string;
} {
  const values: unknown[] = [];
  const add = (v: unknown) => {
    values.push(v);
    return `$${values.length}`;
  };
  const where: string[] = [];
  if (params.sport !== undefined)
    where.push(
      `coalesce((select true from partner_sports s where s.partner_id = p.id and s.sport_id = ${add(params.sport)}::int limit 1), false)`,
    );
  if (params.featured !== undefined) where.push(`p.featured = ${add(params.featured)}::boolean`);
  if (params.partner !== undefined) where.push(`p.partner = ${add(params.partner)}::boolean`);
  const cond = where.length ? ` where ${where.join(' and ')}` : '';
  const skip = (params.page - 1) * PAGE_SIZE;
  let page: string;
  if (params.nearby) {
    const ref = `st_setsrid(st_makepoint(${add(params.nearby[1])}::float8, ${add(params.nearby[0])}::float8), 4326)::geography`;
    page =
      `select pg.* from (select p.*, p.geog <-> ${ref} as d from partners p${cond} ` +
      `order by p.geog <-> ${ref} fetch first ${add(skip + PAGE_SIZE)} rows with ties) as pg ` +
      `order by pg.d, pg.id offset ${add(skip)} limit ${PAGE_SIZE}`;
  } else {
    page = `select p.*, 0::float8 as d from partners p${cond} order by p.id offset ${add(skip)} limit ${PAGE_SIZE}`;
  }
  const sql =
    `select count(*)::int as found, string_agg(${PARTNER_JSON}::text, ',' order by p.d, p.id) as partners ` +
    `from (${page}) as p`;
  return { sql, parameters: values, name: statementName(sql) };
}

/** One prepared-statement name per search shape (the text depends only on which filters are present). */
const STATEMENTS = new Map<string, string>();
function statementName(sql: string): string {
  let name = STATEMENTS.get(sql);
  if (name === undefined) {
    name = `partners_search_${STATEMENTS.size + 1}`;
    STATEMENTS.set(sql, name);
  }
  return name;
}
