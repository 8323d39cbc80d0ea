import type { Config } from '../config.ts';
import type { Db } from '../db/database.ts';
import { type AccessTokenClaims, signAccessToken } from './access-token.ts';
import { API_SCOPES } from './scopes.ts';
import { ensureSigningKeys } from './signing-keys.ts';

/**
 * An access token an operator mints without a browser (`npm run account`, benchmarks, tests):
 * issued to a client of ours (the x-api-key it goes with must be that client's), at the
 * account's current token version, with every API scope unless fewer are given.
 */
export async function issueOperatorToken(
  db: Db,
  config: Pick<Config, 'issuer' | 'AUTH_AUDIENCE'>,
  input: {
    accountId: string;
    clientId: string;
    scopes?: readonly string[];
    ttlSeconds?: number;
    claims?: Record<string, unknown>;
    issuer?: string;
    audience?: string;
  },
): Promise<string> {
  const account = await db
    .selectFrom('accounts')
    .select(['id', 'roles', 'ldid', 'token_version', 'number'])
    .where('id', '=', input.accountId)
    .executeTakeFirstOrThrow();
  const [key] = await ensureSigningKeys(db);
  if (!key) throw new Error('no signing key');
  const claims: AccessTokenClaims = {
    ...input.claims,
    sub: account.id,
    roles: account.roles,
    ldid: account.ldid,
    user_id: account.number,
    ver: account.token_version,
    client_id: input.clientId,
    scope: (input.scopes ?? API_SCOPES).join(' '),
  };
  return signAccessToken(key, claims, {
    issuer: input.issuer ?? config.issuer,
    audience: input.audience ?? config.AUTH_AUDIENCE,
    ...(input.ttlSeconds !== undefined ? { ttlSeconds: input.ttlSeconds } : {}),
  });
}
