import { type Kysely, sql } from 'kysely';

/**
 * The sign-ins of the account page and the queue dashboard (api/accounts/account-session.ts):
 * the cookie holds a random id, this table its SHA-256, so that a cookie cannot be made from
 * public data (an account id, its token version) even by someone who holds COOKIE_KEYS, and a
 * sign-in can be ended on the server. `token_version` is the account's at sign-in: "sign out
 * everywhere", a role or password change end the sign-in as they end tokens.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    create table account_sessions (
      id_hash text primary key,
      account_id uuid not null references accounts (id) on delete cascade,
      token_version int not null,
      created_at timestamptz not null default now(),
      expires_at timestamptz not null
    )`.execute(db);
  await sql`create index account_sessions_account_idx on account_sessions (account_id)`.execute(db);
  await sql`create index account_sessions_expires_idx on account_sessions (expires_at)`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`drop table account_sessions`.execute(db);
}
