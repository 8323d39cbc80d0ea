import { type Kysely, sql } from 'kysely';

/**
 * Account lifecycle (docs/accounts-lifecycle.md): deleting an account for good, and the export of
 * all of a user's personal data.
 *
 * - `account_deletions`: an account whose deletion has started (its `deleting` state). Written
 *   before the first row goes and deleted with the account row, last (the cascade): a run that
 *   dies midway leaves it, and the next run resumes. `deleted` counts what went, per table. One
 *   run at a time works on an account: it holds `run_token` until `run_until`, renewed by each of
 *   its transactions, so another run takes over only once a dead run's lease has lapsed.
 * - `account_deletion_files`: files under STORAGE_DIR still to remove, each written in the
 *   transaction that deletes the row naming it, and removed once the file is gone. A file is thus
 *   always named by a row or by this table, whenever the run dies.
 * - `tracking_users_schedule_delete_idx`: the purge's scan of due accounts.
 * - the `created_by` indexes of place activities and partners, and the owner of clients: the
 *   deletion anonymises them by account, and the foreign keys' `set null` looks them up too.
 * - `tracking_exports.kind`: `activities` (POST /v2/exports) or `personal_data`
 *   (POST /v2/users/{id}/export_personal_data, the whole of the user's data).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    create table account_deletions (
      account_id uuid primary key references accounts (id) on delete cascade,
      requested_by text not null check (requested_by in ('schedule', 'operator')),
      due_at timestamptz,
      started_at timestamptz not null default now(),
      step text not null default 'started',
      deleted jsonb not null default '{}',
      run_token uuid,
      run_until timestamptz
    )`.execute(db);
  await sql`
    create table account_deletion_files (
      account_id uuid not null references account_deletions (account_id) on delete cascade,
      path text not null,
      primary key (account_id, path)
    )`.execute(db);
  await sql`create index tracking_users_schedule_delete_idx on tracking_users (schedule_delete)
    where schedule_delete is not null`.execute(db);
  await sql`create index place_activities_created_by_idx on place_activities (created_by)
    where created_by is not null`.execute(db);
  await sql`create index partners_created_by_idx on partners (created_by) where created_by is not null`.execute(db);
  await sql`create index oauth_clients_owner_idx on oauth_clients (owner_account_id)
    where owner_account_id is not null`.execute(db);
  await sql`alter table tracking_exports add column kind text not null default 'activities'
    check (kind in ('activities', 'personal_data'))`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`alter table tracking_exports drop column kind`.execute(db);
  await sql`drop index oauth_clients_owner_idx`.execute(db);
  await sql`drop index partners_created_by_idx`.execute(db);
  await sql`drop index place_activities_created_by_idx`.execute(db);
  await sql`drop index tracking_users_schedule_delete_idx`.execute(db);
  await sql`drop table account_deletion_files`.execute(db);
  await sql`drop table account_deletions`.execute(db);
}
