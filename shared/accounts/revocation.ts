import { sql } from 'kysely';
import { MAX_CLOCK_TOLERANCE_S } from '../config.ts';
import type { Db } from '../db/database.ts';

/**
 * Ends every token, session and grant of an account: the token version every token carries is
 * bumped (so the verifier refuses the tokens already issued), and oidc-provider's sessions,
 * grants and codes of the account are deleted (so no new token comes from them). Called on a
 * password change, a role change, disabling the account, or when the user asks.
 * Returns how many sessions and grants were ended (undefined: no such account).
 */
export async function endAccountSessions(
  db: Db,
  accountId: string,
): Promise<{ sessions: number; grants: number } | undefined> {
  if (!/^[0-9a-f-]{36}$/i.test(accountId)) return undefined;
  return db.transaction().execute(async (trx) => {
    const bumped = await trx
      .updateTable('accounts')
      .set({ token_version: sql`token_version + 1`, updated_at: sql`now()` })
      .where('id', '=', accountId)
      .executeTakeFirst();
    if (bumped.numUpdatedRows === 0n) return undefined;
    const grants = await deleteGrants(trx, accountId);
    // The account page's sign-ins end with the version bump; their rows go now.
    await trx.deleteFrom('account_sessions').where('account_id', '=', accountId).execute();
    // Sessions, interactions and codes name the account in their payload.
    const rest = await trx
      .deleteFrom('oidc_payloads')
      .where(sql`payload->>'accountId'`, '=', accountId)
      .returning('model')
      .execute();
    const deleted = [...grants, ...rest];
    return {
      sessions: deleted.filter((r) => r.model === 'Session').length,
      grants: deleted.filter((r) => r.model === 'Grant').length,
    };
  });
}

/**
 * Deletes oidc-provider's grants of an account (to one client, or to all) and what was issued
 * from them (codes, opaque tokens); returns the models of the deleted rows.
 */
export async function deleteGrants(db: Db, accountId: string, clientId?: string): Promise<{ model: string }[]> {
  let grants = db
    .selectFrom('oidc_payloads')
    .select('id')
    .where('model', '=', 'Grant')
    .where(sql`payload->>'accountId'`, '=', accountId);
  if (clientId) grants = grants.where(sql`payload->>'clientId'`, '=', clientId);
  return db
    .deleteFrom('oidc_payloads')
    .where((eb) => eb.or([eb('grant_id', 'in', grants), eb.and([eb('model', '=', 'Grant'), eb('id', 'in', grants)])]))
    .returning('model')
    .execute();
}

/** Disables (or enables again) an account; disabling ends its tokens and sessions. False when no such account. */
export async function setAccountDisabled(db: Db, accountId: string, disabled: boolean): Promise<boolean> {
  if (!/^[0-9a-f-]{36}$/i.test(accountId)) return false;
  const res = await db
    .updateTable('accounts')
    .set({ disabled_at: disabled ? sql`coalesce(disabled_at, now())` : null, updated_at: sql`now()` })
    .where('id', '=', accountId)
    .executeTakeFirst();
  if (res.numUpdatedRows === 0n) return false;
  if (disabled) await endAccountSessions(db, accountId);
  return true;
}

/** Refuses one access token from now on (RFC 7009), until it would have expired anyway. */
export async function revokeTokenId(db: Db, jti: string, expiresAt: Date): Promise<void> {
  await db
    .insertInto('revoked_tokens')
    .values({ jti, expires_at: expiresAt })
    .onConflict((oc) => oc.column('jti').doNothing())
    .execute();
  // An entry can match a token that still verifies until its expiry plus the verifier's clock
  // tolerance (AUTH_CLOCK_TOLERANCE_S): about one revocation in 100 sweeps the entries past both.
  if (Math.random() < 0.01)
    await db
      .deleteFrom('revoked_tokens')
      .where('expires_at', '<', sql<Date>`now() - make_interval(secs => ${MAX_CLOCK_TOLERANCE_S})`)
      .execute();
}

/**
 * Refuses every access token issued from an oidc-provider grant (they carry its id, `grant_id`),
 * for `keepSeconds`: long enough for the last of them to expire. oidc-provider revokes grants
 * (a refresh token reused or revoked, a code replayed, a sign-out) but cannot reach our JWTs.
 */
export async function revokeGrantId(db: Db, grantId: string, keepSeconds: number): Promise<void> {
  await db
    .insertInto('revoked_grants')
    .values({ grant_id: grantId, expires_at: sql<Date>`now() + make_interval(secs => ${keepSeconds})` })
    .onConflict((oc) =>
      oc.column('grant_id').doUpdateSet({ expires_at: sql`greatest(revoked_grants.expires_at, excluded.expires_at)` }),
    )
    .execute();
  if (Math.random() < 0.01) await db.deleteFrom('revoked_grants').where('expires_at', '<', sql<Date>`now()`).execute();
}
