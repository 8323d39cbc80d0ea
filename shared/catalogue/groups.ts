import { sql } from 'kysely';
import type { Db } from '../db/database.ts';
import { pageOf } from '../db/paging.ts';
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

/** The groups, each named in the first of `languages` it has a name in (English otherwise), in id order. */
function groupsQuery(db: Db, languages: readonly CatalogueLanguage[]) {
  return db
    .selectFrom('sport_groups as g')
    .crossJoinLateral(
      db
        .selectNoFrom(
          sql<string>`coalesce(
            (select l from unnest(${[...languages]}::text[]) with ordinality u(l, o) where g.names ? l order by o limit 1),
            'en')`.as('locale'),
        )
        .as('x'),
    )
    .select([
      'g.id',
      'g.slug',
      'x.locale',
      sql<string>`g.names ->> x.locale`.as('name'),
      sql<number[]>`coalesce((select array_agg(m.sport_id order by m.sport_id) from sport_group_members m
        join sports s on s.id = m.sport_id and s.active where m.group_id = g.id), '{}')`.as('sports'),
    ])
    .orderBy('g.id');
}

/** Every group, a page at a time, with the count of all groups. */
export async function listGroups(
  db: Db,
  languages: readonly CatalogueLanguage[],
  page: number,
  size: number,
): Promise<{ items: CatalogueGroup[]; page: number; limit: number; total: number }> {
  const { items, total } = await pageOf(groupsQuery(db, languages), { page, limit: size });
  return { items, page, limit: size, total };
}

/** A group by id (all digits) or slug. */
export async function groupBySlugOrId(
  db: Db,
  key: string,
  languages: readonly CatalogueLanguage[],
): Promise<CatalogueGroup> {
  const q = groupsQuery(db, languages);
  const group = await (/^\d{1,9}$/.test(key)
    ? q.where('g.id', '=', Number(key))
    : q.where('g.slug', '=', key.toLowerCase())
  ).executeTakeFirst();
  if (!group) throw notFoundError(`Unknown group ${key}`);
  return group;
}
