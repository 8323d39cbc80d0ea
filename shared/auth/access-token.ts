import { importJWK, SignJWT } from 'jose';
import type { Role } from '../db/schema/accounts.ts';
import type { SigningKey } from './signing-keys.ts';

export interface AccessTokenClaims {
  /** Account id (uuid). */
  sub: string;
  roles: Role[];
  /** The account's token version (migration 0050): a token of an older version is refused. */
  ver: number;
  /** The client the token is issued to; an x-api-key is bound to it. */
  client_id: string;
  /** Space-separated API scopes (shared/auth/scopes.ts). */
  scope: string;
  /** Extra claims (ldid, email, names...). */
  [claim: string]: unknown;
}

export interface SignOptions {
  issuer: string;
  audience: string | string[];
  /** Seconds; 15 minutes by default, the tracking spec's bearer validity. */
  ttlSeconds?: number;
  /** Another form of an existing token: the same id and expiry, so revoking one revokes both. */
  sameAs?: { jti: string; exp: number };
}

/** Signs one of our access tokens (JWT, RS256) with the newest signing key. */
export async function signAccessToken(
  key: SigningKey,
  claims: AccessTokenClaims,
  options: SignOptions,
): Promise<string> {
  const privateKey = await importJWK(key.privateJwk, key.alg);
  return new SignJWT(claims)
    .setProtectedHeader({ alg: key.alg, kid: key.kid, typ: 'at+jwt' })
    .setIssuer(options.issuer)
    .setAudience(options.audience)
    .setIssuedAt()
    .setJti(options.sameAs?.jti ?? crypto.randomUUID())
    .setExpirationTime(options.sameAs?.exp ?? `${options.ttlSeconds ?? 900}s`)
    .sign(privateKey);
}
