import Router from '@koa/router';
import type { Context } from 'koa';
import type { Provider } from 'oidc-provider';
import { authenticate, createAccount, EmailTakenError } from '../../shared/accounts/accounts.ts';
import { type ClientRecord, findClient, redirectTarget } from '../../shared/accounts/clients.ts';
import { findConsent, recordConsent } from '../../shared/accounts/consents.ts';
import { grantableApiScopes, knownScopes, PROVIDER_SCOPES, SCOPE_DESCRIPTIONS } from '../../shared/auth/scopes.ts';
import type { AppContext } from '../context.ts';
import { HttpError } from '../http/errors.ts';
import { checkCsrf, csrfToken, readForm } from './forms.ts';
import { consentPage, escapeHtml, loginPage, registerPage } from './html.ts';
import { htmlErrors, render, securityHeaders } from './html-response.ts';
import { loginRateLimit } from './login-rate-limit.ts';
import { API_RESOURCE } from './provider.ts';
import { registerSchema } from './registration-form.ts';

type Interaction = Awaited<ReturnType<Provider['interactionDetails']>>;

/** The same words whether the email was new or had an account already (no account oracle). */
const REGISTERED =
  'Your account is ready: sign in with this email and the password you chose. If this email already had an account, sign in with its password instead.';

/** The account signed in to the interaction's session (the consent prompt follows a login). */
function signedIn(d: Interaction): string {
  const accountId = d.session?.accountId;
  if (!accountId)
    throw new HttpError(400, 'Bad Request', 'This sign-in session is not valid; start again from the application');
  return accountId;
}

