import { type RawBuilder, sql } from 'kysely';
import type { Db } from '../db/database.ts';
import { placeholder, preparedStatement } from './prepared.ts';
import { hashSecret, newSecret } from './secrets.ts';

export interface IssuedApiKey {
  id: string;
  client_id: string;
  /** The key itself: shown once, stored hashed. */
  api_key: string;
  prefix: string;
  label: string | null;
  created_at: string;
}

export async function issueApiKey(db: Db, clientId: string, label?: string | null): Promise<IssuedApiKey> {
  const key = newSecret('sk');
  const prefix = key.slice(0, 10);
  const row = await db
    .insertInto('api_keys')
    .values({ client_id: clientId, prefix, key_hash: hashSecret(key), label: label ?? null })
    .returning(['id', 'created_at'])
    .executeTakeFirstOrThrow();
  return {
    id: row.id,
    client_id: clientId,
    api_key: key,
    prefix,
    label: label ?? null,
    created_at: row.created_at.toISOString(),
  };
}

export async function listApiKeys(db: Db, clientId: string) {
  const rows = await db
    .selectFrom('api_keys')
    .select(['id', 'prefix', 'label', 'created_at', 'last_used_at', 'revoked_at'])
    .where('client_id', '=', clientId)
    .orderBy('created_at')
    .execute();
  return rows.map((r) => ({
    id: r.id,
    prefix: r.prefix,
    label: r.label,
    created_at: r.created_at.toISOString(),
    last_used_at: r.last_used_at?.toISOString() ?? null,
    revoked_at: r.revoked_at?.toISOString() ?? null,
  }));
}

/** True when a live key of this client was revoked now. */
export async function revokeApiKey(db: Db, clientId: string, keyId: string): Promise<boolean> {
  if (!/^[0-9a-f-]{36}$/i.test(keyId)) return false;
  const res = await db
    .updateTable('api_keys')
    .set({ revoked_at: sql`now()` })
    .where('id', '=', keyId)
    .where('client_id', '=', clientId)
    .where('revoked_at', 'is', null)
    .executeTakeFirst();
  return res.numUpdatedRows > 0n;
}

/**
 * The live keys of a hash (at most one): not revoked, its client not revoked, and not owned by a
 * disabled account. A subquery, so the tracking calls' statement can join it
 * (shared/tracking/users/credentials.ts).
 */
export function liveApiKeys(db: Db, keyHash: RawBuilder<string>) {
  return db
    .selectFrom('api_keys')
    .innerJoin('oauth_clients', 'oauth_clients.id', 'api_keys.client_id')
    .leftJoin('accounts', 'accounts.id', 'oauth_clients.owner_account_id')
    .select(['api_keys.id', 'api_keys.client_id', 'api_keys.last_used_at'])
    .where('api_keys.key_hash', '=', keyHash)
    .where('api_keys.revoked_at', 'is', null)
    .where('oauth_clients.revoked_at', 'is', null)
    .where('accounts.disabled_at', 'is', null);
}

/** What an API key sent with a request is hashed to, or undefined when it cannot be one of ours. */
export function apiKeyHash(key: string): string | undefined {
  return key.length < 10 || key.length > 200 ? undefined : hashSecret(key);
}

const liveKeyStatement = preparedStatement('live-api-key', (db) => liveApiKeys(db, placeholder<string>(1)));

/**
 * The live key matching this value (its client not revoked, and not owned by a disabled
 * account), or undefined.
 */
export async function findApiKey(db: Db, key: string): Promise<{ id: string; clientId: string } | undefined> {
  const hash = apiKeyHash(key);
  if (!hash) return undefined;
  const [row] = await liveKeyStatement(db, [hash]);
  if (!row) return undefined;
  await noteApiKeyUse(db, row);
  return { id: row.id, clientId: row.client_id };
}

/** Records a key's use at most once a minute (cheap, and enough to spot dead keys). */
export async function noteApiKeyUse(db: Db, key: { id: string; last_used_at: Date | null }): Promise<void> {
  if (key.last_used_at && Date.now() - key.last_used_at.getTime() <= 60_000) return;
  await db.updateTable('api_keys').set({ last_used_at: sql`now()` }).where('id', '=', key.id).execute();
}
