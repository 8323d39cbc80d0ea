import { type Kysely, sql } from 'kysely';

/**
 * Gear, goals and challenges (docs/tracking-gear-goals-challenges.md):
 *
 * - `activities.equipment_ids`: the gear an activity was done with (v2.26 `equipments`), ids of
 *   the user's `user_equipments`. An array, no foreign key: deleting gear takes its id out of
 *   the user's activities in the same transaction.
 * - `user_equipments`: a user's gear, with its totals (distance, duration, moving time, elevation
 *   gain, activity count) kept by the records job, so that the gear list is one read of the
 *   (user_id, created_at, id) index. `numeric` totals: added and subtracted exactly. `alerted_at`:
 *   when the `alert_distance` event was sent (once per alert distance). The lower(brand) and
 *   lower(name) indexes serve the autocomplete's prefix search over everyone's gear.
 * - `user_measure_goals`: a target value of a measure datatype; integer ids, as v2.26 has them.
 * - `user_challenges`: a target of distance (5), ascent (18), duration (24) or activity count (98)
 *   between two instants, optionally of one sport; `result` and `achieved_at` (with the activity
 *   that crossed the target and the running total there) are kept by the records job;
 *   `notified_at` marks the one `challenge_achieved` event; `version` is bumped by every change
 *   a client makes.
 * - `activity_progress_state`: what each activity added to its gear and challenges (its sport,
 *   start and end, gear and values), so that a change subtracts exactly that and adds the new
 *   values, whatever the user's history; its (user_id, ended_at, activity_id) index is the order
 *   in which a challenge's target is crossed. No foreign key to the activity: the row outlives a
 *   deleted activity until the job subtracts it. It goes with the user (cascade).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`alter table activities add column equipment_ids text[] not null default '{}'`.execute(db);
  await sql`
    create table user_equipments (
      id text primary key default replace(gen_random_uuid()::text, '-', ''),
      user_id text not null references tracking_users (id) on delete cascade,
      category text not null,
      brand text not null check (length(brand) between 2 and 128),
      name text not null check (length(name) between 2 and 128),
      start_date timestamptz,
      sports_auto_assigned integer[] not null default '{}',
      retired boolean not null default false,
      alert_distance numeric check (alert_distance > 0),
      alerted_at timestamptz,
      distance numeric not null default 0,
      duration numeric not null default 0,
      moving_time numeric not null default 0,
      elevation_gain numeric not null default 0,
      activities integer not null default 0,
      created_at timestamptz not null default now(),
      updated_at timestamptz not null default now()
    )`.execute(db);
  await sql`create index user_equipments_user_idx on user_equipments (user_id, created_at, id)`.execute(db);
  await sql`create index user_equipments_brand_idx on user_equipments (lower(brand) text_pattern_ops)`.execute(db);
  await sql`create index user_equipments_name_idx on user_equipments (lower(name) text_pattern_ops)`.execute(db);

  await sql`
    create table user_measure_goals (
      id bigint generated always as identity primary key,
      user_id text not null references tracking_users (id) on delete cascade,
      datatype_id integer not null references datatypes (id),
      initial double precision,
      goal double precision not null,
      startdate timestamptz not null,
      created_at timestamptz not null default now(),
      updated_at timestamptz not null default now()
    )`.execute(db);
  await sql`create index user_measure_goals_user_idx on user_measure_goals (user_id, startdate, id)`.execute(db);

  await sql`
    create table user_challenges (
      id text primary key default replace(gen_random_uuid()::text, '-', ''),
      user_id text not null references tracking_users (id) on delete cascade,
      name text not null check (length(name) between 1 and 255),
      target_datatype_id integer not null check (target_datatype_id in (5, 18, 24, 98)),
      target numeric check (target > 0),
      started_at timestamptz not null,
      ended_at timestamptz not null,
      sport_id integer references sports (id),
      version integer not null default 1,
      result numeric not null default 0,
      achieved_at timestamptz,
      achieved_activity_id text,
      achieved_total numeric,
      notified_at timestamptz,
      created_at timestamptz not null default now(),
      updated_at timestamptz not null default now(),
      check (ended_at > started_at)
    )`.execute(db);
  await sql`create index user_challenges_user_idx on user_challenges (user_id, started_at, id)`.execute(db);

  await sql`
    create table activity_progress_state (
      activity_id text primary key,
      user_id text not null references tracking_users (id) on delete cascade,
      version integer not null,
      sport_id integer not null,
      startdate timestamptz not null,
      ended_at timestamptz not null,
      equipment_ids text[] not null,
      distance numeric not null,
      duration numeric not null,
      moving_time numeric not null,
      elevation_gain numeric not null,
      updated_at timestamptz not null default now()
    )`.execute(db);
  await sql`
    create index activity_progress_state_user_end_idx on activity_progress_state (user_id, ended_at, activity_id)`.execute(
    db,
  );
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`drop table activity_progress_state`.execute(db);
  await sql`drop table user_challenges`.execute(db);
  await sql`drop table user_measure_goals`.execute(db);
  await sql`drop table user_equipments`.execute(db);
  await sql`alter table activities drop column equipment_ids`.execute(db);
}
