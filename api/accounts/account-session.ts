import type { Context } from 'koa';
import Koa from 'koa';
import { findAccountSession, type SignedInAccount } from '../../shared/accounts/account-sessions.ts';
import { cookieKeysProblem } from '../../shared/auth/cookie-keys.ts';
import type { Config } from '../../shared/config.ts';
import type { Db } from '../../shared/db/database.ts';

/**
 * The sign-in of the account page (/account), a signed cookie holding a random session id that
 * names a row of `account_sessions` (shared/accounts/account-sessions.ts): nothing in it can be
 * made from an account's public data. Staff's queue dashboard (/admin/queues) reads the same
 * sign-in, so the cookie is sent on every path; it is HttpOnly and SameSite=Strict, and nothing
 * but these pages reads it (the APIs take bearer tokens only).
 */
export const ACCOUNT_COOKIE = 'sb_account';
export const ACCOUNT_COOKIE_PATH = '/';
/** Where the cookie lived before the dashboard read it: cleared too, so signing out ends both. */
export const LEGACY_ACCOUNT_COOKIE_PATH = '/account';
/** How long the account page stays signed in without a new sign-in. */
export const ACCOUNT_SESSION_S = 3600;

export type AccountSession = SignedInAccount;

/** Reads what a cookie jar holds, signature checked against COOKIE_KEYS. */
export type SignedCookies = Pick<Context['cookies'], 'get'>;

/** The signed-in account, if the cookie is genuine and its sign-in live (findAccountSession). */
export async function readAccountSession(db: Db, cookies: SignedCookies): Promise<AccountSession | undefined> {
  const id = cookies.get(ACCOUNT_COOKIE, { signed: true });
  return id ? findAccountSession(db, id) : undefined;
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
 * Whether anyone could sign these cookies: in production with keys that are published, short or
 * predictable (shared/auth/cookie-keys.ts). The accounts service refuses to start then; a process
 * without it still serves the dashboard, which must then accept no sign-in.
 */
export function forgeableCookies(config: Pick<Config, 'NODE_ENV' | 'COOKIE_KEYS'>): boolean {
  return config.NODE_ENV === 'production' && cookieKeysProblem(config.COOKIE_KEYS) !== undefined;
}
