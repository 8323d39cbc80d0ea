import { type CompiledQuery, type RawBuilder, sql } from 'kysely';
import type { Db } from '../db/database.ts';
import { invalid, notFoundError } from '../errors.ts';
import type { CatalogueLanguage } from './locale.ts';

/** A sport as the catalogue shows it, in the language served for it (`locale`). */
export interface CatalogueSport {
  id: number;
  slug: string;
  name: string;
  description: string | null;
  parent_id: number | null;
  locale: string;
  vendor_id: number | null;
  tags: string[];
  /** Ids of its active children, ascending (empty for a child or a sport without children). */
  children: number[];
}

export interface SportSearch {
  /** Name search: case- and accent-insensitive substring of the name in the served language. */
  q?: string | undefined;
  tag?: string | undefined;
  vendorId?: number | undefined;
  parentsOnly?: boolean | undefined;
  languages: readonly CatalogueLanguage[];
  page: number;
  size: number;
}

export const MAX_QUERY_LENGTH = 100;

/** `%`, `_` and `\` of the user's text are matched literally. */
const likeEscape = (s: string) => s.replace(/[\\%_]/g, (c) => `\\${c}`);

/**
 * The one SELECT of the catalogue: active sports with the language served for each (the first of
 * the client's languages the sport has a name in, else English), their name and description in
 * that language and their children. `where` and `order` complete it.
 */
function sportSelect(languages: readonly CatalogueLanguage[], join: RawBuilder<unknown>, where: RawBuilder<unknown>[]) {
  return sql`
    select s.id, s.slug, s.parent_id, s.vendor_id, s.tags, x.locale,
      s.names ->> x.locale as name,
      s.descriptions ->> x.locale as description,
      coalesce((select array_agg(c.id order by c.id) from sports c where c.parent_id = s.id and c.active), '{}') as children
    from sports s
    cross join lateral (
      select coalesce(
        (select l from unnest(${[...languages]}::text[]) with ordinality u(l, o) where s.names ? l order by o limit 1),
        'en') as locale
      offset 0 -- evaluated once per sport, not once per use
    ) x
    ${join}
    where ${sql.join([sql`s.active`, ...where], sql` and `)}`;
}

/** The list query, compiled: the API runs it, and bench/catalogue-search.ts runs the same text. */
export function compileSportList(db: Db, search: SportSearch): CompiledQuery<CatalogueSport & { total: string }> {
  const where: RawBuilder<unknown>[] = [];
  let join = sql``;
  let order = sql`s.id`;
  const q = search.q?.trim();
  if (q) {
    // The trigram index of sport_search_names serves the LIKE; the locale keeps the served name only.
    join = sql`join sport_search_names n on n.sport_id = s.id and n.locale = x.locale
      and n.folded like '%' || catalogue_fold(${likeEscape(q)}) || '%'`;
    order = sql`n.folded like catalogue_fold(${likeEscape(q)}) || '%' desc, n.folded, s.id`;
  }
  if (search.tag !== undefined) where.push(sql`s.tags @> array[${search.tag}]::text[]`);
  if (search.vendorId !== undefined) where.push(sql`s.vendor_id = ${search.vendorId}`);
  if (search.parentsOnly) where.push(sql`s.parent_id is null`);
  const query = sql<CatalogueSport & { total: string }>`
    select *, count(*) over () as total from (${sportSelect(search.languages, join, where)}
    order by ${order}) m
    limit ${search.size} offset ${(search.page - 1) * search.size}`;
  return query.compile(db);
}

function checkSearch(search: SportSearch): void {
  const q = search.q;
  if (q !== undefined && (q.trim() === '' || q.length > MAX_QUERY_LENGTH))
    throw invalid([{ path: 'query.q', message: `Give 1 to ${MAX_QUERY_LENGTH} characters to search for` }]);
}

const clean = ({ total: _total, ...sport }: CatalogueSport & { total?: string }): CatalogueSport => sport;

/** One page of the catalogue: sports matching every given filter, with the count of all matches. */
export async function searchSports(
  db: Db,
  search: SportSearch,
): Promise<{ items: CatalogueSport[]; page: number; limit: number; total: number }> {
  checkSearch(search);
  const { rows } = await db.executeQuery(compileSportList(db, search));
  let total = Number(rows[0]?.total ?? 0);
  if (rows.length === 0 && search.page > 1) {
    const all = await db.executeQuery(compileSportList(db, { ...search, page: 1, size: 1 }));
    total = Number(all.rows[0]?.total ?? 0);
  }
  return { items: rows.map(clean), page: search.page, limit: search.size, total };
}

/** Sports by id (for `include=`), in id order; unknown or inactive ids are left out. */
export async function sportsByIds(
  db: Db,
  ids: readonly number[],
  languages: readonly CatalogueLanguage[],
): Promise<CatalogueSport[]> {
  if (ids.length === 0) return [];
  const { rows } = await sportSelect(languages, sql``, [sql`s.id = any(${[...ids]}::int[])`]).execute(db);
  return (rows as CatalogueSport[]).sort((a, b) => a.id - b.id);
}

/** A sport by id (all digits) or slug. */
export async function sportByIdOrSlug(
  db: Db,
  key: string,
  languages: readonly CatalogueLanguage[],
): Promise<CatalogueSport> {
  const byId = /^\d{1,9}$/.test(key);
  const { rows } = await sportSelect(languages, sql``, [
    byId ? sql`s.id = ${Number(key)}` : sql`s.slug = ${key.toLowerCase()}`,
  ]).execute(db);
  const sport = rows[0] as CatalogueSport | undefined;
  if (!sport) throw notFoundError(`Unknown sport ${key}`);
  return sport;
}

/** The related sports of `include=children,parent`: each once, primary sports excluded by the serializer. */
export async function relatedSports(
  db: Db,
  sports: readonly CatalogueSport[],
  include: ReadonlySet<string>,
  languages: readonly CatalogueLanguage[],
): Promise<CatalogueSport[]> {
  const ids = new Set<number>();
  for (const s of sports) {
    if (include.has('children')) for (const c of s.children) ids.add(c);
    if (include.has('parent') && s.parent_id !== null) ids.add(s.parent_id);
  }
  return sportsByIds(db, [...ids], languages);
}
