import { sql } from 'kysely';
import { type Adapter, type AdapterPayload, errors } from 'oidc-provider';
import { findClient, LOOPBACK_HOSTS } from '../accounts/clients.ts';
import { revokeGrantId } from '../accounts/revocation.ts';
import type { Db } from '../db/database.ts';

export interface AdapterOptions {
  /** How long a revoked grant's id stays on the list: the lifetime of the access tokens issued from it. */
  revokedGrantKeepSeconds: number;
}

/**
 * oidc-provider storage in Postgres (table oidc_payloads), so every API process sees the same
 * sessions, interactions, codes, grants and refresh tokens. Clients are read from oauth_clients
 * (registered through POST /api/v1/clients), never written by the provider.
 */
export function postgresAdapterFactory(db: Db, options: AdapterOptions) {
  return class PostgresAdapter implements Adapter {
    readonly model: string;

    constructor(model: string) {
      this.model = model;
    }

    async upsert(id: string, payload: AdapterPayload, expiresIn: number): Promise<void> {
      if (this.model === 'Client') return;
      // Expired records are ignored on read; about one write in 500 also deletes them (no timer needed).
      if (Math.random() < 0.002) await purgeExpiredOidcPayloads(db).catch(() => {});
      const expiresAt = expiresIn ? new Date(Date.now() + expiresIn * 1000) : null;
      await db
        .insertInto('oidc_payloads')
        .values({
          model: this.model,
          id,
          payload: JSON.stringify(payload),
          grant_id: payload.grantId ?? null,
          user_code: payload.userCode ?? null,
          uid: payload.uid ?? null,
          expires_at: expiresAt,
        })
        .onConflict((oc) =>
          oc.columns(['model', 'id']).doUpdateSet({
            payload: JSON.stringify(payload),
            grant_id: payload.grantId ?? null,
            user_code: payload.userCode ?? null,
            uid: payload.uid ?? null,
            expires_at: expiresAt,
          }),
        )
        .execute();
      if (this.model === 'RefreshToken' && payload.grantId && typeof payload.exp === 'number' && expiresAt)
        await keepGrantUntil(db, payload.grantId, payload.exp, expiresAt);
    }

    async find(id: string): Promise<AdapterPayload | undefined> {
      if (this.model === 'Client') return clientMetadata(db, id);
      const row = await db
        .selectFrom('oidc_payloads')
        .select(['payload', 'consumed_at'])
        .where('model', '=', this.model)
        .where('id', '=', id)
        .where((eb) => eb.or([eb('expires_at', 'is', null), eb('expires_at', '>', sql<Date>`now()`)]))
        .executeTakeFirst();
      if (!row) return undefined;
      return {
        ...(row.payload as AdapterPayload),
        ...(row.consumed_at ? { consumed: Math.floor(row.consumed_at.getTime() / 1000) } : {}),
      };
    }

    async findByUserCode(userCode: string): Promise<AdapterPayload | undefined> {
      const row = await db
        .selectFrom('oidc_payloads')
        .select('id')
        .where('model', '=', this.model)
        .where('user_code', '=', userCode)
        .executeTakeFirst();
      return row ? this.find(row.id) : undefined;
    }

    async findByUid(uid: string): Promise<AdapterPayload | undefined> {
      const row = await db
        .selectFrom('oidc_payloads')
        .select('id')
        .where('model', '=', this.model)
        .where('uid', '=', uid)
        .executeTakeFirst();
      return row ? this.find(row.id) : undefined;
    }

    /**
     * Marks a code (or request_uri) used, atomically: oidc-provider refuses a record that find()
     * saw consumed, but requests in parallel all see it unused, so only the request whose UPDATE
     * flips consumed_at wins. The others are refused as oidc-provider refuses a replay: the grant
     * is revoked and the answer is invalid_grant (RFC 6749 §4.1.2).
     */
    async consume(id: string): Promise<void> {
      const won = await db
        .updateTable('oidc_payloads')
        .set({ consumed_at: sql`now()` })
        .where('model', '=', this.model)
        .where('id', '=', id)
        .where('consumed_at', 'is', null)
        .returning('id')
        .executeTakeFirst();
      if (won) return;
      if (this.model === 'PushedAuthorizationRequest')
        throw new errors.InvalidRequestUri('request_uri is invalid, expired, or was already used');
      // No row: a replay already revoked the grant (and deleted its codes).
      const lost = await db
        .selectFrom('oidc_payloads')
        .select('grant_id')
        .where('model', '=', this.model)
        .where('id', '=', id)
        .executeTakeFirst();
      if (lost?.grant_id) await revokeGrant(db, lost.grant_id, options);
      throw new errors.InvalidGrant(`${this.model} already consumed`);
    }

    async destroy(id: string): Promise<void> {
      await db.deleteFrom('oidc_payloads').where('model', '=', this.model).where('id', '=', id).execute();
    }

    /**
     * oidc-provider revokes a grant model by model. Our access tokens are JWTs, never stored: for
     * them the grant's id goes on the revocation list the verifier checks.
     */
    async revokeByGrantId(grantId: string): Promise<void> {
      if (this.model === 'AccessToken') await revokeGrantId(db, grantId, options.revokedGrantKeepSeconds);
      await db.deleteFrom('oidc_payloads').where('grant_id', '=', grantId).execute();
    }
  };
}

