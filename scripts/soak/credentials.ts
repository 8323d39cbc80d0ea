import { ensureAccountWithRoles } from '../../shared/accounts/accounts.ts';
import { issueApiKey } from '../../shared/accounts/api-keys.ts';
import { registerClient } from '../../shared/accounts/clients.ts';
import { issueOperatorToken } from '../../shared/auth/operator-tokens.ts';
import type { Db } from '../../shared/db/database.ts';
import type { Role } from '../../shared/db/schema/accounts.ts';

/** A soak account with what its requests send. */
export interface SoakUser {
  ldid: string;
  /** accounts.number: what a partner's `user_id` names. */
  number: number;
  /** Authorization and x-api-key (the tracking service wants both). */
  headers: Record<string, string>;
}

/**
 * Accounts with a bearer token of every scope and the API key of one first-party client, as
 * `npm run account` makes them (scripts/account.ts): one app, many users.
 */
export async function soakUsers(
  db: Db,
  apiUrl: string,
  groups: Record<string, { count: number; roles: Role[] }>,
  ttlSeconds: number,
): Promise<Record<string, SoakUser[]>> {
  const client = await registerClient(db, {
    client_name: 'soak',
    redirect_uris: ['http://127.0.0.1/callback'],
    firstParty: true,
  });
  const { api_key: apiKey } = await issueApiKey(db, client.client_id, 'soak');
  const issuer = { issuer: apiUrl, AUTH_AUDIENCE: process.env.AUTH_AUDIENCE || 'sports-api' };
  const out: Record<string, SoakUser[]> = {};
  for (const [group, { count, roles }] of Object.entries(groups)) {
    out[group] = [];
    for (let i = 0; i < count; i++) {
      const { account } = await ensureAccountWithRoles(db, { email: `soak-${group}-${i}@example.org`, roles });
      const token = await issueOperatorToken(db, issuer, {
        accountId: account.id,
        clientId: client.client_id,
        ttlSeconds,
      });
      out[group].push({
        ldid: account.ldid,
        number: Number(account.number),
        headers: { authorization: `Bearer ${token}`, 'x-api-key': apiKey },
      });
    }
  }
  return out;
}
