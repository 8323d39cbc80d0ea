import { type Kysely, sql } from 'kysely';

/**
 * Statistics by period (docs/tracking-statistics.md): a rollup of each user's activities per
 * week, month and year, kept by the records job after each activity change.
 *
 * - `tracking_users.timezone`: the IANA zone the user's periods are cut in (null: UTC).
 * - `user_sumups`: per (user, type, period, sport or null for every sport, datatype) the summed
 *   value and how many activities add to it; a row goes when that count reaches 0. `period` is
 *   the first local day of the period (weeks start on Monday). The unique key (nulls not
 *   distinct, so the every-sport rows are unique too) is also the index of the reads: a user's
 *   periods of one type in date order. `value` is numeric: adding and subtracting the summaries
 *   (decimal numbers in jsonb) is exact, so a value never drifts from the sum of its activities.
 * - `activity_sumup_state`: what each activity added (its sport, zone, period starts and values,
 *   from which version): a change subtracts it and adds the new one, whatever the user's history.
 *   No foreign key to the activity: the row outlives a deleted activity until the job subtracts
 *   it. It goes with the user (cascade).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`alter table tracking_users add column timezone text check (length(timezone) <= 64)`.execute(db);
  await sql`
    create table user_sumups (
      id text primary key default replace(gen_random_uuid()::text, '-', ''),
      user_id text not null references tracking_users (id) on delete cascade,
      type text not null check (type in ('week', 'month', 'year')),
      period date not null,
      sport_id integer,
      datatype_id integer not null,
      value numeric not null,
      activities integer not null,
      created_at timestamptz not null default now(),
      updated_at timestamptz not null default now(),
      check (case type
        when 'week' then extract(isodow from period) = 1
        when 'month' then extract(day from period) = 1
        else extract(doy from period) = 1 end)
    )`.execute(db);
  await sql`
    create unique index user_sumups_key on user_sumups (user_id, type, period, sport_id nulls first, datatype_id)
    nulls not distinct`.execute(db);
  await sql`
    create table activity_sumup_state (
      activity_id text primary key,
      user_id text not null references tracking_users (id) on delete cascade,
      version integer not null,
      sport_id integer not null,
      timezone text not null,
      week date not null,
      month date not null,
      year date not null,
      datatype_ids integer[] not null,
      "values" numeric[] not null check (cardinality("values") = cardinality(datatype_ids)),
      updated_at timestamptz not null default now()
    )`.execute(db);
  await sql`create index activity_sumup_state_user_idx on activity_sumup_state (user_id)`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`drop table activity_sumup_state`.execute(db);
  await sql`drop table user_sumups`.execute(db);
  await sql`alter table tracking_users drop column timezone`.execute(db);
}