/**
 * What oidc-provider does when a code or a refresh token is used twice: the grant and
 * everything stored from it (codes, refresh tokens) are deleted, and the access tokens issued
 * from it are refused.
 */
async function revokeGrant(db: Db, grantId: string, options: AdapterOptions): Promise<void> {
  await revokeGrantId(db, grantId, options.revokedGrantKeepSeconds);
  await db
    .deleteFrom('oidc_payloads')
    .where((eb) => eb.or([eb('grant_id', '=', grantId), eb.and([eb('model', '=', 'Grant'), eb('id', '=', grantId)])]))
    .execute();
}

/**
 * A grant lives at least as long as its refresh tokens (oidc-provider refuses a refresh whose
 * grant has expired): a refresh token expiring after its grant extends the grant, in the row and
 * in the payload's `exp` that oidc-provider checks.
 */
async function keepGrantUntil(db: Db, grantId: string, exp: number, expiresAt: Date): Promise<void> {
  const payloadExp = sql<number>`(payload->>'exp')::bigint`;
  await db
    .updateTable('oidc_payloads')
    .set({
      expires_at: sql`greatest(expires_at, ${expiresAt})`,
      payload: sql`jsonb_set(payload, '{exp}', to_jsonb(greatest(${payloadExp}, ${exp}::bigint)))`,
    })
    .where('model', '=', 'Grant')
    .where('id', '=', grantId)
    .where((eb) => eb.or([eb('expires_at', '<', expiresAt), eb(payloadExp, '<', exp)]))
    .execute();
}

/** Deletes expired provider records (call from time to time; expired ones are already ignored). */
export async function purgeExpiredOidcPayloads(db: Db): Promise<number> {
  const res = await db.deleteFrom('oidc_payloads').where('expires_at', '<', sql<Date>`now()`).executeTakeFirst();
  return Number(res.numDeletedRows);
}

/**
 * A registered client as oidc-provider sees it. The secret is stored hashed: `client_secret`
 * carries the hash and the provider's secret comparison is replaced (see api/accounts/provider.ts).
 * Public clients and clients with an http loopback redirect URI are "native" (the only type
 * oidc-provider lets use http loopback redirects with the implicit flow, on any port); others are
 * "web" (https only).
 */
async function clientMetadata(db: Db, id: string): Promise<AdapterPayload | undefined> {
  const client = await findClient(db, id);
  if (!client) return undefined;
  const loopback = client.redirectUris.some((u) => {
    const url = URL.parse(u);
    return url?.protocol === 'http:' && LOOPBACK_HOSTS.has(url.hostname);
  });
  // A public client is a native app (RFC 8252): code flow (and its refresh tokens) only, no
  // secret, PKCE required (provider.ts). oidc-provider lets native clients use private-use schemes and any loopback port.
  if (client.tokenEndpointAuthMethod === 'none')
    return {
      client_id: client.id,
      client_name: client.name,
      redirect_uris: client.redirectUris.filter((u) => !isHttpsLoopback(u)),
      application_type: 'native',
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
      id_token_signed_response_alg: 'RS256',
      first_party: client.firstParty,
    };
  return {
    client_id: client.id,
    client_secret: client.secretHash,
    client_name: client.name,
    redirect_uris: loopback ? client.redirectUris.filter((u) => !isHttpsLoopback(u)) : client.redirectUris,
    application_type: loopback ? 'native' : 'web',
    grant_types: ['authorization_code', 'implicit', 'refresh_token'],
    response_types: ['code', 'id_token', 'id_token token'],
    token_endpoint_auth_method: 'client_secret_basic',
    id_token_signed_response_alg: 'RS256',
    first_party: client.firstParty,
  };
}

/** oidc-provider refuses https on a loopback host for native clients (it is no claimed https URI). */
function isHttpsLoopback(uri: string): boolean {
  return uri.startsWith('https://localhost') || uri.startsWith('https://127.0.0.1') || uri.startsWith('https://[::1]');
}
