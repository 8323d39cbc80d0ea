import { type Kysely, sql } from 'kysely';

/**
 * Public shares of tracking activities (docs/tracking-sharing-thumbnails.md). The token is the
 * share's id and the whole secret of its public page: 32 random bytes in base64url (256 bits;
 * the check refuses anything shorter than 128 bits' worth). Deleting the activity or its user
 * deletes its shares. Indexes: a user's shares newest first (the list), an activity's shares
 * (the `activity` filter, the per-activity limit, the cascade).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    create table share_activities (
      token text primary key check (token ~ '^[A-Za-z0-9_-]{22,}$'),
      user_id text not null references tracking_users (id) on delete cascade,
      activity_id text not null references activities (id) on delete cascade,
      created_at timestamptz not null default now()
    )`.execute(db);
  await sql`create index share_activities_user_idx on share_activities (user_id, created_at, token)`.execute(db);
  await sql`create index share_activities_activity_idx on share_activities (activity_id, created_at)`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`drop table share_activities`.execute(db);
}
