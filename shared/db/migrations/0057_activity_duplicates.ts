import { type Kysely, sql } from 'kysely';

/**
 * Duplicate activities (docs/tracking-activities.md, "Duplicates"): a user's activity is a
 * duplicate of another of theirs with the same start second and duration, or imported from a file
 * with the same SHA-256.
 *
 * - `file_sha256`: the digest of the file an activity was imported from (null for a JSON create).
 * - `kept_duplicate`: created with `duplicates=keep`; such a row never collides with another.
 *
 * One unique index per rule is both the lookup of the check and its guard against two creates at
 * once: its last key is '' for every activity but a kept one, whose own id makes it unique. The
 * start is compared to the second in UTC (`at time zone 'UTC'` makes the expression immutable,
 * which an index needs); queries must write the same expression to use the index.
 *
 * Activities stored before this rule may already be duplicates: all but the first created of each
 * group are marked kept, so the index can be built and nothing is lost.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    alter table activities
      add column file_sha256 bytea check (length(file_sha256) = 32),
      add column kept_duplicate boolean not null default false`.execute(db);
  await sql`
    update activities set kept_duplicate = true
    where id in (
      select id from (
        select id, row_number() over (
          partition by user_id, date_trunc('second', startdate at time zone 'UTC'), duration
          order by created_at, id) as n
        from activities) d
      where n > 1)`.execute(db);
  await sql`
    create unique index activities_user_start_duration_key on activities (
      user_id, (date_trunc('second', startdate at time zone 'UTC')), duration,
      (case when kept_duplicate then id else '' end))`.execute(db);
  await sql`
    create unique index activities_user_file_sha256_key on activities (
      user_id, file_sha256, (case when kept_duplicate then id else '' end))
    where file_sha256 is not null`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`drop index activities_user_file_sha256_key`.execute(db);
  await sql`drop index activities_user_start_duration_key`.execute(db);
  await sql`alter table activities drop column kept_duplicate, drop column file_sha256`.execute(db);
}
