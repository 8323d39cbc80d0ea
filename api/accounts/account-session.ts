import type { Context } from 'koa';
import Koa from 'koa';
import { findAccountById } from '../../shared/accounts/accounts.ts';
import { type Config, envSchema } from '../../shared/config.ts';
import type { Db } from '../../shared/db/database.ts';
import type { Role } from '../../shared/db/schema/accounts.ts';

/**
 * The sign-in of the account page (/account), a signed cookie naming the account, its token
 * version and its expiry. Staff's queue dashboard (/admin/queues) reads the same sign-in, so the
 * cookie is sent on every path; it is HttpOnly and SameSite=Strict, and nothing but these pages
 * reads it (the APIs take bearer tokens only).
 */
export const ACCOUNT_COOKIE = 'sb_account';
export const ACCOUNT_COOKIE_PATH = '/';
/** Where the cookie lived before the dashboard read it: cleared too, so signing out ends both. */
export const LEGACY_ACCOUNT_COOKIE_PATH = '/account';
/** How long the account page stays signed in without a new sign-in. */
export const ACCOUNT_SESSION_S = 3600;

export interface AccountSession {
  accountId: string;
  email: string;
  roles: Role[];
}

/** Reads what a cookie jar holds, signature checked against COOKIE_KEYS. */
export type SignedCookies = Pick<Context['cookies'], 'get'>;

/**
 * The signed-in account, if the cookie is genuine, not expired, and its account still enabled
 * and at the same token version ("sign out everywhere" and a role change end the sign-in).
 */
export async function readAccountSession(db: Db, cookies: SignedCookies): Promise<AccountSession | undefined> {
  const value = cookies.get(ACCOUNT_COOKIE, { signed: true });
  const [accountId = '', version, expires] = (value ?? '').split('.');
  if (!value || Number(expires) < Date.now() / 1000) return undefined;
  const account = await findAccountById(db, accountId);
  if (!account || account.disabled_at || String(account.token_version) !== version) return undefined;
  return { accountId, email: account.email ?? '', roles: account.roles };
}

/**
 * A reader of the cookies signed with COOKIE_KEYS for a request, for pages outside the accounts
 * service (which reads them through oidc-provider, whose keys they are).
 */
export function signedCookieReader(cookieKeys: string): (ctx: Context) => SignedCookies {
  const signer = new Koa({ keys: cookieKeys.split(',').map((k) => k.trim()) });
  return (ctx) => signer.createContext(ctx.req, ctx.res).cookies;
}

/**
 * Whether anyone could sign these cookies: in production with the public default COOKIE_KEYS.
 * The accounts service refuses to start then; a process without it still serves the dashboard,
 * which must then accept no sign-in.
 */
export function forgeableCookies(config: Pick<Config, 'NODE_ENV' | 'COOKIE_KEYS'>): boolean {
  const publicDefault = envSchema.shape.COOKIE_KEYS.parse(undefined);
  return config.NODE_ENV === 'production' && config.COOKIE_KEYS.split(',').some((k) => k.trim() === publicDefault);
}
