import { type Kysely, sql } from 'kysely';

/**
 * Revoked grants (docs/accounts.md, refresh tokens): when oidc-provider revokes a grant (a
 * refresh token reused or revoked, a code replayed, a sign-out), the JWT access tokens already
 * issued from it carry its id (`grant_id`) and are refused until the last of them has expired.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    create table revoked_grants (
      grant_id text primary key,
      expires_at timestamptz not null
    )`.execute(db);
  await sql`create index revoked_grants_expires_idx on revoked_grants (expires_at)`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`drop table revoked_grants`.execute(db);
}
