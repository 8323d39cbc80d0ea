import { type Kysely, sql } from 'kysely';

/**
 * Public clients (RFC 8252 native and mobile apps, docs/accounts.md): they cannot keep a secret,
 * so the token endpoint takes none from them (`none`) and PKCE is required instead. Their
 * `secret_hash` stays: it authenticates the developer's key-management calls, never a token request.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`alter table oauth_clients
              add column token_endpoint_auth_method text not null default 'client_secret_basic'
                check (token_endpoint_auth_method in ('client_secret_basic', 'none'))`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`alter table oauth_clients drop column token_endpoint_auth_method`.execute(db);
}
