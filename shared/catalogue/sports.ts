import { CompiledQuery, Kysely } from 'kysely';
import type pg from 'pg';
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

/** The numbered parameters of one statement (`$1`, `$2`...), in the order they are added. */
class Params {
  readonly values: unknown[] = [];
  add(value: unknown): string {
    this.values.push(value);
    return `$${this.values.length}`;
  }
}

/**
 * The one SELECT of the catalogue: active sports with the language served for each (the first of
 * the client's languages the sport has a name in, else English), their name and description in
 * that language and their children. `join` and `where` complete it.
 */
function sportSelect(ps: Params, languages: readonly CatalogueLanguage[], join: string, where: string[]): string {
  const wanted = ps.add([...languages]);
  return `
    select s.id, s.slug, s.parent_id, s.vendor_id, s.tags, x.locale,
      s.names ->> x.locale as name,
      s.descriptions ->> x.locale as description,
      coalesce((select array_agg(c.id order by c.id) from sports c where c.parent_id = s.id and c.active), '{}') as children
    from sports s
    cross join lateral (
      select coalesce(
        (select l from unnest(${wanted}::text[]) with ordinality u(l, o) where s.names ? l order by o limit 1),
        'en') as locale
      offset 0 -- evaluated once per sport, not once per use
    ) x
    ${join}
    where ${['s.active', ...where].join(' and ')}`;
}

/** A statement for pg: its prepared-statement name, text and parameters. */
export interface SportStatement {
  name?: string;
  text: string;
  values: unknown[];
}

/**
 * The list query (the API runs it, and bench/catalogue-search.ts runs the same statement). Its
 * text depends only on which filters are present, never on their values, so each of those 16
 * shapes has its own prepared-statement name: pg prepares it once per connection and PostgreSQL
 * skips parsing and analysing it on every search.
 */
export function sportListStatement(search: SportSearch): SportStatement {
  const ps = new Params();
  const where: string[] = [];
  let join = '';
  let order = 's.id';
  const q = search.q?.trim();
  if (q) {
    // The trigram index of sport_search_names serves the LIKE; the locale keeps the served name only.
    const typed = ps.add(likeEscape(q));
    join = `join sport_search_names n on n.sport_id = s.id and n.locale = x.locale
      and n.folded like '%' || catalogue_fold(${typed}) || '%'`;
    order = `n.folded like catalogue_fold(${typed}) || '%' desc, n.folded, s.id`;
  }
  if (search.tag !== undefined) where.push(`s.tags @> array[${ps.add(search.tag)}]::text[]`);
  if (search.vendorId !== undefined) where.push(`s.vendor_id = ${ps.add(search.vendorId)}`);
  if (search.parentsOnly) where.push('s.parent_id is null');
  const select = sportSelect(ps, search.languages, join, where);
  const text = `
    select *, count(*) over () as total from (${select}
    order by ${order}) m
    limit ${ps.add(search.size)} offset ${ps.add((search.page - 1) * search.size)}`;
  const shape =
    (q ? 1 : 0) |
    (search.tag !== undefined ? 2 : 0) |
    (search.vendorId !== undefined ? 4 : 0) |
    (search.parentsOnly ? 8 : 0);
  const name = statementName(shape, text);
  return { ...(name ? { name } : {}), text, values: ps.values };
}

/**
 * The prepared-statement name of a list shape. pg refuses a name reused for another text, so the
 * first text of each shape is kept and compared (a few hundred bytes): one that ever differed
 * would run unnamed rather than fail.
 */
const SHAPE_TEXTS = new Map<number, string>();
function statementName(shape: number, text: string): string | undefined {
  const known = SHAPE_TEXTS.get(shape);
  if (known === undefined) SHAPE_TEXTS.set(shape, text);
  else if (known !== text) return undefined;
  return `catalogue_sports_${shape}`;
}

/** The list query as Kysely runs it (same text and parameters), e.g. to EXPLAIN it. */
export function compileSportList(_db: Db, search: SportSearch): CompiledQuery<CatalogueSport & { total: number }> {
  const { text, values } = sportListStatement(search);
  return CompiledQuery.raw(text, values) as CompiledQuery<CatalogueSport & { total: number }>;
}

function checkSearch(search: SportSearch): void {
  const q = search.q;
  if (q !== undefined && (q.trim() === '' || q.length > MAX_QUERY_LENGTH))
    throw invalid([{ path: 'query.q', message: `Give 1 to ${MAX_QUERY_LENGTH} characters to search for` }]);
}

/**
 * Where the list runs: a pg pool (the API: as a prepared statement, straight through the pool) or
 * a Kysely instance (tests, scripts: the same text, unnamed).
 */
export type SportListDb = Db | Pick<pg.Pool, 'query'>;

async function listRows(db: SportListDb, search: SportSearch): Promise<(CatalogueSport & { total: number })[]> {
  const statement = sportListStatement(search);
  if (db instanceof Kysely)
    return (await db.executeQuery(CompiledQuery.raw(statement.text, statement.values))).rows as (CatalogueSport & {
      total: number;
    })[];
  return (await db.query<CatalogueSport & { total: number }>(statement)).rows;
}

const clean = ({ total: _total, ...sport }: CatalogueSport & { total?: number }): CatalogueSport => sport;

/** One page of the catalogue: sports matching every given filter, with the count of all matches. */
export async function searchSports(
  db: SportListDb,
  search: SportSearch,
): Promise<{ items: CatalogueSport[]; page: number; limit: number; total: number }> {
  checkSearch(search);
  const rows = await listRows(db, search);
  let total = Number(rows[0]?.total ?? 0);
  if (rows.length === 0 && search.page > 1) {
    const all = await listRows(db, { ...search, page: 1, size: 1 });
    total = Number(all[0]?.total ?? 0);
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
  const ps = new Params();
  const text = sportSelect(ps, languages, '', [`s.id = any(${ps.add([...ids])}::int[])`]);
  const { rows } = await db.executeQuery<CatalogueSport>(CompiledQuery.raw(text, ps.values));
  return [...rows].sort((a, b) => a.id - b.id);
}

/** A sport by id (all digits) or slug. */
export async function sportByIdOrSlug(
  db: Db,
  key: string,
  languages: readonly CatalogueLanguage[],
): Promise<CatalogueSport> {
  const byId = /^\d{1,9}$/.test(key);
  const ps = new Params();
  const text = sportSelect(ps, languages, '', [
    byId ? `s.id = ${ps.add(Number(key))}` : `s.slug = ${ps.add(key.toLowerCase())}`,
  ]);
  const { rows } = await db.executeQuery<CatalogueSport>(CompiledQuery.raw(text, ps.values));
  const sport = rows[0];
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
