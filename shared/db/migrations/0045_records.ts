import { type Kysely, sql } from 'kysely';

/**
 * The records job's working table (docs/tracking-records.md): each activity's best values, one
 * row per (activity, type, datatype), written when the activity is created or changed and gone
 * with it (cascade). A user's record of a (sport, type, datatype) is then the first row of one
 * index range: `score` is larger for a better value whatever the record's direction, ties go to
 * the earliest `startdate`, then to the smallest activity id. Deleting or changing the record's
 * activity promotes the next row. `user_id`, `sport_id` and `startdate` are copies of the
 * activity's, rewritten with its efforts by the job that follows each change.
 *
 * No foreign keys besides the activity: the user's and the sport's rows outlive the activity's
 * anyway, and each insert would pay for the checks.
 *
 * `activity_records_state` says which version of each activity its efforts (possibly none) were
 * computed from, under which settings (a digest of the sport families, the datatypes' record ways
 * and the algorithm's version): a job delivered twice, or `npm run records:recompute` run twice,
 * finds the work done.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    create table activity_best_efforts (
      activity_id text not null references activities (id) on delete cascade,
      type text not null check (type = 'all' or type ~ '^distance\\.[1-9][0-9]{0,6}m$'),
      datatype_id integer not null,
      user_id text not null,
      sport_id integer not null,
      value double precision not null check (value > '-Infinity' and value < 'Infinity'),
      score double precision not null check (score > '-Infinity' and score < 'Infinity'),
      startdate timestamptz not null,
      primary key (activity_id, type, datatype_id)
    )`.execute(db);
  await sql`
    create index activity_best_efforts_best_idx
    on activity_best_efforts (user_id, sport_id, type, datatype_id, score desc, startdate, activity_id)`.execute(db);
  await sql`
    create table activity_records_state (
      activity_id text primary key references activities (id) on delete cascade,
      version integer not null,
      settings text not null,
      computed_at timestamptz not null default now()
    )`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`drop table activity_records_state`.execute(db);
  await sql`drop table activity_best_efforts`.execute(db);
}
