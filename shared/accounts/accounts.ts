import { sql } from 'kysely';
import type { Db } from '../db/database.ts';
import type { AccountOrigin, Role } from '../db/schema/accounts.ts';
import { dummyHash, hashPassword, verifyPassword } from './passwords.ts';
import { endAccountSessions } from './revocation.ts';

export interface Account {
  id: string;
  number: number;
  ldid: string;
  email: string | null;
  first_name: string;
  last_name: string;
  gender: number | null;
  birth_date: string | null;
  language: string | null;
  country: string | null;
  image_url: string | null;
  roles: Role[];
  token_version: number;
  disabled_at: Date | null;
  created_via: AccountOrigin;
  created_at: Date;
  updated_at: Date;
}

const COLUMNS = [
  'id',
  'number',
  'ldid',
  'email',
  'first_name',
  'last_name',
  'gender',
  sql<string | null>`to_char(birth_date, 'YYYY-MM-DD')`.as('birth_date'),
  'language',
  'country',
  'image_url',
  'roles',
  'token_version',
  'disabled_at',
  'created_via',
  'created_at',
  'updated_at',
] as const;

export const normalizeEmail = (email: string) => email.trim().toLowerCase();

export async function findAccountById(db: Db, id: string): Promise<Account | undefined> {
  if (!/^[0-9a-f-]{36}$/i.test(id)) return undefined;
  return (await db.selectFrom('accounts').select(COLUMNS).where('id', '=', id).executeTakeFirst()) as
    | Account
    | undefined;
}

export async function findAccountByEmail(db: Db, email: string): Promise<Account | undefined> {
  return (await db
    .selectFrom('accounts')
    .select(COLUMNS)
    .where(sql`lower(email)`, '=', normalizeEmail(email))
    .executeTakeFirst()) as Account | undefined;
}

export interface NewAccount {
  email: string;
  password?: string | undefined;
  first_name?: string | undefined;
  last_name?: string | undefined;
  gender?: number | null | undefined;
  birth_date?: string | null | undefined;
  language?: string | null | undefined;
  country?: string | null | undefined;
  roles?: Role[] | undefined;
  created_via?: AccountOrigin | undefined;
}

export class EmailTakenError extends Error {}

export async function createAccount(db: Db, input: NewAccount): Promise<Account> {
  const values = {
    email: normalizeEmail(input.email),
    password_hash: input.password ? await hashPassword(input.password) : null,
    first_name: input.first_name ?? '',
    last_name: input.last_name ?? '',
    gender: input.gender ?? null,
    birth_date: input.birth_date ?? null,
    language: input.language ?? null,
    country: input.country ?? null,
    roles: input.roles ?? (['user'] as Role[]),
    created_via: input.created_via ?? 'registration',
  };
  const row = await db
    .insertInto('accounts')
    .values(values)
    .onConflict((oc) => oc.expression(sql`lower(email)`).where('email', 'is not', null).doNothing())
    .returning('id')
    .executeTakeFirst();
  if (!row) throw new EmailTakenError('An account with this email already exists');
  return (await findAccountById(db, row.id)) as Account;
}

/**
 * The account when the email and password match and it is not disabled; the same work is done
 * when the email is unknown.
 */
export async function authenticate(db: Db, email: string, password: string): Promise<Account | undefined> {
  const row = await db
    .selectFrom('accounts')
    .select(['id', 'password_hash', 'disabled_at'])
    .where(sql`lower(email)`, '=', normalizeEmail(email))
    .executeTakeFirst();
  const ok = await verifyPassword(password, row?.password_hash ?? (await dummyHash()));
  if (!ok || !row?.password_hash || row.disabled_at) return undefined;
  return findAccountById(db, row.id);
}

/**
 * An operator asked to change an account that someone else registered (roles or password)
 * without saying they meant it: whoever registered that email first may not be its owner.
 */
export class ForeignAccountError extends Error {
  readonly account: Account;
  constructor(account: Account) {
    super(
      `${account.email} was not created by an operator (it came from ${account.created_via === 'external' ? 'an external provider' : 'self-registration'} on ${account.created_at.toISOString().slice(0, 10)})`,
    );
    this.account = account;
  }
}

/** What ensureAccountWithRoles did. */
export interface AccountChanges {
  account: Account;
  created: boolean;
  rolesAdded: Role[];
  passwordChanged: boolean;
  /** Sessions and grants ended because roles or the password changed (their tokens stop working). */
  ended?: { sessions: number; grants: number };
}

/**
 * The one rule of every operator command that changes an existing account's roles, password or
 * email: an account someone else registered (themselves, or through an external provider) is
 * changed only when the operator says so (`changeForeign`, the CLI's `--change-existing`); they
 * may not be who the operator thinks.
 */
