import Router from '@koa/router';
import type { Context } from 'koa';
import type { Provider } from 'oidc-provider';
import { type Account, authenticate, createAccount, EmailTakenError } from '../../shared/accounts/accounts.ts';
import type { AppContext } from '../context.ts';
import { HttpError } from '../http/errors.ts';
import { checkCsrf, csrfToken, readForm } from './forms.ts';
import { escapeHtml, loginPage, registerPage } from './html.ts';
import { htmlErrors, render, securityHeaders } from './html-response.ts';
import { loginRateLimit } from './login-rate-limit.ts';
import { API_RESOURCE, API_SCOPE, OIDC_SCOPES } from './provider.ts';
import { registerSchema } from './registration-form.ts';

type Interaction = Awaited<ReturnType<Provider['interactionDetails']>>;

/** The login and registration pages, and the end of oidc-provider interactions. */
export function loginPagesRouter(app: AppContext, provider: Provider): Router {
  const { db } = app;
  const limitAttempt = loginRateLimit(app);

  async function details(ctx: Context): Promise<Interaction> {
    try {
      const d = await provider.interactionDetails(ctx.req, ctx.res);
      if (d.uid !== ctx.params.uid) throw new Error('uid mismatch');
      return d;
    } catch {
      throw new HttpError(
        400,
        'Bad Request',
        'This sign-in session has expired or is unknown; start again from the application',
      );
    }
  }

  async function clientName(d: Interaction): Promise<string> {
    const client = await provider.Client.find(String(d.params.client_id));
    return client?.clientName ?? String(d.params.client_id);
  }

  async function showLogin(ctx: Context, d: Interaction, status: number, email: string, error?: string): Promise<void> {
    const uid = d.uid;
    const page = loginPage({
      action: `/interaction/${uid}/login`,
      registerHref: `/interaction/${uid}/register`,
      abortAction: `/interaction/${uid}/abort`,
      clientName: await clientName(d),
      csrf: csrfToken(ctx),
      email,
      ...(error ? { error } : {}),
    });
    render(ctx, status, 'Sign in', page, d.params.redirect_uri);
  }

  /** Logging in implies consent to the scopes asked (first-party platform; see docs/accounts.md). */
  async function finish(ctx: Context, d: Interaction, account: Pick<Account, 'id'>): Promise<void> {
    let grant = d.grantId ? await provider.Grant.find(d.grantId) : undefined;
    if (!grant || grant.accountId !== account.id) {
      grant = new provider.Grant({ accountId: account.id, clientId: String(d.params.client_id) });
    }
    const scopes = String(d.params.scope ?? '')
      .split(' ')
      .filter((s) => OIDC_SCOPES.includes(s));
    grant.addOIDCScope([...new Set(['openid', ...scopes])].join(' '));
    grant.addResourceScope(API_RESOURCE, API_SCOPE);
    const grantId = await grant.save();
    securityHeaders(ctx, d.params.redirect_uri);
    await provider.interactionFinished(
      ctx.req,
      ctx.res,
      { login: { accountId: account.id }, consent: { grantId } },
      { mergeWithLastSubmission: false },
    );
    ctx.respond = false;
  }

  const router = new Router();
  router.use(htmlErrors);

  router.get('/interaction/:uid', async (ctx) => {
    const d = await details(ctx);
    if (d.prompt.name === 'login') {
      await showLogin(ctx, d, 200, typeof d.params.login_hint === 'string' ? d.params.login_hint : '');
      return;
    }
    // Consent for a signed-in user (a new client or new scopes): granted, as at login.
    const accountId = d.session?.accountId;
    if (!accountId)
      throw new HttpError(400, 'Bad Request', 'This sign-in session is not valid; start again from the application');
    await finish(ctx, d, { id: accountId });
  });

  router.post('/interaction/:uid/login', async (ctx) => {
    const form = await readForm(ctx);
    checkCsrf(ctx, form);
    const d = await details(ctx);
    const email = (form.email ?? '').trim();
    await limitAttempt(ctx, email);
    const account = email && form.password ? await authenticate(db, email, form.password) : undefined;
    if (!account) {
      await showLogin(ctx, d, 401, email, 'The email or password is not correct.');
      return;
    }
    await finish(ctx, d, account);
  });

  router.post('/interaction/:uid/abort', async (ctx) => {
    const form = await readForm(ctx);
    checkCsrf(ctx, form);
    const d = await details(ctx);
    securityHeaders(ctx, d.params.redirect_uri);
    await provider.interactionFinished(
      ctx.req,
      ctx.res,
      { error: 'access_denied', error_description: 'The user cancelled the sign-in' },
      { mergeWithLastSubmission: false },
    );
    ctx.respond = false;
  });

  async function register(ctx: Context, action: string, loginHref: string | undefined, d?: Interaction): Promise<void> {
    const redirectUri = d?.params.redirect_uri;
    const form = await readForm(ctx);
    checkCsrf(ctx, form);
    const parsed = registerSchema.safeParse(form);
    const values = { ...form, password: '' };
    if (!parsed.success) {
      const errors: Record<string, string> = {};
      for (const issue of parsed.error.issues) errors[String(issue.path[0])] ??= issue.message;
      render(
        ctx,
        422,
        'Create an account',
        registerPage({ action, loginHref, csrf: csrfToken(ctx), values, errors }),
        redirectUri,
      );
      return;
    }
    await limitAttempt(ctx, parsed.data.email);
    const input = parsed.data;
    let account: Account;
    try {
      account = await createAccount(db, {
        email: input.email,
        password: input.password,
        first_name: input.first_name,
        last_name: input.last_name,
        gender: input.gender ? Number(input.gender) : null,
        birth_date: input.birth_date || null,
        country: input.country || null,
        language: input.language || null,
      });
    } catch (error) {
      if (!(error instanceof EmailTakenError)) throw error;
      render(
        ctx,
        409,
        'Create an account',
        registerPage({
          action,
          loginHref,
          csrf: csrfToken(ctx),
          values,
          errors: { email: 'an account with this email already exists; sign in instead' },
        }),
        redirectUri,
      );
      return;
    }
    if (d) return finish(ctx, d, account);
    render(
      ctx,
      201,
      'Account created',
      `<h1>Account created</h1><p role="status">Your account <strong>${escapeHtml(account.email ?? '')}</strong> is ready. Sign in from an application to get a token (see docs/accounts.md).</p>`,
    );
  }

  router.get('/interaction/:uid/register', async (ctx) => {
    const d = await details(ctx);
    const uid = ctx.params.uid;
    render(
      ctx,
      200,
      'Create an account',
      registerPage({ action: `/interaction/${uid}/register`, loginHref: `/interaction/${uid}`, csrf: csrfToken(ctx) }),
      d.params.redirect_uri,
    );
  });
  router.post('/interaction/:uid/register', async (ctx) => {
    const d = await details(ctx);
    const uid = ctx.params.uid;
    await register(ctx, `/interaction/${uid}/register`, `/interaction/${uid}`, d);
  });

  router.get('/register', (ctx) => {
    render(ctx, 200, 'Create an account', registerPage({ action: '/register', csrf: csrfToken(ctx) }));
  });
  router.post('/register', (ctx) => register(ctx, '/register', undefined));

  return router;
}
