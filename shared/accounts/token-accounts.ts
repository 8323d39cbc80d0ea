import type { InferResult } from 'kysely';
import type { Db } from '../db/database.ts';
import type { Role } from '../db/schema/accounts.ts';
import { placeholder, preparedStatement } from './prepared.ts';

/** The account fields a verified bearer token resolves to. */
export interface TokenAccount {
  id: string;
  number: number;
  ldid: string;
  roles: Role[];
  /** Every token we issue carries it (`ver`); tokens of an older version are refused. */
  token_version: number;
  disabled_at: Date | null;
}

/** A user of an external OpenID provider, as its verified token names them. */
export interface ExternalIdentity {
  issuer: string;
  subject: string;
  email?: string | undefined;
}

const FIELDS = ['id', 'number', 'ldid', 'roles', 'token_version', 'disabled_at'] as const;

/** One of our accounts, by the `sub` of a token we issued. */
export async function findTokenAccount(db: Db, id: string): Promise<TokenAccount | undefined> {
  if (!/^[0-9a-f-]{36}$/i.test(id)) return undefined;
  return db.selectFrom('accounts').select(FIELDS).where('id', '=', id).executeTakeFirst();
}

/** What decides whether one of our tokens still holds, read in one query (tokenRefusal judges it). */
export interface TokenState {
  account: TokenAccount;
  /** The token's id is on the revocation list. */
  revoked: boolean;
  /** The grant the token was issued from (its `grant_id`) was revoked: a refresh token reused or revoked, a sign-out. */
  grantRevoked?: boolean;
  /** The client the token was issued to, when it names one (undefined: unknown or revoked). */
  client?: { firstParty: boolean } | undefined;
  /** The user's live consent to that client, if any. */
  consent?: { grantedAt: Date; scopes: string[] } | undefined;
}

/** What identifies one of our tokens to its state (findTokenState). */
export interface TokenRef {
  sub: string;
  jti?: string | undefined;
  clientId?: string | undefined;
  grantId?: string | undefined;
}

/**
 * The account a token names with its client, consent and revocation state, over placeholders
 * $1-$4 (tokenStateValues): the base of findTokenState's statement and of the tracking calls'
 * (shared/tracking/users/credentials.ts), which join more to it.
 */
export function tokenStateQuery(db: Db) {
  const client = placeholder<string | null>(2);
  return db
    .selectFrom('accounts as a')
    .leftJoin('oauth_clients as c', (j) => j.on('c.id', '=', client).on('c.revoked_at', 'is', null))
    .leftJoin('oauth_consents as g', (j) =>
      j.onRef('g.account_id', '=', 'a.id').on('g.client_id', '=', client).on('g.revoked_at', 'is', null),
    )
    .select([
      'a.id',
      'a.number',
      'a.ldid',
      'a.roles',
      'a.token_version',
      'a.disabled_at',
      'c.first_party',
      'g.granted_at',
      'g.scopes',
      (eb) =>
        eb
          .exists(eb.selectFrom('revoked_tokens').select('jti').where('jti', '=', placeholder<string>(3)))
          .as('revoked'),
      (eb) =>
        eb
          .exists(eb.selectFrom('revoked_grants').select('grant_id').where('grant_id', '=', placeholder<string>(4)))
          .as('grant_revoked'),
    ])
    .where('a.id', '=', placeholder<string | null>(1));
}

/** The values of tokenStateQuery's $1-$4; undefined when the token cannot name an account of ours. */
export function tokenStateValues(token: TokenRef): [string, string | null, string, string] | undefined {
  if (!/^[0-9a-f-]{36}$/i.test(token.sub)) return undefined;
  const clientId = token.clientId && /^[\w-]{1,100}$/.test(token.clientId) ? token.clientId : null;
  return [token.sub, clientId, token.jti ?? '', token.grantId ?? ''];
}

type TokenStateRow = InferResult<ReturnType<typeof tokenStateQuery>>[number];

/** A row of tokenStateQuery (or of a statement built on it) as the TokenState tokenRefusal judges. */
export function tokenStateOf(row: TokenStateRow): TokenState {
  return {
    account: {
      id: row.id,
      number: row.number,
      ldid: row.ldid,
      roles: row.roles,
      token_version: row.token_version,
      disabled_at: row.disabled_at,
    },
    revoked: Boolean(row.revoked),
    grantRevoked: Boolean(row.grant_revoked),
    client: row.first_party === null ? undefined : { firstParty: row.first_party },
    consent: row.granted_at && row.scopes ? { grantedAt: row.granted_at, scopes: row.scopes } : undefined,
  };
}

const tokenStateStatement = preparedStatement('token-state', tokenStateQuery);

/** The account a token of ours names, with its revocation, client and consent state: one statement. */
export async function findTokenState(db: Db, token: TokenRef): Promise<TokenState | undefined> {
  const values = tokenStateValues(token);
  if (!values) return undefined;
  const [row] = await tokenStateStatement(db, values);
  return row ? tokenStateOf(row) : undefined;
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
