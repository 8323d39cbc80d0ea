import type { Db } from '../db/database.ts';
import type { Role } from '../db/schema/accounts.ts';

/** The account fields a verified bearer token resolves to. */
export interface TokenAccount {
  id: string;
  number: number;
  ldid: string;
  roles: Role[];
}

/** A user of an external OpenID provider, as its verified token names them. */
export interface ExternalIdentity {
  issuer: string;
  subject: string;
  email?: string | undefined;
}

const FIELDS = ['id', 'number', 'ldid', 'roles'] as const;

/** One of our accounts, by the `sub` of a token we issued. */
export async function findTokenAccount(db: Db, id: string): Promise<TokenAccount | undefined> {
  if (!/^[0-9a-f-]{36}$/i.test(id)) return undefined;
  return db.selectFrom('accounts').select(FIELDS).where('id', '=', id).executeTakeFirst();
}

export async function findExternalAccount(db: Db, identity: ExternalIdentity): Promise<TokenAccount | undefined> {
  return db
    .selectFrom('accounts')
    .select(FIELDS)
    .where('external_issuer', '=', identity.issuer)
    .where('external_subject', '=', identity.subject)
    .executeTakeFirst();
}

/**
 * The account of an external user, created the first time they are seen (role `user`; staff
 * roles are granted with `npm run account`); later calls only read. Their email is kept unless
 * another account has it: an external provider cannot take over a local account by its email.
 */
export async function ensureExternalAccount(
  db: Db,
  identity: ExternalIdentity,
): Promise<{ account: TokenAccount; created: boolean }> {
  const existing = await findExternalAccount(db, identity);
  if (existing) return { account: existing, created: false };
  for (const email of identity.email ? [identity.email, null] : [null]) {
    // No conflict target: a concurrent first sight (same issuer and subject) or an email in use
    // both insert nothing, and are told apart by the lookup below.
    const created = await db
      .insertInto('accounts')
      .values({ external_issuer: identity.issuer, external_subject: identity.subject, email })
      .onConflict((oc) => oc.doNothing())
      .returning(FIELDS)
      .executeTakeFirst();
    if (created) return { account: created, created: true };
    const raced = await findExternalAccount(db, identity);
    if (raced) return { account: raced, created: false };
  }
  throw new Error('could not create the external account');
}
