import { type RawBuilder, sql } from 'kysely';
import type { Db } from '../db/database.ts';
import { notFoundError } from '../errors.ts';
import type { CatalogueLanguage } from './locale.ts';

/** A sport group as the catalogue shows it. */
export interface CatalogueGroup {
  id: number;
  slug: string;
  name: string;
  locale: string;
  /** Ids of its active sports, ascending. */
  sports: number[];
}

function groupSelect(languages: readonly CatalogueLanguage[], where: RawBuilder<unknown>) {
  return sql<CatalogueGroup>`
    select g.id, g.slug, x.locale, g.names ->> x.locale as name,
      coalesce((select array_agg(m.sport_id order by m.sport_id) from sport_group_members m
        join sports s on s.id = m.sport_id and s.active where m.group_id = g.id), '{}') as sports
    from sport_groups g
    cross join lateral (
      select coalesce(
        (select l from unnest(${[...languages]}::text[]) with ordinality u(l, o) where g.names ? l order by o limit 1),
        'en') as locale
    ) x
    where ${where}
    order by g.id`;
}

/** Every group, a page at a time, with the count of all groups. */
export async function listGroups(
  db: Db,
  languages: readonly CatalogueLanguage[],
  page: number,
  size: number,
): Promise<{ items: CatalogueGroup[]; page: number; limit: number; total: number }> {
  const [{ rows }, count] = await Promise.all([
    sql<CatalogueGroup>`${groupSelect(languages, sql`true`)} limit ${size} offset ${(page - 1) * size}`.execute(db),
    db
      .selectFrom('sport_groups')
      .select((eb) => eb.fn.countAll<string>().as('n'))
      .executeTakeFirstOrThrow(),
  ]);
  return { items: rows, page, limit: size, total: Number(count.n) };
}

/** A group by id (all digits) or slug. */
export async function groupBySlugOrId(
  db: Db,
  key: string,
  languages: readonly CatalogueLanguage[],
): Promise<CatalogueGroup> {
  const byId = /^\d{1,9}$/.test(key);
  const { rows } = await groupSelect(
    languages,
    byId ? sql`g.id = ${Number(key)}` : sql`g.slug = ${key.toLowerCase()}`,
  ).execute(db);
  const group = rows[0];
  if (!group) throw notFoundError(`Unknown group ${key}`);
  return group;
}
