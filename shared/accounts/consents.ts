import { sql } from 'kysely';
import type { Db } from '../db/database.ts';
import { deleteGrants } from './revocation.ts';

/** What a user allowed a third-party application. */
export interface Consent {
  clientId: string;
  clientName: string;
  scopes: string[];
  grantedAt: Date;
}

/** The user's live consent for this client, or undefined (never given, or revoked). */
export async function findConsent(db: Db, accountId: string, clientId: string): Promise<Consent | undefined> {
  const rows = await listQuery(db, accountId).where('oauth_consents.client_id', '=', clientId).execute();
  return rows.map(toConsent)[0];
}

/** The applications a user allowed, newest first. */
export async function listConsents(db: Db, accountId: string): Promise<Consent[]> {
  return (await listQuery(db, accountId).orderBy('oauth_consents.granted_at', 'desc').execute()).map(toConsent);
}

function listQuery(db: Db, accountId: string) {
  return db
    .selectFrom('oauth_consents')
    .innerJoin('oauth_clients', 'oauth_clients.id', 'oauth_consents.client_id')
    .select(['oauth_consents.client_id', 'oauth_clients.name', 'oauth_consents.scopes', 'oauth_consents.granted_at'])
    .where('oauth_consents.account_id', '=', accountId)
    .where('oauth_consents.revoked_at', 'is', null)
    .where('oauth_clients.revoked_at', 'is', null);
}

const toConsent = (r: { client_id: string; name: string; scopes: string[]; granted_at: Date }): Consent => ({
  clientId: r.client_id,
  clientName: r.name,
  scopes: r.scopes,
  grantedAt: r.granted_at,
});

/**
 * Records that the user allowed these scopes to the client, added to what they allowed before.
 * A consent given again after a revocation starts anew: tokens issued before it stay refused.
 */
export async function recordConsent(db: Db, accountId: string, clientId: string, scopes: string[]): Promise<void> {
  await db
    .insertInto('oauth_consents')
    .values({ account_id: accountId, client_id: clientId, scopes })
    .onConflict((oc) =>
      oc.columns(['account_id', 'client_id']).doUpdateSet({
        scopes: sql`case when oauth_consents.revoked_at is null
                      then array(select distinct unnest(oauth_consents.scopes || excluded.scopes) order by 1)
                      else excluded.scopes end`,
        granted_at: sql`case when oauth_consents.revoked_at is null then oauth_consents.granted_at else now() end`,
        revoked_at: null,
      }),
    )
    .execute();
}

/**
 * Withdraws the user's consent to a client: its grants, codes and sessions' links to it are
 * deleted, and its tokens for this user are refused from now on (the verifier checks the consent).
 * True when there was a live consent.
 */
export async function revokeConsent(db: Db, accountId: string, clientId: string): Promise<boolean> {
  return db.transaction().execute(async (trx) => {
    const res = await trx
      .updateTable('oauth_consents')
      .set({ revoked_at: sql`now()` })
      .where('account_id', '=', accountId)
      .where('client_id', '=', clientId)
      .where('revoked_at', 'is', null)
      .executeTakeFirst();
    await deleteGrants(trx, accountId, clientId);
    return res.numUpdatedRows > 0n;
  });
}
