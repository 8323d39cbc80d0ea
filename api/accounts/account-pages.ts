import Router from '@koa/router';
import type { Context } from 'koa';
import type { Provider } from 'oidc-provider';
import { endAccountSession, startAccountSession } from '../../shared/accounts/account-sessions.ts';
import { authenticate } from '../../shared/accounts/accounts.ts';
import { listConsents, revokeConsent } from '../../shared/accounts/consents.ts';
import { endAccountSessions } from '../../shared/accounts/revocation.ts';
import { SCOPE_DESCRIPTIONS } from '../../shared/auth/scopes.ts';
import type { AppContext } from '../context.ts';
import {
  ACCOUNT_COOKIE,
  ACCOUNT_COOKIE_PATH,
  ACCOUNT_SESSION_S,
  type AccountSession,
  LEGACY_ACCOUNT_COOKIE_PATH,
  readAccountSession,
} from './account-session.ts';
import { checkCsrf, csrfToken, readForm } from './forms.ts';
import { accountAppsPage, accountSignInPage } from './html.ts';
import { htmlErrors, render } from './html-response.ts';
import { loginRateLimit } from './login-rate-limit.ts';

/**
 * The user's account page (`/account`): the third-party applications they allowed, what each may
 * do, and a button to withdraw each (its grants end and its tokens are refused at once); "sign
 * out everywhere" ends every session and token. Signed in with the account's password; the
 * page's own cookie holds a random sign-in id kept on the server, ended by signing out and by
 * anything that changes the account's token version.
 */
export function accountPagesRouter(app: AppContext, provider: Provider): Router {
  const { db } = app;
  const limitAttempt = loginRateLimit(app);
  const jar = (ctx: Context) => provider.createContext(ctx.req, ctx.res).cookies;

  const session = (ctx: Context): Promise<AccountSession | undefined> => readAccountSession(db, jar(ctx));

  async function setSession(ctx: Context, accountId: string): Promise<void> {
    const id = await startAccountSession(db, accountId, ACCOUNT_SESSION_S);
    jar(ctx).set(ACCOUNT_COOKIE, id, {
      signed: true,
      httpOnly: true,
      sameSite: 'strict',
      secure: ctx.secure,
      path: ACCOUNT_COOKIE_PATH,
      maxAge: ACCOUNT_SESSION_S * 1000,
    });
  }

  const clearSession = async (ctx: Context) => {
    const cookies = jar(ctx);
    const id = cookies.get(ACCOUNT_COOKIE, { signed: true });
    if (id) await endAccountSession(db, id);
    for (const path of [ACCOUNT_COOKIE_PATH, LEGACY_ACCOUNT_COOKIE_PATH])
      cookies.set(ACCOUNT_COOKIE, null, { path, signed: true });
  };

  async function showApps(ctx: Context, s: AccountSession, notice?: string): Promise<void> {
    const apps = (await listConsents(db, s.accountId)).map((c) => ({
      clientId: c.clientId,
      name: c.clientName,
      asks: c.scopes.map((scope) => SCOPE_DESCRIPTIONS[scope] ?? scope),
      since: c.grantedAt.toISOString().slice(0, 10),
    }));
    const body = accountAppsPage({ csrf: csrfToken(ctx), email: s.email, apps, ...(notice ? { notice } : {}) });
    render(ctx, 200, 'Applications you allowed', body);
  }

  /** The signed-in user of a form post (CSRF checked), or the sign-in page. */
  async function signedInPost(ctx: Context): Promise<AccountSession | undefined> {
    checkCsrf(ctx, await readForm(ctx));
    const s = await session(ctx);
    if (!s) render(ctx, 401, 'Your account', accountSignInPage({ csrf: csrfToken(ctx), error: 'Sign in again.' }));
    return s;
  }

  const router = new Router();
  router.use(htmlErrors);

  router.get('/account', async (ctx) => {
    const s = await session(ctx);
    if (s) return showApps(ctx, s);
    render(ctx, 200, 'Your account', accountSignInPage({ csrf: csrfToken(ctx) }));
  });

  router.post('/account/login', async (ctx) => {
    const form = await readForm(ctx);
    checkCsrf(ctx, form);
    const email = (form.email ?? '').trim();
    await limitAttempt(ctx, email);
    const account = email && form.password ? await authenticate(db, email, form.password) : undefined;
    if (!account) {
      const page = accountSignInPage({ csrf: csrfToken(ctx), email, error: 'The email or password is not correct.' });
      return render(ctx, 401, 'Your account', page);
    }
    await setSession(ctx, account.id);
    ctx.status = 303;
    ctx.redirect('/account');
  });

  router.post('/account/apps/:client_id/revoke', async (ctx) => {
    const s = await signedInPost(ctx);
    if (!s) return;
    const revoked = await revokeConsent(db, s.accountId, ctx.params.client_id ?? '');
    await showApps(ctx, s, revoked ? 'Access withdrawn: the application can no longer act for you.' : undefined);
  });

  router.post('/account/sessions/end', async (ctx) => {
    const s = await signedInPost(ctx);
    if (!s) return;
    await endAccountSessions(db, s.accountId);
    await clearSession(ctx);
    const notice = 'Signed out everywhere: every session and token of your account has ended.';
    render(ctx, 200, 'Your account', accountSignInPage({ csrf: csrfToken(ctx), notice }));
  });

  router.post('/account/logout', async (ctx) => {
    checkCsrf(ctx, await readForm(ctx));
    await clearSession(ctx);
    ctx.status = 303;
    ctx.redirect('/account');
  });

  return router;
}