/**
 * The login, consent and registration pages, and the end of oidc-provider interactions. Signing
 * in ends the login prompt only; the consent prompt that follows is granted at once for
 * first-party clients and for what the user already allowed a third-party client, and asked on
 * the consent page otherwise (docs/accounts.md).
 */
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

  async function clientOf(d: Interaction): Promise<ClientRecord> {
    const client = await findClient(db, String(d.params.client_id));
    if (!client)
      throw new HttpError(400, 'Bad Request', 'This application is no longer registered; start again from it');
    return client;
  }

  async function showLogin(
    ctx: Context,
    d: Interaction,
    status: number,
    email: string,
    messages: { error?: string; notice?: string } = {},
  ): Promise<void> {
    const uid = d.uid;
    const page = loginPage({
      action: `/interaction/${uid}/login`,
      registerHref: `/interaction/${uid}/register`,
      abortAction: `/interaction/${uid}/abort`,
      clientName: (await clientOf(d)).name,
      csrf: csrfToken(ctx),
      email,
      ...messages,
    });
    render(ctx, status, 'Sign in', page, d.params.redirect_uri);
  }

  /**
   * Ends an interaction with this result; oidc-provider redirects the browser on. A consent keeps
   * the sign-in submitted just before it (`prompt=login` asks that both be in one result).
   */
  async function conclude(
    ctx: Context,
    d: Interaction,
    result: Parameters<Provider['interactionFinished']>[2],
    mergeWithLastSubmission = false,
  ) {
    securityHeaders(ctx, d.params.redirect_uri);
    await provider.interactionFinished(ctx.req, ctx.res, result, { mergeWithLastSubmission });
    ctx.respond = false;
  }

  /**
   * The scopes the application asks that it may hold (OpenID Connect, offline_access and API
   * scopes). oidc-provider has already dropped offline_access where it gives no refresh token
   * (no code flow, or a `prompt` without `consent`).
   */
  function askedScopes(d: Interaction, client: ClientRecord): string[] {
    return knownScopes(d.params.scope, [...PROVIDER_SCOPES, ...grantableApiScopes(client.firstParty)]);
  }

  /** Grants the asked scopes to the client for this user and ends the consent prompt. */
  async function grantConsent(ctx: Context, d: Interaction, accountId: string, scopes: string[]): Promise<void> {
    let grant = d.grantId ? await provider.Grant.find(d.grantId) : undefined;
    if (!grant || grant.accountId !== accountId)
      grant = new provider.Grant({ accountId, clientId: String(d.params.client_id) });
    const oidc = scopes.filter((s) => PROVIDER_SCOPES.includes(s));
    const api = scopes.filter((s) => !PROVIDER_SCOPES.includes(s));
    if (oidc.length) grant.addOIDCScope(oidc.join(' '));
    if (api.length) grant.addResourceScope(API_RESOURCE, api.join(' '));
    await conclude(ctx, d, { consent: { grantId: await grant.save() } }, true);
  }

  function showConsent(ctx: Context, d: Interaction, client: ClientRecord, asked: string[], extending: boolean): void {
    const returnTo = redirectTarget(String(d.params.redirect_uri))?.label ?? String(d.params.redirect_uri);
    const page = consentPage({
      action: `/interaction/${d.uid}/consent`,
      csrf: csrfToken(ctx),
      clientName: client.name,
      returnTo,
      asks: asked.map((s) => SCOPE_DESCRIPTIONS[s] ?? s),
      extending,
    });
    render(ctx, 200, `Allow ${client.name}?`, page, d.params.redirect_uri);
  }

  const router = new Router();
  router.use(htmlErrors);

  router.get('/interaction/:uid', async (ctx) => {
    const d = await details(ctx);
    if (d.prompt.name === 'login') {
      await showLogin(ctx, d, 200, typeof d.params.login_hint === 'string' ? d.params.login_hint : '');
      return;
    }
    const accountId = signedIn(d);
    const client = await clientOf(d);
    const asked = askedScopes(d, client);
    if (client.firstParty) return grantConsent(ctx, d, accountId, asked);
    const consent = await findConsent(db, accountId, client.id);
    if (consent && asked.every((s) => consent.scopes.includes(s))) return grantConsent(ctx, d, accountId, asked);
    showConsent(ctx, d, client, asked, consent !== undefined);
  });

  router.post('/interaction/:uid/consent', async (ctx) => {
    const form = await readForm(ctx);
    checkCsrf(ctx, form);
    const d = await details(ctx);
    if (d.prompt.name !== 'consent')
      throw new HttpError(400, 'Bad Request', 'This sign-in step is over; start again from the application');
    const accountId = signedIn(d);
    if (form.decision !== 'allow')
      return conclude(ctx, d, { error: 'access_denied', error_description: 'The user did not allow the application' });
    const client = await clientOf(d);
    const asked = askedScopes(d, client);
    await recordConsent(db, accountId, client.id, asked);
    await grantConsent(ctx, d, accountId, asked);
  });

  router.post('/interaction/:uid/login', async (ctx) => {
    const form = await readForm(ctx);
    checkCsrf(ctx, form);
    const d = await details(ctx);
    const email = (form.email ?? '').trim();
    await limitAttempt(ctx, email);
    const account = email && form.password ? await authenticate(db, email, form.password) : undefined;
    if (!account) {
      await showLogin(ctx, d, 401, email, { error: 'The email or password is not correct.' });
      return;
    }
    await conclude(ctx, d, { login: { accountId: account.id } });
  });

  router.post('/interaction/:uid/abort', async (ctx) => {
    const form = await readForm(ctx);
    checkCsrf(ctx, form);
    const d = await details(ctx);
    await conclude(ctx, d, { error: 'access_denied', error_description: 'The user cancelled the sign-in' });
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
    try {
      await createAccount(db, {
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
      // Answered as a new account is (the password was hashed either way): this page never
      // tells whether an email has an account.
      if (!(error instanceof EmailTakenError)) throw error;
    }
    if (d) return showLogin(ctx, d, 200, input.email, { notice: REGISTERED });
    render(
      ctx,
      200,
      'Account ready',
      `<h1>Account ready</h1><p role="status">${escapeHtml(REGISTERED)}</p><p>Go back to the app or site you came from and sign in there with this email: it will ask you here what it may see and do. You can review and withdraw what you allowed any application on <a href="/account">your account page</a>.</p>`,
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
