import { type Kysely, sql } from 'kysely';

/**
 * The `{city}_{cc}` form of a recommendation location (docs/recommendations.md): `montreal_ca`
 * names Montréal, CA. `catalogue_city_key` folds a city name the way such a value is built:
 * `catalogue_fold` (unaccent + lower, migration 0030), then every run of characters that are not
 * letters or digits (spaces, hyphens, underscores, apostrophes) made one `_`, none at the ends.
 * The same function reads the request's value, so `saint-etienne_fr` and `saint_etienne_fr`
 * both find Saint-Étienne. Indexed by country like the comma form's `lower(name)` (0031);
 * queries must write the same expression to use the index.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    create or replace function catalogue_city_key(text) returns text
    language sql immutable strict parallel safe
    as $$ select trim(both '_' from regexp_replace(public.catalogue_fold($1), '[^[:alnum:]]+', '_', 'g')) $$`.execute(
    db,
  );
  await sql`create index geo_cities_country_key_idx on geo_cities (country, catalogue_city_key(name))`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`drop index geo_cities_country_key_idx`.execute(db);
  await sql`drop function catalogue_city_key(text)`.execute(db);
}
