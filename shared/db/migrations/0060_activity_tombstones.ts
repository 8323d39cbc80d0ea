import { type Kysely, sql } from 'kysely';

/**
 * The change feed of the tracking collections (docs/tracking-sync.md).
 *
 * - `activity_tombstones`: one row per deleted activity (its id, its user, when), written in the
 *   transaction of the deletion and kept TRACKING_TOMBSTONE_TTL_S, so a client learns what went
 *   since its last sync. Activity ids are random and never reused: a tombstone is for good.
 *   The user's go with the tracking user (cascade) and with the account deletion's own step.
 * - `updatedAt[...]` and `order[updatedAt]` read one index range per user on each collection:
 *   (user_id, updated_at, id), the order of a sync read (oldest change first, ties by id).
 *
 * Indexes of the tombstones: the caller's by time (the listing), all by time (the expiry job).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    create table activity_tombstones (
      activity_id text primary key,
      user_id text not null references tracking_users (id) on delete cascade,
      deleted_at timestamptz not null default now()
    )`.execute(db);
  await sql`create index activity_tombstones_user_idx on activity_tombstones (user_id, deleted_at, activity_id)`.execute(
    db,
  );
  await sql`create index activity_tombstones_expiry_idx on activity_tombstones (deleted_at)`.execute(db);
  await sql`create index activities_user_updated_idx on activities (user_id, updated_at, id)`.execute(db);
  await sql`create index user_measures_user_updated_idx on user_measures (user_id, updated_at, id)`.execute(db);
  await sql`create index user_devices_user_updated_idx on user_devices (user_id, updated_at, id)`.execute(db);
  await sql`create index user_records_user_updated_idx on user_records (user_id, updated_at, id)`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`drop index user_records_user_updated_idx`.execute(db);
  await sql`drop index user_devices_user_updated_idx`.execute(db);
  await sql`drop index user_measures_user_updated_idx`.execute(db);
  await sql`drop index activities_user_updated_idx`.execute(db);
  await sql`drop table activity_tombstones`.execute(db);
}