export function foreignChangeRefusal(
  account: Account,
  changeForeign: boolean | undefined,
): ForeignAccountError | undefined {
  return account.created_via !== 'operator' && !changeForeign ? new ForeignAccountError(account) : undefined;
}

/**
 * Finds the account by email or creates it (as an operator's); adds the given roles (never removes
 * any) and sets the password when given. Changing an account someone else registered needs
 * `changeForeign` (ForeignAccountError otherwise); any change of roles or password ends the
 * account's sessions, grants and tokens, so nothing issued before acts with the new roles.
 */
export async function ensureAccountWithRoles(
  db: Db,
  input: {
    email: string;
    roles: Role[];
    password?: string;
    first_name?: string;
    last_name?: string;
    changeForeign?: boolean;
  },
): Promise<AccountChanges> {
  const existing = await findAccountByEmail(db, input.email);
  if (!existing) {
    const roles = [...new Set<Role>(['user', ...input.roles])];
    const account = await createAccount(db, { ...input, roles, created_via: 'operator' });
    return { account, created: true, rolesAdded: roles, passwordChanged: Boolean(input.password) };
  }
  const rolesAdded = [...new Set(input.roles)].filter((r) => !existing.roles.includes(r));
  const passwordChanged = Boolean(input.password);
  if (!rolesAdded.length && !passwordChanged) return { account: existing, created: false, rolesAdded, passwordChanged };
  const refusal = foreignChangeRefusal(existing, input.changeForeign);
  if (refusal) throw refusal;
  const update: { roles: Role[]; password_hash?: string; updated_at: ReturnType<typeof sql<Date>> } = {
    roles: [...existing.roles, ...rolesAdded],
    updated_at: sql<Date>`now()`,
  };
  if (input.password) update.password_hash = await hashPassword(input.password);
  await db.updateTable('accounts').set(update).where('id', '=', existing.id).execute();
  const ended = await endAccountSessions(db, existing.id);
  return {
    account: (await findAccountById(db, existing.id)) as Account,
    created: false,
    rolesAdded,
    passwordChanged,
    ended,
  };
}

/**
 * What an application may read of an account: the profile with the `profile` scope, the email
 * with `email` (the OpenID Connect scopes the user allowed it); the rest is left empty.
 */
export function consentedAccount(a: Account, allowed: ReadonlySet<string>): Account {
  const profile = allowed.has('profile');
  return {
    ...a,
    email: allowed.has('email') ? a.email : null,
    first_name: profile ? a.first_name : '',
    last_name: profile ? a.last_name : '',
    gender: profile ? a.gender : null,
    birth_date: profile ? a.birth_date : null,
    language: profile ? a.language : null,
    country: profile ? a.country : null,
    image_url: profile ? a.image_url : null,
  };
}

/** The places service's `user` object. */
export function placesUser(a: Account) {
  return { identifier: a.id, first_name: a.first_name, last_name: a.last_name, staff: a.roles.includes('staff') };
}

/** The partners service's integer `user_id`. */
export const partnersUserId = (a: Pick<Account, 'number'>) => a.number;

/** The tracking User resource's own fields (`/v2/users/<ldid>`), without the JSON-LD envelope. */
export function trackingUser(a: Account) {
  return {
    id: a.ldid,
    gender: a.gender,
    roles: a.roles.map((r) => `ROLE_${r.toUpperCase()}`),
    language: a.language,
    country: a.country,
    imageUrl: a.image_url,
    birthDate: a.birth_date,
    createdAt: a.created_at.toISOString(),
    updatedAt: a.updated_at.toISOString(),
  };
}

/** Tracking's `/api/me` account fields (dates as epoch milliseconds). */
export function trackingMe(a: Account) {
  return {
    email: a.email,
    firstName: a.first_name,
    lastName: a.last_name,
    gender: a.gender,
    birthdate: a.birth_date ? Date.parse(`${a.birth_date}T00:00:00Z`) : null,
    created: a.created_at.getTime(),
    country: a.country,
    language: a.language,
    imageUrl: a.image_url,
    roles: a.roles.map((r) => `ROLE_${r.toUpperCase()}`),
    ldid: a.ldid,
  };
}

/** OpenID Connect standard claims for the id_token and userinfo. */
export function oidcClaims(a: Account) {
  return {
    sub: a.id,
    email: a.email ?? undefined,
    email_verified: false,
    given_name: a.first_name || undefined,
    family_name: a.last_name || undefined,
    name: [a.first_name, a.last_name].filter(Boolean).join(' ') || undefined,
    gender: a.gender === null ? undefined : String(a.gender),
    birthdate: a.birth_date ?? undefined,
    locale: a.language ?? undefined,
    picture: a.image_url ?? undefined,
    roles: a.roles,
    ldid: a.ldid,
    user_id: a.number,
    ver: a.token_version,
  };
}
