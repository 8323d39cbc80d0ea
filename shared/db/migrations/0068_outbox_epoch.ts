import { type Kysely, sql } from 'kysely';

/**
 * BullMQ job ids that a restored database cannot mistake for the old Redis's
 * (shared/queue/outbox-epoch.ts, docs/operations.md "Backup and restore"):
 * - `outbox_epoch` holds the epoch of this database and the identity of the PostgreSQL database
 *   it was set in (system identifier, database oid, timeline): a dump restored elsewhere, a
 *   backup brought back or a promoted replica shows another identity, and the relay starts a new
 *   epoch then. The identity is null until a relay first runs, so a fresh database (or one
 *   copied from a template that never ran) starts at epoch 0 without a change.
 * - `outbox.epoch` is the epoch the row was relayed in, `outbox.reruns` how often the reconciler
 *   found its job completed in Redis while the row was not done here (run again under a new id).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    alter table outbox
      add column epoch bigint not null default 0,
      add column reruns int not null default 0`.execute(db);
  await sql`
    create table outbox_epoch (
      singleton boolean primary key default true check (singleton),
      epoch bigint not null default 0,
      database_identity text,
      changed_at timestamptz not null default now()
    )`.execute(db);
  await sql`insert into outbox_epoch default values`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`drop table outbox_epoch`.execute(db);
  await sql`alter table outbox drop column epoch, drop column reruns`.execute(db);
}
