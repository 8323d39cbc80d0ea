import { type Kysely, sql } from 'kysely';

/**
 * Bulk exports of a user's activities (docs/tracking-exports.md): one row per request, written
 * with its `exports/user-export` outbox job; the job builds the zip under STORAGE_DIR and marks
 * the row done with its size and expiry. The id names the file (`exports/<id>.zip`, 128 random
 * bits in hex); the download token is the secret of the browser link (256 random bits,
 * base64url), kept in clear like a share token, since whoever reads this table reads the
 * activities too. Deleting the user deletes the rows; the cleanup job sweeps their files.
 *
 * Indexes: the user's list newest first; at most one export in progress per user (a partial
 * unique index, so two concurrent requests cannot both start one); the cleanup's two scans
 * (expired rows, stale ones in progress).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    create table tracking_exports (
      id text primary key check (id ~ '^[0-9a-f]{32}$'),
      user_id text not null references tracking_users (id) on delete cascade,
      format text not null default 'gpx' check (format in ('gpx')),
      status text not null default 'pending' check (status in ('pending', 'running', 'done', 'failed')),
      download_token text not null check (download_token ~ '^[A-Za-z0-9_-]{43}$'),
      activity_count integer check (activity_count >= 0),
      processed_count integer not null default 0 check (processed_count >= 0),
      size_bytes bigint check (size_bytes >= 0),
      file_path text,
      error text,
      attempts integer not null default 0,
      created_at timestamptz not null default now(),
      started_at timestamptz,
      finished_at timestamptz,
      expires_at timestamptz,
      check ((status = 'done') = (file_path is not null)),
      check ((status in ('done', 'failed')) = (expires_at is not null))
    )`.execute(db);
  await sql`create index tracking_exports_user_idx on tracking_exports (user_id, created_at desc, id desc)`.execute(db);
  await sql`create unique index tracking_exports_in_progress_idx on tracking_exports (user_id)
    where status in ('pending', 'running')`.execute(db);
  await sql`create index tracking_exports_expiry_idx on tracking_exports (expires_at) where expires_at is not null`.execute(
    db,
  );
  await sql`create index tracking_exports_stale_idx on tracking_exports (created_at)
    where status in ('pending', 'running')`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`drop table tracking_exports`.execute(db);
}
