import { exportJWK, generateKeyPair, type JWK } from 'jose';
import { sql } from 'kysely';
import type { Db } from '../db/database.ts';

/** Our tokens are signed with RS256 only; verification pins exactly this list. */
export const LOCAL_ALGORITHMS = ['RS256'] as const;

export interface SigningKey {
  kid: string;
  alg: string;
  publicJwk: JWK;
  privateJwk: JWK;
}

/**
 * Returns the active signing keys, creating the first one when there is none. Concurrent
 * starters serialize on an advisory lock so exactly one key is created.
 */
export async function ensureSigningKeys(db: Db): Promise<SigningKey[]> {
  const existing = await activeKeys(db);
  if (existing.length > 0) return existing;
  await db.transaction().execute(async (trx) => {
    await sql`select pg_advisory_xact_lock(hashtext('sports-backend:signing-keys'))`.execute(trx);
    const again = await trx.selectFrom('signing_keys').select('kid').where('retired_at', 'is', null).executeTakeFirst();
    if (again) return;
    const { publicKey, privateKey } = await generateKeyPair('RS256', { modulusLength: 2048, extractable: true });
    const kid = crypto.randomUUID();
    const pub = { ...(await exportJWK(publicKey)), kid, alg: 'RS256', use: 'sig' };
    const priv = { ...(await exportJWK(privateKey)), kid, alg: 'RS256', use: 'sig' };
    await trx
      .insertInto('signing_keys')
      .values({ kid, alg: 'RS256', public_jwk: JSON.stringify(pub), private_jwk: JSON.stringify(priv) })
      .execute();
  });
  return activeKeys(db);
}

/** Keys not retired, newest first; retired keys are still published until removed so tokens stay verifiable. */
export async function activeKeys(db: Db): Promise<SigningKey[]> {
  const rows = await db
    .selectFrom('signing_keys')
    .selectAll()
    .where('retired_at', 'is', null)
    .orderBy('created_at', 'desc')
    .execute();
  return rows.map((r) => ({
    kid: r.kid,
    alg: r.alg,
    publicJwk: r.public_jwk as JWK,
    privateJwk: r.private_jwk as JWK,
  }));
}

/** The public JWKS (all keys, retired included, so tokens they signed verify until they expire). */
export async function publicJwks(db: Db): Promise<{ keys: JWK[] }> {
  const rows = await db.selectFrom('signing_keys').select('public_jwk').orderBy('created_at', 'desc').execute();
  return { keys: rows.map((r) => r.public_jwk as JWK) };
}
