import { type Kysely, sql } from 'kysely';

/**
 * Places, their per-locale notes, their activities, and the offline city table used to fill
 * city/province. Indexes are chosen for search (docs/places.md, "Search performance"):
 * GiST on geom (bbox `&&`, KNN `<->`) and on geom::geography (ST_DWithin in metres),
 * activities by place and by sport, GIN on tags.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    create table places (
      id bigint generated always as identity primary key,
      uuid uuid not null unique default gen_random_uuid(),
      slug text not null unique,
      name text not null,
      geom geometry(Geometry, 4326) not null,
      -- The posted GeoJSON when it has elevations (geom is 2D): returned as sent. Null otherwise.
      geojson jsonb,
      address text,
      city text,
      province text,
      country text not null check (country ~ '^[A-Z]{2}$'),
      email text,
      phone text,
      website text,
      booking_url text,
      social_username text,
      external_place_id text,
      created_by uuid references accounts (id) on delete set null,
      status text not null default 'pending' check (status in ('pending', 'approved', 'rejected')),
      featured boolean not null default false,
      partner text,
      created_at timestamptz not null default now(),
      updated_at timestamptz not null default now()
    )`.execute(db);
  await sql`create unique index places_external_idx on places (external_place_id) where external_place_id is not null`.execute(
    db,
  );
  // Search reads approved places only: partial indexes are smaller and skip the status test.
  await sql`create index places_geom_idx on places using gist (geom) where status = 'approved'`.execute(db);
  await sql`create index places_geog_idx on places using gist ((geom::geography)) where status = 'approved'`.execute(
    db,
  );
  await sql`create index places_created_by_idx on places (created_by, status)`.execute(db);
  await sql`create index places_created_at_idx on places (created_at) where status = 'approved'`.execute(db);
  await sql`create index places_partner_idx on places (partner) where partner is not null`.execute(db);

  await sql`
    create table place_notes (
      place_id bigint not null references places (id) on delete cascade,
      locale text not null,
      text text not null,
      primary key (place_id, locale)
    )`.execute(db);

  await sql`
    create table place_activities (
      id bigint generated always as identity primary key,
      place_id bigint not null references places (id) on delete cascade,
      sport_id integer not null references sports (id),
      tags text[] not null default '{}',
      attributes jsonb not null default '{}',
      photo_reference text,
      created_by uuid references accounts (id) on delete set null,
      image_path text,
      thumbnail_path text,
      created_at timestamptz not null default now(),
      updated_at timestamptz not null default now(),
      unique (place_id, sport_id)
    )`.execute(db);
  await sql`create index place_activities_sport_idx on place_activities (sport_id, place_id)`.execute(db);
  await sql`create index place_activities_tags_idx on place_activities using gin (tags)`.execute(db);

  await sql`
    create table geo_cities (
      id integer primary key,
      name text not null,
      country text not null,
      admin_code text,
      population integer not null,
      geom geometry(Point, 4326) not null
    )`.execute(db);
  await sql`create index geo_cities_geom_idx on geo_cities using gist (geom)`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const t of ['geo_cities', 'place_activities', 'place_notes', 'places']) await db.schema.dropTable(t).execute();
}
