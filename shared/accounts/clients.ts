import { randomBytes } from 'node:crypto';
import type { Db } from '../db/database.ts';
import { hashSecret, newSecret, secretMatches } from './secrets.ts';

export const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]']);

/** Why a redirect URI is refused, or undefined when it is fine: https, or http on a loopback host. */
export function redirectUriProblem(uri: string): string | undefined {
  const url = URL.parse(uri);
  if (!url) return 'must be an absolute URL';
  if (url.hash || uri.includes('#')) return 'must not contain a fragment';
  if (url.username || url.password) return 'must not contain credentials';
  if (url.protocol === 'https:') return undefined;
  if (url.protocol === 'http:' && LOOPBACK_HOSTS.has(url.hostname)) return undefined;
  return 'must use https (http is allowed only for loopback hosts: localhost, 127.0.0.1, [::1])';
}

export interface RegisteredClient {
  client_id: string;
  client_secret: string;
  client_name: string;
  redirect_uris: string[];
  client_id_issued_at: number;
  /** Registered by staff (or an operator): users are not asked to consent. */
  first_party: boolean;
}

/**
 * Registers a client. Clients are third-party unless `firstParty` is set, which only staff (with
 * the `admin` scope) and operators may ask: a third-party client's users always see a consent page.
 */
export async function registerClient(
  db: Db,
  input: { client_name: string; redirect_uris: string[]; ownerAccountId?: string | undefined; firstParty?: boolean },
): Promise<RegisteredClient> {
  const id = `cl_${randomBytes(12).toString('base64url')}`;
  const secret = newSecret('cs');
  const row = await db
    .insertInto('oauth_clients')
    .values({
      id,
      name: input.client_name,
      secret_hash: hashSecret(secret),
      redirect_uris: input.redirect_uris,
      owner_account_id: input.ownerAccountId ?? null,
      first_party: input.firstParty ?? false,
    })
    .returning(['created_at'])
    .executeTakeFirstOrThrow();
  return {
    client_id: id,
    client_secret: secret,
    client_name: input.client_name,
    redirect_uris: input.redirect_uris,
    client_id_issued_at: Math.floor(row.created_at.getTime() / 1000),
    first_party: input.firstParty ?? false,
  };
}

export interface ClientRecord {
  id: string;
  name: string;
  secretHash: string;
  redirectUris: string[];
  firstParty: boolean;
}

export async function findClient(db: Db, id: string): Promise<ClientRecord | undefined> {
  if (!/^[\w-]{1,100}$/.test(id)) return undefined;
  const row = await db
    .selectFrom('oauth_clients')
    .select(['id', 'name', 'secret_hash', 'redirect_uris', 'first_party'])
    .where('id', '=', id)
    .where('revoked_at', 'is', null)
    .executeTakeFirst();
  return (
    row && {
      id: row.id,
      name: row.name,
      secretHash: row.secret_hash,
      redirectUris: row.redirect_uris,
      firstParty: row.first_party,
    }
  );
}

/** The client when id and secret match, else undefined. */
export async function authenticateClient(db: Db, id: string, secret: string): Promise<ClientRecord | undefined> {
  const client = await findClient(db, id);
  return client && secretMatches(secret, client.secretHash) ? client : undefined;
}
