import { type Kysely, sql } from 'kysely';

/**
 * The tracking data service (docs/tracking.md): its users, the device referentials, devices,
 * activities with their streams, measures and records.
 *
 * Streams are not one row per sample: an activity's GPS track is one PostGIS geometry whose Z is
 * the elevation (NaN when unknown) and M the elapsed second, and its datastream is one array of
 * elapsed seconds with, per datatype, one array of values aligned on it (NULL where a sample has
 * no value of that datatype). A 24-hour activity at 1 Hz is then a few rows of a few MB each.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  const id = sql.raw(`text primary key default replace(gen_random_uuid()::text, '-', '')`);
  const stamps = sql.raw(`created_at timestamptz not null default now(),
      updated_at timestamptz not null default now()`);

  // A tracking user is an account seen through the tracking service: its id is the account's ldid.
  await sql`
    create table tracking_users (
      id text primary key,
      account_id uuid not null unique references accounts (id) on delete cascade,
      one_id text,
      gender integer,
      roles text[] not null default '{ROLE_USER}',
      language text check (language ~ '^[a-z]{2}$'),
      country text check (country ~ '^[A-Z]{2}$'),
      image_url text,
      birth_date date,
      schedule_delete timestamptz,
      ${stamps}
    )`.execute(db);

  await sql`
    create table connectors (
      id integer primary key,
      names jsonb not null,
      connector text not null unique,
      version text,
      active boolean not null default true,
      ${stamps}
    )`.execute(db);
  await sql`
    create table device_models (
      id integer primary key,
      names jsonb not null,
      brand text not null,
      serial_range text,
      active boolean not null default true,
      ${stamps}
    )`.execute(db);
  await sql`
    create table firmwares (
      id integer primary key,
      model_id integer not null references device_models (id),
      version text not null,
      revision_date timestamptz,
      is_last_firmware boolean not null default false,
      active boolean not null default true,
      ${stamps}
    )`.execute(db);
  await sql`create index firmwares_model_idx on firmwares (model_id)`.execute(db);

  await sql`
    create table user_devices (
      id ${id},
      user_id text not null references tracking_users (id) on delete cascade,
      serial text not null check (serial ~ '^[A-Za-z0-9-]{1,128}$'),
      model_id integer not null references device_models (id),
      firmware_id integer not null references firmwares (id),
      ownership integer not null default 0,
      last_connected_at timestamptz,
      ${stamps}
    )`.execute(db);
  await sql`create index user_devices_user_idx on user_devices (user_id, created_at, id)`.execute(db);

  await sql`
    create table activities (
      id ${id},
      user_id text not null references tracking_users (id) on delete cascade,
      sport_id integer not null references sports (id),
      user_device_id text references user_devices (id) on delete set null,
      connector_id integer references connectors (id),
      name text,
      startdate timestamptz not null,
      duration integer not null check (duration >= 0),
      comment text,
      user_session text,
      corrected_elevation boolean not null default false,
      images text[] not null default '{}',
      thumbnail text,
      tags text[],
      global_challenge text,
      manual boolean not null,
      location jsonb,
      data_summaries jsonb not null default '{}',
      available_datatypes integer[] not null default '{}',
      track_flag boolean not null default false,
      datastream_flag boolean not null default false,
      latitude double precision,
      longitude double precision,
      elevation double precision,
      version integer not null default 1,
      ${stamps}
    )`.execute(db);
  await sql`create index activities_user_startdate_idx on activities (user_id, startdate, id)`.execute(db);
  await sql`create index activities_user_created_idx on activities (user_id, created_at, id)`.execute(db);
  await sql`create index activities_user_sport_idx on activities (user_id, sport_id, startdate)`.execute(db);
  await sql`create index activities_device_idx on activities (user_device_id) where user_device_id is not null`.execute(
    db,
  );

  await sql`
    create table activity_tracks (
      activity_id text primary key references activities (id) on delete cascade,
      points integer not null,
      track geometry(GeometryZM, 4326) not null
        check (geometrytype(track) in ('LINESTRING', 'POINT'))
    )`.execute(db);
  await sql`create index activity_tracks_track_idx on activity_tracks using gist (track)`.execute(db);

  await sql`
    create table activity_datastreams (
      activity_id text primary key references activities (id) on delete cascade,
      elapsed integer[] not null
    )`.execute(db);
  await sql`
    create table activity_stream_channels (
      activity_id text not null references activity_datastreams (activity_id) on delete cascade,
      datatype_id integer not null references datatypes (id),
      "values" double precision[] not null,
      primary key (activity_id, datatype_id)
    )`.execute(db);

  await sql`
    create table user_measures (
      id ${id},
      user_id text not null references tracking_users (id) on delete cascade,
      datatype_id integer not null references datatypes (id),
      value double precision not null,
      date timestamptz not null,
      ${stamps}
    )`.execute(db);
  await sql`create index user_measures_user_idx on user_measures (user_id, datatype_id, date)`.execute(db);
  await sql`create index user_measures_user_date_idx on user_measures (user_id, date)`.execute(db);

  // One row per (user, sport, type, datatype): the best value of that user. The records job keeps it.
  await sql`
    create table user_records (
      id ${id},
      user_id text not null references tracking_users (id) on delete cascade,
      sport_id integer not null references sports (id),
      type text not null,
      datatype_id integer not null references datatypes (id),
      activity_id text not null references activities (id) on delete cascade,
      value double precision not null,
      date timestamptz not null,
      ${stamps},
      unique (user_id, sport_id, type, datatype_id)
    )`.execute(db);
  await sql`create index user_records_activity_idx on user_records (activity_id)`.execute(db);

  await sql`
    create table tracking_uploads (
      id ${id},
      user_id text not null references tracking_users (id) on delete cascade,
      path text not null unique,
      content_type text not null,
      bytes integer not null,
      created_at timestamptz not null default now()
    )`.execute(db);
  await sql`create index tracking_uploads_user_idx on tracking_uploads (user_id, created_at)`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const t of [
    'tracking_uploads',
    'user_records',
    'user_measures',
    'activity_stream_channels',
    'activity_datastreams',
    'activity_tracks',
    'activities',
    'user_devices',
    'firmwares',
    'device_models',
    'connectors',
    'tracking_users',
  ])
    await sql`drop table ${sql.table(t)}`.execute(db);
}
