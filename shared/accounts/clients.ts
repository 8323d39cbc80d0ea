import { randomBytes } from 'node:crypto';
import type { Db } from '../db/database.ts';
import type { TokenEndpointAuthMethod } from '../db/schema/accounts.ts';
import { hashSecret, newSecret, secretMatches } from './secrets.ts';

export const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]']);

/**
 * A private-use URI scheme (RFC 8252 §7.1): reverse domain name notation, so it names one app
 * (`com.example.fit`), never a scheme a browser or the system handles itself.
 */
const PRIVATE_USE_SCHEME = /^[a-z][a-z0-9-]*(\.[a-z0-9][a-z0-9-]*)+:$/;

/**
 * Why a redirect URI is refused, or undefined when it is fine: https, or http on a loopback host;
 * a public client (a native app) may also use a private-use URI scheme (`com.example.fit:/callback`).
 */
export function redirectUriProblem(uri: string, publicClient = false): string | undefined {
  const url = URL.parse(uri);
  if (!url) return 'must be an absolute URL';
  if (url.hash || uri.includes('#')) return 'must not contain a fragment';
  if (url.username || url.password) return 'must not contain credentials';
  if (url.protocol === 'https:') return undefined;
  if (url.protocol === 'http:' && LOOPBACK_HOSTS.has(url.hostname)) return undefined;
  if (PRIVATE_USE_SCHEME.test(url.protocol)) {
    if (!publicClient)
      return 'a private-use URI scheme is for native apps: register them with "token_endpoint_auth_method": "none"';
    if (url.host !== '' || !url.pathname.startsWith('/'))
      return 'a private-use URI scheme redirect has a single slash after the scheme (com.example.app:/callback)';
    return undefined;
  }
  return publicClient
    ? 'must use https, http on a loopback host (localhost, 127.0.0.1, [::1]), or a private-use URI scheme in reverse domain name notation (com.example.app:/callback)'
    : 'must use https (http is allowed only for loopback hosts: localhost, 127.0.0.1, [::1])';
}

/**
 * Where a redirect URI leads, as a Content-Security-Policy source and in words for a person: the
 * origin of a web URI; for a private-use scheme (whose URL origin is "null") the scheme, which is
 * what CSP matches and what names the app.
 */
export function redirectTarget(uri: string): { source: string; label: string } | undefined {
  const url = URL.parse(uri);
  if (!url) return undefined;
  if (url.origin !== 'null') return { source: url.origin, label: url.origin };
  if (!PRIVATE_USE_SCHEME.test(url.protocol)) return undefined;
  return { source: url.protocol, label: `the app ${url.protocol.slice(0, -1)}` };
}

export interface RegisteredClient {
  client_id: string;
  client_secret: string;
  client_name: string;
  redirect_uris: string[];
  client_id_issued_at: number;
  /** Registered by staff (or an operator): users are not asked to consent. */
  first_party: boolean;
  token_endpoint_auth_method: TokenEndpointAuthMethod;
}

/**
 * Registers a client. Clients are third-party unless `firstParty` is set, which only staff (with
 * the `admin` scope) and operators may ask: a third-party client's users always see a consent page.
 */
export async function registerClient(
  db: Db,
  input: {
    client_name: string;
    redirect_uris: string[];
    ownerAccountId?: string | undefined;
    firstParty?: boolean;
    tokenEndpointAuthMethod?: TokenEndpointAuthMethod;
  },
): Promise<RegisteredClient> {
  const authMethod = input.tokenEndpointAuthMethod ?? 'client_secret_basic';
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
      token_endpoint_auth_method: authMethod,
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
    token_endpoint_auth_method: authMethod,
  };
}

export interface ClientRecord {
  id: string;
  name: string;
  secretHash: string;
  redirectUris: string[];
  firstParty: boolean;
  tokenEndpointAuthMethod: TokenEndpointAuthMethod;
}

export async function findClient(db: Db, id: string): Promise<ClientRecord | undefined> {
  if (!/^[\w-]{1,100}$/.test(id)) return undefined;
  const row = await db
    .selectFrom('oauth_clients')
    .select(['id', 'name', 'secret_hash', 'redirect_uris', 'first_party', 'token_endpoint_auth_method'])
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
      tokenEndpointAuthMethod: row.token_endpoint_auth_method,
    }
  );
}

/** The client when id and secret match, else undefined. */
export async function authenticateClient(db: Db, id: string, secret: string): Promise<ClientRecord | undefined> {
  const client = await findClient(db, id);
  return client && secretMatches(secret, client.secretHash) ? client : undefined;
}
