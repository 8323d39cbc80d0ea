import { decodeJwt, exportJWK, generateKeyPair } from 'jose';
import { createAccount } from '../../shared/accounts/accounts.ts';
import { issueApiKey } from '../../shared/accounts/api-keys.ts';
import { registerClient } from '../../shared/accounts/clients.ts';
import { type AccessTokenClaims, signAccessToken } from '../../shared/auth/access-token.ts';
import { issueOperatorToken } from '../../shared/auth/operator-tokens.ts';
import type { Db } from '../../shared/db/database.ts';
import type { Role } from '../../shared/db/schema/accounts.ts';
import type { Operation } from './openapi-operations.ts';

// The callers the generated requests take turns with: two with valid credentials, four without.

export const CREDENTIAL_KINDS = [
  'staff',
  'user',
  'none',
  'malformed bearer',
  'signed by another key',
  'expired',
] as const;
export type CredentialKind = (typeof CREDENTIAL_KINDS)[number];

export interface Credential {
  /** Authorization header values, used in turn (a malformed bearer has several forms); none when empty. */
  authorization: string[];
  /** x-api-key (the tracking routes need it with the bearer). */
  apiKey?: string;
  /** Authorization for the operations that accept only client credentials (HTTP Basic). */
  basic?: string;
  /** The security schemes of the OpenAPI document these headers hold valid credentials for. */
  holds: string[];
}

/** The headers of the `turn`-th request of this caller to the operation. */
export function credentialHeaders(credential: Credential, op: Operation, turn = 0): Record<string, string> {
  const headers: Record<string, string> = {};
  const basicOnly = op.security.length > 0 && op.security.every((schemes) => schemes.includes('basic'));
  const authorization =
    basicOnly && credential.basic
      ? credential.basic
      : credential.authorization[turn % Math.max(1, credential.authorization.length)];
  if (authorization) headers.authorization = authorization;
  if (credential.apiKey) headers['x-api-key'] = credential.apiKey;
  return headers;
}

export interface CredentialOptions {
  /** The API's token issuer (its `issuer` setting: AUTH_ISSUER or PUBLIC_URL). */
  issuer: string;
  /** The API's AUTH_AUDIENCE. */
  audience: string;
  /** Lifetime of the valid tokens: a soak outlasts the usual 15 minutes. */
  ttlSeconds: number;
}

/**
 * Makes, in the API's database, a first-party client with an API key, a staff+partner account and
 * an ordinary one, and mints their tokens the way `npm run account` does (the API's own signing
 * key, read from the database); then the invalid forms: malformed bearers, a token of the staff
 * account signed by another key under the API key's kid, and an expired one.
 */
export async function makeCredentials(
  db: Db,
  options: CredentialOptions,
): Promise<{ credentials: Record<CredentialKind, Credential>; clientId: string; targetAccountId: string }> {
  const label = `generated-requests-${Date.now().toString(36)}${Math.random().toString(36).slice(2, 6)}`;
  const client = await registerClient(db, {
    client_name: label,
    redirect_uris: ['https://example.test/callback'],
    firstParty: true,
  });
  const { api_key: apiKey } = await issueApiKey(db, client.client_id, label);
  const account = (roles: Role[], name: string) =>
    createAccount(db, {
      email: `${label}-${name}@example.test`,
      first_name: 'Generated',
      last_name: name,
      roles,
      created_via: 'operator',
    });
  // The target is the account the staff routes act on: an id that exists, so their input is read,
  // and that no caller uses, so disabling it or changing its roles ends no caller's tokens.
  const [staff, user, target] = await Promise.all([
    account(['user', 'staff', 'partner'], 'staff'),
    account(['user'], 'user'),
    account(['user'], 'target'),
  ]);
  const token = (accountId: string, ttlSeconds: number) =>
    issueOperatorToken(
      db,
      { issuer: options.issuer, AUTH_AUDIENCE: options.audience },
      { accountId, clientId: client.client_id, ttlSeconds },
    );
  const staffToken = await token(staff.id, options.ttlSeconds);
  const userToken = await token(user.id, options.ttlSeconds);
  const expiredToken = await token(staff.id, -3600);
  const foreignToken = await signedByAnotherKey(staffToken, options);
  const [header = '', payload = ''] = staffToken.split('.');
  const unsigned = `${Buffer.from(JSON.stringify({ alg: 'none', typ: 'at+jwt' })).toString('base64url')}.${payload}.`;
  const basic = `Basic ${Buffer.from(`${client.client_id}:${client.client_secret}`).toString('base64')}`;
  const valid = (bearer: string): Credential => ({
    authorization: [`Bearer ${bearer}`],
    apiKey,
    basic,
    holds: ['bearer', 'apiKey', 'basic'],
  });
  const invalid = (authorization: string[]): Credential => ({ authorization, apiKey, holds: ['apiKey'] });
  return {
    clientId: client.client_id,
    targetAccountId: target.id,
    credentials: {
      staff: valid(staffToken),
      user: valid(userToken),
      none: { authorization: [], holds: [] },
      'malformed bearer': invalid([
        'Bearer',
        'Bearer not-a-token',
        'Bearer a.b.c',
        `Bearer ${header}.${payload}`,
        `Bearer ${unsigned}`,
        `Bearer ${staffToken.slice(0, -6)}AAAAAA`,
        `Token ${staffToken}`,
        'Basic Zm9vOmJhcg==',
      ]),
      'signed by another key': invalid([`Bearer ${foreignToken}`]),
      expired: invalid([`Bearer ${expiredToken}`]),
    },
  };
}

/** The same claims, issuer, audience and kid, signed by a key the API never published. */
async function signedByAnotherKey(token: string, options: CredentialOptions): Promise<string> {
  const { iss, aud, iat, exp, jti, nbf, ...claims } = decodeJwt(token);
  const { kid = '' } = JSON.parse(Buffer.from(token.split('.')[0] ?? '', 'base64url').toString()) as { kid?: string };
  const { privateKey, publicKey } = await generateKeyPair('RS256', { extractable: true });
  return signAccessToken(
    { kid, alg: 'RS256', privateJwk: await exportJWK(privateKey), publicJwk: await exportJWK(publicKey) },
    claims as AccessTokenClaims,
    { issuer: options.issuer, audience: options.audience, ttlSeconds: options.ttlSeconds },
  );
}
