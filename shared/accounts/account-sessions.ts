import { sql } from 'kysely';
import type { Db } from '../db/database.ts';
import type { Role } from '../db/schema/accounts.ts';
import { hashSecret, newSecret } from './secrets.ts';

/**
 * The account page's sign-ins, kept on the server (migration 0066): the cookie carries a random
 * id and nothing else, so no cookie can be made from an account's public data, and each sign-in
 * ends on the server (sign out, "sign out everywhere", a role or password change, disabling).
 */

export interface SignedInAccount {
  accountId: string;
  email: string;
  roles: Role[];
}

/** Starts a sign-in of the account at its current token version; returns the id for the cookie. */
export async function startAccountSession(db: Db, accountId: string, ttlSeconds: number): Promise<string> {
  const id = newSecret('as');
  await db
    .insertInto('account_sessions')
    .values((eb) => ({
      id_hash: hashSecret(id),
      account_id: accountId,
      token_version: eb.selectFrom('accounts').select('token_version').where('id', '=', accountId),
      expires_at: sql<Date>`now() + make_interval(secs => ${ttlSeconds})`,
    }))
    .execute();
  // Expired sign-ins of anyone go now and then; reads ignore them anyway.
  if (Math.random() < 0.05)
    await db.deleteFrom('account_sessions').where('expires_at', '<', sql<Date>`now()`).execute();
  return id;
}

/** The account of a live sign-in: not expired, the account enabled and still at the sign-in's token version. */
export async function findAccountSession(db: Db, id: string): Promise<SignedInAccount | undefined> {
  if (!/^as_[A-Za-z0-9_-]{43}$/.test(id)) return undefined;
  const row = await db
    .selectFrom('account_sessions as s')
    .innerJoin('accounts as a', 'a.id', 's.account_id')
    .select(['a.id', 'a.email', 'a.roles'])
    .where('s.id_hash', '=', hashSecret(id))
    .where('s.expires_at', '>', sql<Date>`now()`)
    .where('a.disabled_at', 'is', null)
    .whereRef('a.token_version', '=', 's.token_version')
    .executeTakeFirst();
  return row && { accountId: row.id, email: row.email ?? '', roles: row.roles };
}

/** Ends one sign-in (signing out). */
export async function endAccountSession(db: Db, id: string): Promise<void> {
  await db.deleteFrom('account_sessions').where('id_hash', '=', hashSecret(id)).execute();
}
