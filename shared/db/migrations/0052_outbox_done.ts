import { type Kysely, sql } from 'kysely';

/**
 * An outbox row is done when its job completes, not when it is relayed (docs/operations.md):
 * - `done_at`: set by the worker once the job's effect has committed.
 * - `failed_at`: set when the job failed its last attempt (it waits for an operator); done wins.
 * - `checked_at`: when the reconciler last looked for the row's job in Redis, so a row whose job
 *   is still queued is looked at once per OUTBOX_RECONCILE_AFTER_S, not at every relay pass.
 * Rows already sent are taken as done: they were relayed under the former promise, and
 * reconciling a week of them at once would replay every job of that week.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    alter table outbox
      add column done_at timestamptz,
      add column failed_at timestamptz,
      add column checked_at timestamptz`.execute(db);
  await sql`update outbox set done_at = sent_at where sent_at is not null`.execute(db);
  // The worker marks a job's rows by job id; only rows not done are ever looked up.
  await sql`create index outbox_open_job_idx on outbox (queue, job_id) where done_at is null`.execute(db);
  // The reconciler and the outbox lag read the open rows, oldest first.
  await sql`create index outbox_open_idx on outbox (id) where done_at is null and failed_at is null`.execute(db);
  // The purge of finished rows, and the failed-rows gauge.
  await sql`create index outbox_done_at_idx on outbox (done_at) where done_at is not null`.execute(db);
  await sql`create index outbox_failed_at_idx on outbox (failed_at) where done_at is null and failed_at is not null`.execute(
    db,
  );
  await sql`drop index outbox_sent_at_idx`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`create index outbox_sent_at_idx on outbox (sent_at) where sent_at is not null`.execute(db);
  await sql`drop index outbox_failed_at_idx`.execute(db);
  await sql`drop index outbox_done_at_idx`.execute(db);
  await sql`drop index outbox_open_idx`.execute(db);
  await sql`drop index outbox_open_job_idx`.execute(db);
  await sql`alter table outbox drop column done_at, drop column failed_at, drop column checked_at`.execute(db);
}
