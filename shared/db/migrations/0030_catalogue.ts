import { type Kysely, sql } from 'kysely';

/**
 * The sports catalogue on the shared sports referential: localized descriptions, the legacy
 * vendor id and catalogue tags on `sports`, and an indexed name search. `catalogue_fold` is the
 * one normalization (unaccent + lower), declared immutable so it can be indexed; every localized
 * name is kept folded in `sport_search_names` (one row per sport and language, maintained by a
 * trigger on `sports.names`) with a trigram index for substring search.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`create extension if not exists unaccent`.execute(db);
  await sql`create extension if not exists pg_trgm`.execute(db);
  await sql`
    create or replace function catalogue_fold(text) returns text
    language sql immutable strict parallel safe
    as $$ select lower(public.unaccent('public.unaccent'::regdictionary, $1)) $$`.execute(db);
  await db.schema
    .alterTable('sports')
    .addColumn('descriptions', 'jsonb', (c) => c.notNull().defaultTo(sql`'{}'::jsonb`))
    .addColumn('vendor_id', 'integer', (c) => c.unique())
    .addColumn('tags', sql`text[]`, (c) => c.notNull().defaultTo(sql`'{}'::text[]`))
    .execute();
  await sql`create index sports_tags_idx on sports using gin (tags)`.execute(db);
  await db.schema
    .createTable('sport_search_names')
    .addColumn('sport_id', 'integer', (c) => c.notNull().references('sports.id').onDelete('cascade'))
    .addColumn('locale', 'text', (c) => c.notNull())
    .addColumn('folded', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('sport_search_names_pk', ['sport_id', 'locale'])
    .execute();
  await sql`create index sport_search_names_trgm_idx on sport_search_names using gin (folded gin_trgm_ops)`.execute(db);
  await sql`
    create function sport_search_names_sync() returns trigger language plpgsql as $$
    begin
      delete from sport_search_names where sport_id = new.id;
      insert into sport_search_names (sport_id, locale, folded)
        select new.id, key, catalogue_fold(value) from jsonb_each_text(new.names);
      return new;
    end $$`.execute(db);
  await sql`
    create trigger sport_search_names_sync after insert or update of names on sports
    for each row execute function sport_search_names_sync()`.execute(db);
  await sql`
    insert into sport_search_names (sport_id, locale, folded)
    select s.id, n.key, catalogue_fold(n.value) from sports s, jsonb_each_text(s.names) n`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`drop trigger if exists sport_search_names_sync on sports`.execute(db);
  await sql`drop function if exists sport_search_names_sync()`.execute(db);
  await db.schema.dropTable('sport_search_names').execute();
  await db.schema.alterTable('sports').dropColumn('tags').dropColumn('vendor_id').dropColumn('descriptions').execute();
  await sql`drop function if exists catalogue_fold(text)`.execute(db);
}
