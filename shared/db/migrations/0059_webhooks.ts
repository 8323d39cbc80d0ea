import { type Kysely, sql } from 'kysely';

/**
 * Webhooks (docs/webhooks.md): `/v2/user_web_hooks` and their deliveries.
 *
 * - `user_web_hooks`: a user's subscription. `secret` signs deliveries (Standard Webhooks,
 *   `whsec_` + base64 of 32 random bytes); after a rotation `previous_secret` signs too until
 *   `previous_secret_until`. The failure state is the hook's: `consecutive_failures` and
 *   `start_failure_date` (v2.26's names), `retry_at` (no attempt before, while failing) and
 *   `probe_until` (the one delivery trying a failing hook again); `disabled_at` and
 *   `disabled_reason` once it failed past WEBHOOKS_DISABLE_AFTER_S.
 * - `webhook_events`: what happened, written in the transaction of the write that caused it and
 *   only when a hook of the user listens to its type. `seq` orders the events of one `subject`
 *   (the IRI whose events must arrive in order); `data` is the resource as the API served it then.
 * - `webhook_deliveries`: one per (event, hook), made by the event's fan-out job with its own
 *   job. It is sent once every earlier delivery of its hook and subject has ended (`seq`,
 *   docs/webhooks.md "Order"): the partial index finds those still open.
 * - `webhook_attempts`: each HTTP attempt, the last 100 per hook kept for its owner.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    create table user_web_hooks (
      id text primary key default replace(gen_random_uuid()::text, '-', ''),
      user_id text not null references tracking_users (id) on delete cascade,
      url text not null,
      events text[] not null,
      secret text not null,
      previous_secret text,
      previous_secret_until timestamptz,
      consecutive_failures int not null default 0,
      start_failure_date timestamptz,
      retry_at timestamptz,
      probe_until timestamptz,
      disabled_at timestamptz,
      disabled_reason text,
      created_at timestamptz not null default now(),
      updated_at timestamptz not null default now()
    )`.execute(db);
  await sql`create index user_web_hooks_user_idx on user_web_hooks (user_id, created_at, id)`.execute(db);
  await sql`
    create table webhook_events (
      id text primary key,
      seq bigint generated always as identity unique,
      user_id text not null references tracking_users (id) on delete cascade,
      type text not null,
      subject text not null,
      resource text not null,
      data jsonb not null,
      fanned_out boolean not null default false,
      occurred_at timestamptz not null default now()
    )`.execute(db);
  await sql`create index webhook_events_fan_out_idx on webhook_events (user_id, seq) where not fanned_out`.execute(db);
  await sql`create index webhook_events_occurred_idx on webhook_events (occurred_at)`.execute(db);
  await sql`
    create table webhook_deliveries (
      id text primary key,
      hook_id text not null references user_web_hooks (id) on delete cascade,
      event_id text not null references webhook_events (id) on delete cascade,
      seq bigint not null,
      subject text not null,
      state text not null default 'queued' check (state in ('queued', 'delivered', 'failed')),
      attempts int not null default 0,
      next_attempt_at timestamptz,
      finished_at timestamptz,
      unique (hook_id, event_id)
    )`.execute(db);
  await sql`create index webhook_deliveries_open_idx on webhook_deliveries (hook_id, subject, seq)
    where state = 'queued'`.execute(db);
  await sql`create index webhook_deliveries_event_idx on webhook_deliveries (event_id)`.execute(db);
  await sql`
    create table webhook_attempts (
      id bigint generated always as identity primary key,
      hook_id text not null references user_web_hooks (id) on delete cascade,
      event_id text not null,
      event_type text not null,
      attempted_at timestamptz not null default now(),
      status_code int,
      duration_ms int not null,
      error text
    )`.execute(db);
  await sql`create index webhook_attempts_hook_idx on webhook_attempts (hook_id, id desc)`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`drop table webhook_attempts`.execute(db);
  await sql`drop table webhook_deliveries`.execute(db);
  await sql`drop table webhook_events`.execute(db);
  await sql`drop table user_web_hooks`.execute(db);
}
