import { type Kysely, sql } from 'kysely';

/**
 * Consent and revocation (docs/accounts.md):
 * - a client is first-party (registered by staff, no consent screen) or third-party (the default);
 * - what a user allowed each third-party client, remembered until they revoke it;
 * - a token version per account: every token carries it, and changing the password or the roles,
 *   disabling the account or ending its sessions bumps it, so tokens issued before stop working;
 * - revoked token ids (RFC 7009), kept until the token would have expired;
 * - how an account came to be, so an operator never grants roles to an account someone else
 *   registered without saying so.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`alter table oauth_clients add column first_party boolean not null default false`.execute(db);
  await sql`alter table accounts
              add column token_version integer not null default 0,
              add column disabled_at timestamptz,
              add column created_via text not null default 'registration'
                check (created_via in ('registration', 'operator', 'external'))`.execute(db);
  await sql`update accounts set created_via = 'external' where external_subject is not null`.execute(db);
  await sql`
    create table oauth_consents (
      account_id uuid not null references accounts (id) on delete cascade,
      client_id text not null references oauth_clients (id) on delete cascade,
      scopes text[] not null,
      granted_at timestamptz not null default now(),
      revoked_at timestamptz,
      primary key (account_id, client_id)
    )`.execute(db);
  await sql`create index oauth_consents_client_idx on oauth_consents (client_id)`.execute(db);
  await sql`
    create table revoked_tokens (
      jti text primary key,
      expires_at timestamptz not null
    )`.execute(db);
  await sql`create index revoked_tokens_expires_idx on revoked_tokens (expires_at)`.execute(db);
  // Grants and sessions of an account are found by the account id inside oidc-provider's payload.
  await sql`create index oidc_payloads_account_idx on oidc_payloads ((payload->>'accountId'))`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`drop index oidc_payloads_account_idx`.execute(db);
  await sql`drop table revoked_tokens`.execute(db);
  await sql`drop table oauth_consents`.execute(db);
  await sql`alter table accounts drop column token_version, drop column disabled_at, drop column created_via`.execute(
    db,
  );
  await sql`alter table oauth_clients drop column first_party`.execute(db);
}
