import { sql } from 'kysely';
import type { Db } from '../db/database.ts';
import { invalid, notFoundError } from '../errors.ts';
import { assertStaff, type Caller } from './permissions.ts';

/** A sport as the places service shows it: English name, allowed place tags and filters. */
export interface PlaceSport {
  id: number;
  name: string;
  tags: string[];
  filters: string[];
}

/** What staff may allow on a sport's activities: tags or filters (each has its own lists). */
export type RuleKind = 'tags' | 'filters';

const RULE_TABLES = {
  tags: { table: 'sport_place_tags', column: 'tag_slug', known: 'place_tags', one: 'tag' },
  filters: { table: 'sport_place_filters', column: 'filter_slug', known: 'place_filters', one: 'filter' },
} as const;

/** Every sport (or one) with its rules, in one query. */
export async function placeSports(db: Db, id?: number): Promise<PlaceSport[]> {
  let q = db
    .selectFrom('sports as s')
    .select([
      's.id',
      sql<string>`coalesce(s.names->>'en', s.slug)`.as('name'),
      sql<string[]>`array(select tag_slug from sport_place_tags t where t.sport_id = s.id order by tag_slug)`.as(
        'tags',
      ),
      sql<
        string[]
      >`array(select filter_slug from sport_place_filters f where f.sport_id = s.id order by filter_slug)`.as(
        'filters',
      ),
    ])
    .orderBy('s.id');
  if (id !== undefined) q = q.where('s.id', '=', id);
  return q.execute();
}

export async function placeSport(db: Db, id: number): Promise<PlaceSport> {
  const [sport] = await placeSports(db, id);
  if (!sport) throw notFoundError(`Unknown sport ${id}`);
  return sport;
}

/** Staff allow a known tag or filter on a sport's activities (idempotent); returns the new list. */
export async function allowOnSport(
  db: Db,
  caller: Caller,
  kind: RuleKind,
  sportId: number,
  slug: string,
): Promise<string[]> {
  assertStaff(caller);
  const { known, one } = RULE_TABLES[kind];
  await placeSport(db, sportId);
  const exists = await db.selectFrom(known).select('slug').where('slug', '=', slug).executeTakeFirst();
  if (!exists) {
    const all = (await db.selectFrom(known).select('slug').orderBy('slug').execute()).map((r) => r.slug);
    throw invalid([{ path: 'body.slug', message: `unknown ${one} "${slug}"; known: ${all.join(', ')}` }]);
  }
  if (kind === 'tags')
    await db
      .insertInto('sport_place_tags')
      .values({ sport_id: sportId, tag_slug: slug })
      .onConflict((oc) => oc.doNothing())
      .execute();
  else
    await db
      .insertInto('sport_place_filters')
      .values({ sport_id: sportId, filter_slug: slug })
      .onConflict((oc) => oc.doNothing())
      .execute();
  return (await placeSport(db, sportId))[kind];
}

/** Disallows it; activities keep the values they already have. */
export async function disallowOnSport(
  db: Db,
  caller: Caller,
  kind: RuleKind,
  sportId: number,
  slug: string,
): Promise<void> {
  assertStaff(caller);
  const { table, column, one } = RULE_TABLES[kind];
  const r = await db.deleteFrom(table).where('sport_id', '=', sportId).where(column, '=', slug).executeTakeFirst();
  if (!r.numDeletedRows) throw notFoundError(`Sport ${sportId} does not allow ${one} "${slug}"`);
}
