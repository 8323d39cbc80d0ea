import { sql } from 'kysely';
import type { Db } from '../db/database.ts';
import type { Role } from '../db/schema/accounts.ts';
import { endAccountSessions } from './revocation.ts';

/** An account as staff list it: who it is, what it may do, whether it is disabled. */
export interface StaffAccountView {
  id: string;
  number: number;
  email: string | null;
  first_name: string;
  last_name: string;
  roles: Role[];
  disabled: boolean;
  created_via: string;
  created_at: string;
}

export interface AccountListing {
  accounts: StaffAccountView[];
  /** The `after` of the next page; absent on the last one. */
  next?: number;
}

/**
 * A page of accounts in creation order (keyset on the unique `number`: each page is one index
 * range, however deep), optionally only those holding `role`, or the one with `email`.
 */
export async function listAccounts(
  db: Db,
  {
    limit,
    after,
    role,
    email,
  }: { limit: number; after?: number | undefined; role?: Role | undefined; email?: string | undefined },
): Promise<AccountListing> {
  let query = db
    .selectFrom('accounts')
    .select([
      'id',
      'number',
      'email',
      'first_name',
      'last_name',
      'roles',
      'disabled_at',
      'created_via',
      sql<string>`to_char(created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"')`.as('created'),
    ])
    .orderBy('number')
    .limit(limit + 1);
  if (after !== undefined) query = query.where('number', '>', after);
  if (role) query = query.where(sql<boolean>`roles @> array[${role}]::text[]`);
  if (email) query = query.where(sql`lower(email)`, '=', email.trim().toLowerCase());
  const rows = await query.execute();
  const page = rows.slice(0, limit);
  const last = page.at(-1);
  return {
    accounts: page.map((r) => ({
      id: r.id,
      number: Number(r.number),
      email: r.email,
      first_name: r.first_name,
      last_name: r.last_name,
      roles: r.roles,
      disabled: r.disabled_at !== null,
      created_via: r.created_via,
      created_at: r.created,
    })),
    ...(rows.length > limit && last ? { next: Number(last.number) } : {}),
  };
}

/**
 * Sets an account's roles to exactly `roles` (`user` always kept). A change ends the account's
 * sessions, grants and tokens, so nothing issued before acts with the old roles; the token
 * version moves in the same statement as the roles. Undefined when there is no such account.
 */
export async function setAccountRoles(
  db: Db,
  accountId: string,
  roles: readonly Role[],
): Promise<{ roles: Role[]; changed: boolean } | undefined> {
  if (!/^[0-9a-f-]{36}$/i.test(accountId)) return undefined;
  const wanted = [...new Set<Role>(['user', ...roles])].sort();
  const current = await db.selectFrom('accounts').select('roles').where('id', '=', accountId).executeTakeFirst();
  if (!current) return undefined;
  if ([...current.roles].sort().join() === wanted.join()) return { roles: current.roles, changed: false };
  await db
    .updateTable('accounts')
    .set({ roles: wanted, token_version: sql`token_version + 1`, updated_at: sql`now()` })
    .where('id', '=', accountId)
    .execute();
  await endAccountSessions(db, accountId);
  return { roles: wanted, changed: true };
}
