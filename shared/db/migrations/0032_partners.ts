import { type Kysely, sql } from 'kysely';

/**
 * Community partners (docs/partners.md): groups where sports are practised, each at one point
 * with the sports it serves. `slug` is the name the places service's `partner` field and filter
 * use. `geog` is derived from lat/lng, and its GiST index serves the `nearby[]` KNN order.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    create table partners (
      id bigserial primary key,
      uuid uuid not null unique default gen_random_uuid(),
      slug text not null unique,
      title text not null,
      source text not null,
      description text,
      link text not null,
      featured boolean not null default false,
      partner boolean not null default false,
      city text,
      province text,
      country text,
      lat double precision not null check (lat between -90 and 90),
      lng double precision not null check (lng between -180 and 180),
      geog geography(Point, 4326) generated always as (st_setsrid(st_makepoint(lng, lat), 4326)::geography) stored,
      radius integer,
      image_ref text,
      user_id bigint not null,
      created_by uuid references accounts (id) on delete set null,
      created_at timestamptz not null default now(),
      updated_at timestamptz not null default now()
    )`.execute(db);
  await sql`create index partners_geog_idx on partners using gist (geog)`.execute(db);
  await sql`
    create table partner_sports (
      partner_id bigint not null references partners (id) on delete cascade,
      sport_id integer not null references sports (id) on delete cascade,
      primary key (partner_id, sport_id)
    )`.execute(db);
  await sql`create index partner_sports_sport_idx on partner_sports (sport_id, partner_id)`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`drop table partner_sports`.execute(db);
  await sql`drop table partners`.execute(db);
}
