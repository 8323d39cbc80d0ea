import { importJWK, SignJWT } from 'jose';
import type { Role } from '../db/schema/accounts.ts';
import type { SigningKey } from './signing-keys.ts';

export interface AccessTokenClaims {
  /** Account id (uuid). */
  sub: string;
  roles: Role[];
  /** Extra claims (ldid, email, client_id, names...). */
  [claim: string]: unknown;
}

export interface SignOptions {
  issuer: string;
  audience: string | string[];
  /** Seconds; 15 minutes by default, the tracking spec's bearer validity. */
  ttlSeconds?: number;
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
    .setJti(crypto.randomUUID())
    .setExpirationTime(`${options.ttlSeconds ?? 900}s`)
    .sign(privateKey);
}
