import { type Kysely, sql } from 'kysely';

/**
 * Athletes share with each other (docs/tracking-sharing-users.md):
 *
 * - `share_users`: `user_id` shares their activities with `friend_id` (v2.26 ShareUser, whose
 *   `user` is the friend). One way: a share each way makes two rows. The friend accepts or refuses
 *   it (`status`); only an accepted share opens anything. One row per pair (the unique key is what
 *   a second request collides with). The (friend_id, status, user_id) index serves what a user
 *   received: their friends list and the feed's owners.
 * - `activities.visibility` / `map_visibility` (`private`, `followers`, `public`) and
 *   `map_hidden_ends` (metres of the track hidden at each end from everyone but the owner), with
 *   the user's defaults for new activities on `tracking_users`. Constant defaults: no table rewrite.
 *   The partial index (user_id, startdate, id) of the activities a friend may see serves a
 *   friend's list and the feed (one index-only range per friend); (startdate, id) of the public
 *   ones, the public list.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  const visibility = (column: string) =>
    sql.raw(`${column} text not null default 'private' check (${column} in ('private', 'followers', 'public'))`);
  const hiddenEnds = (column: string) =>
    sql.raw(`${column} integer not null default 0 check (${column} between 0 and 10000)`);
  await sql`
    alter table activities
      add column ${visibility('visibility')},
      add column ${visibility('map_visibility')},
      add column ${hiddenEnds('map_hidden_ends')}`.execute(db);
  await sql`
    alter table tracking_users
      add column ${visibility('default_visibility')},
      add column ${visibility('default_map_visibility')},
      add column ${hiddenEnds('default_map_hidden_ends')}`.execute(db);
  await sql`
    create index activities_shared_startdate_idx on activities (user_id, startdate, id)
      where visibility <> 'private'`.execute(db);
  await sql`
    create index activities_public_startdate_idx on activities (startdate, id)
      where visibility = 'public'`.execute(db);

  await sql`
    create table share_users (
      id text primary key default replace(gen_random_uuid()::text, '-', ''),
      user_id text not null references tracking_users (id) on delete cascade,
      friend_id text not null references tracking_users (id) on delete cascade,
      status text not null default 'pending' check (status in ('pending', 'accepted', 'refused')),
      created_at timestamptz not null default now(),
      updated_at timestamptz not null default now(),
      check (user_id <> friend_id),
      unique (user_id, friend_id)
    )`.execute(db);
  await sql`create index share_users_user_idx on share_users (user_id, updated_at, id)`.execute(db);
  await sql`create index share_users_friend_idx on share_users (friend_id, status, user_id)`.execute(db);
  await sql`create index share_users_friend_updated_idx on share_users (friend_id, updated_at, id)`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`drop table share_users`.execute(db);
  await sql`drop index activities_public_startdate_idx`.execute(db);
  await sql`drop index activities_shared_startdate_idx`.execute(db);
  await sql`
    alter table tracking_users drop column default_visibility, drop column default_map_visibility,
      drop column default_map_hidden_ends`.execute(db);
  await sql`
    alter table activities drop column visibility, drop column map_visibility, drop column map_hidden_ends`.execute(db);
}
