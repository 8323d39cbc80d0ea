import { type Kysely, sql } from 'kysely';

/**
 * Idempotency keys (docs/idempotency.md): the first answer to a creating POST sent with an
 * `Idempotency-Key`, kept per caller and key so that a retry gets it again instead of creating
 * a second object.
 *
 * - `scope`: whose key it is (`account:<id>`, or `client:<id>` for a caller without an account);
 *   `account_id` repeats the account so that deleting it deletes its keys and their answers.
 * - `owner`: the claim of the request working on it; only that request may record or release it.
 * - `lease_until`: a request in flight renews it; one whose process died loses the key once it
 *   lapses, so a retry can proceed.
 * - the request's fingerprint (method, path with query, content type, the headers the operation
 *   declares, SHA-256 and size of the body bytes as sent): a reuse of the key for another request
 *   is refused. The body's digest is known once the body was read, so only done rows carry it.
 * - the answer (status, content type, the headers the operation set, body bytes), once done.
 *
 * Indexes: the key itself (primary key); the expiry job's scan; the account's keys (the cascade).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    create table idempotency_keys (
      scope text not null,
      key text not null check (length(key) between 1 and 255),
      account_id uuid references accounts (id) on delete cascade,
      owner uuid not null,
      state text not null default 'in_flight' check (state in ('in_flight', 'done')),
      request_method text not null,
      request_path text not null,
      request_type text not null,
      request_headers jsonb not null default '{}',
      body_sha256 bytea check (length(body_sha256) = 32),
      body_size bigint check (body_size >= 0),
      response_status smallint check (response_status between 200 and 599),
      response_type text,
      response_headers jsonb,
      response_body bytea,
      created_at timestamptz not null default now(),
      lease_until timestamptz not null,
      expires_at timestamptz not null,
      primary key (scope, key),
      check ((state = 'done') = (body_sha256 is not null and body_size is not null
        and response_status is not null and response_headers is not null and response_body is not null))
    )`.execute(db);
  await sql`create index idempotency_keys_expiry_idx on idempotency_keys (expires_at)`.execute(db);
  await sql`create index idempotency_keys_account_idx on idempotency_keys (account_id) where account_id is not null`.execute(
    db,
  );
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`drop table idempotency_keys`.execute(db);
}
