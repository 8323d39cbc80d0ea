import { type Kysely, sql } from 'kysely';

/**
 * Jobs a user or staff can watch (v2.26 `/v2/jobs`, docs/tracking-files.md "Jobs"): a file
 * imported on the workers, a bulk import (a parent with a child per file of its zip), a batch
 * recompute. A row is written with its outbox job in one transaction; the stored file, if any,
 * is under STORAGE_DIR (`file_path`) from before the row until the job ends. `params` keeps what
 * the caller asked (the import's fields, the recompute's scope), `result` and `error` what came
 * of it; a parent counts its children's ends (`done_count`, `failed_count` of `total`).
 *
 * Indexes: the user's list newest first; a parent's children in their order.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    create table jobs (
      id text primary key check (id ~ '^[0-9a-f]{32}$'),
      user_id text not null references tracking_users (id) on delete cascade,
      parent_id text references jobs (id) on delete cascade,
      type text not null check (type in ('activity_import', 'bulk_import', 'records_recompute',
        'thumbnails_rebuild', 'statistics_rebuild')),
      state text not null default 'pending' check (state in ('pending', 'running', 'done', 'failed',
        'cancelled', 'skipped')),
      params jsonb not null default '{}',
      file_path text,
      file_name text,
      content_type text,
      position integer,
      activity_id text,
      result jsonb,
      error jsonb,
      total integer check (total >= 0),
      done_count integer not null default 0 check (done_count >= 0),
      failed_count integer not null default 0 check (failed_count >= 0),
      attempts integer not null default 0,
      created_at timestamptz not null default now(),
      updated_at timestamptz not null default now(),
      started_at timestamptz,
      finished_at timestamptz
    )`.execute(db);
  await sql`create index jobs_user_idx on jobs (user_id, created_at desc, id desc)`.execute(db);
  await sql`create index jobs_parent_idx on jobs (parent_id, position) where parent_id is not null`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`drop table jobs`.execute(db);
}
