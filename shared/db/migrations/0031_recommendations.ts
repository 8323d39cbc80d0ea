import { type Kysely, sql } from 'kysely';

/**
 * Sport recommendations, written by the `recommendations` worker job (shared/catalogue/
 * recommendations-compute.ts) and only read by the API: the co-practice of each pair of sports,
 * the popularity of each sport around each city and its density of places in each country, and
 * the number of places of each sport (the fallback order). See docs/recommendations.md.
 *
 * No foreign key to geo_cities: the seed reloads that table (same GeoNames ids) and must not
 * cascade into these rows; the next computation replaces them anyway.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    create table sport_copractice (
      sport_id integer not null references sports (id) on delete cascade,
      other_id integer not null references sports (id) on delete cascade,
      -- places + people practising both sports
      score integer not null,
      places integer not null,
      people integer not null,
      primary key (sport_id, other_id)
    )`.execute(db);
  await sql`create index sport_copractice_rank_idx on sport_copractice (sport_id, score desc, other_id)`.execute(db);

  await sql`
    create table city_sport_popularity (
      city_id integer not null,
      sport_id integer not null references sports (id) on delete cascade,
      places integer not null,
      primary key (city_id, sport_id)
    )`.execute(db);
  await sql`create index city_sport_popularity_rank_idx on city_sport_popularity (city_id, places desc, sport_id)`.execute(
    db,
  );

  await sql`
    create table country_sport_density (
      country text not null check (country ~ '^[A-Z]{2}$'),
      sport_id integer not null references sports (id) on delete cascade,
      places integer not null,
      area_km2 double precision not null,
      -- places per km²
      density double precision not null,
      primary key (country, sport_id)
    )`.execute(db);
  await sql`create index country_sport_density_rank_idx on country_sport_density (country, density desc, sport_id)`.execute(
    db,
  );

  await sql`
    create table sport_popularity (
      sport_id integer primary key references sports (id) on delete cascade,
      places integer not null
    )`.execute(db);

  // One row: when the last computation committed and what it wrote.
  await sql`
    create table recommendations_runs (
      id boolean primary key default true check (id),
      computed_at timestamptz not null,
      duration_ms integer not null,
      counts jsonb not null
    )`.execute(db);

  // The city of a location path value is looked up by country and name, case-insensitively;
  // the computation finds the cities around each place through the geography index.
  await sql`create index geo_cities_country_name_idx on geo_cities (country, lower(name))`.execute(db);
  await sql`create index geo_cities_geog_idx on geo_cities using gist ((geom::geography))`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`drop index geo_cities_geog_idx`.execute(db);
  await sql`drop index geo_cities_country_name_idx`.execute(db);
  for (const t of [
    'recommendations_runs',
    'sport_popularity',
    'country_sport_density',
    'city_sport_popularity',
    'sport_copractice',
  ])
    await db.schema.dropTable(t).execute();
}
