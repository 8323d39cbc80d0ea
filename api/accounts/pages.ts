import Router from '@koa/router';
import countries from 'i18n-iso-countries';
import type { Context } from 'koa';
import type { Provider } from 'oidc-provider';
import { RateLimiterRedis, RateLimiterRes } from 'rate-limiter-flexible';
import { z } from 'zod';
import {
  type Account,
  EmailTakenError,
  authenticate,
  createAccount,
  normalizeEmail,
} from '../../shared/accounts/accounts.ts';
import { MAX_PASSWORD_LENGTH, MIN_PASSWORD_LENGTH } from '../../shared/accounts/passwords.ts';
import type { AppContext } from '../context.ts';
import { HttpError, tooManyRequests } from '../http/errors.ts';
import { checkCsrf, csrfInput, csrfToken, readForm } from './forms.ts';
import { alert, escapeHtml, field, page } from './html.ts';
import { API_RESOURCE, API_SCOPE, OIDC_SCOPES } from './provider.ts';

type Interaction = Awaited<ReturnType<Provider['interactionDetails']>>;

/** Sets a strict CSP on our pages; forms may post to us and be redirected to the client's redirect_uri. */
function securityHeaders(ctx: Context, redirectUri?: unknown): void {
  const origin = typeof redirectUri === 'string' ? URL.parse(redirectUri)?.origin : undefined;
  const formAction = ["'self'", origin && origin !== 'null' ? origin : ''].filter(Boolean).join(' ');
  ctx.set(
    'Content-Security-Policy',
    `default-src 'none'; style-src 'unsafe-inline'; img-src 'self' data:; form-action ${formAction}; frame-ancestors 'none'; base-uri 'none'`,
  );
  ctx.set('Cache-Control', 'no-store');
}

function render(ctx: Context, status: number, title: string, body: string, redirectUri?: unknown): void {
  securityHeaders(ctx, redirectUri);
  ctx.status = status;
  ctx.type = 'html';
  ctx.body = page(title, body);
}

function renderProblem(ctx: Context, status: number, message: string, headers: Record<string, string> = {}): void {
  ctx.set(headers);
  render(ctx, status, 'Sign-in problem', `<h1>Sign-in problem</h1>${alert(message)}<p>Go back and try again.</p>`);
}

const registerSchema = z.object({
  email: z.string().trim().max(254, 'at most 254 characters').pipe(z.email('enter a valid email address')),
  password: z
    .string()
    .min(MIN_PASSWORD_LENGTH, `at least ${MIN_PASSWORD_LENGTH} characters`)
    .max(MAX_PASSWORD_LENGTH, `at most ${MAX_PASSWORD_LENGTH} characters`),
  first_name: z.string().trim().min(1, 'enter your first name').max(100, 'at most 100 characters'),
  last_name: z.string().trim().min(1, 'enter your last name').max(100, 'at most 100 characters'),
  gender: z.enum(['', '1', '2', '3'], 'choose one of the options').default(''),
  birth_date: z
    .string()
    .trim()
    .default('')
    .refine(
      (v) =>
        v === '' ||
        (/^\d{4}-\d{2}-\d{2}$/.test(v) &&
          !Number.isNaN(Date.parse(v)) &&
          v >= '1900-01-01' &&
          v <= new Date().toISOString().slice(0, 10)),
      'a past date as YYYY-MM-DD',
    ),
  country: z
    .string()
    .trim()
    .toUpperCase()
    .default('')
    .refine((v) => v === '' || countries.isValid(v), 'a 2-letter ISO 3166-1 country code, such as FR'),
  language: z
    .string()
    .trim()
    .toLowerCase()
    .default('')
    .refine((v) => v === '' || /^[a-z]{2}$/.test(v), 'a 2-letter language code, such as en'),
});

const GENDERS: Array<[string, string]> = [
  ['', 'Prefer not to say'],
  ['2', 'Female'],
  ['1', 'Male'],
  ['3', 'Other'],
];

function loginPage(opts: {
  action: string;
  registerHref: string;
  abortAction?: string;
  clientName: string;
  csrf: string;
  email?: string;
  error?: string;
}) {
  return `<h1>Sign in</h1>
<p>to continue to <strong>${escapeHtml(opts.clientName)}</strong></p>
${alert(opts.error)}
<form method="post" action="${escapeHtml(opts.action)}">
${csrfInput(opts.csrf)}
${field({ name: 'email', label: 'Email', type: 'email', value: opts.email ?? '', autocomplete: 'username', required: true })}
${field({ name: 'password', label: 'Password', type: 'password', autocomplete: 'current-password', required: true })}
<button type="submit">Sign in</button>
</form>
<p>No account yet? <a href="${escapeHtml(opts.registerHref)}">Create an account</a></p>
${opts.abortAction ? `<form method="post" action="${escapeHtml(opts.abortAction)}">${csrfInput(opts.csrf)}<button type="submit" class="secondary">Cancel</button></form>` : ''}`;
}

function registerPage(opts: {
  action: string;
  loginHref?: string;
  csrf: string;
  values?: Record<string, string>;
  errors?: Record<string, string>;
  error?: string;
}) {
  const v = opts.values ?? {};
  const e = opts.errors ?? {};
  return `<h1>Create an account</h1>
${alert(opts.error ?? (Object.keys(e).length ? 'Some fields need your attention.' : undefined))}
<form method="post" action="${escapeHtml(opts.action)}" novalidate>
${csrfInput(opts.csrf)}
${field({ name: 'email', label: 'Email', type: 'email', value: v.email, autocomplete: 'email', required: true, error: e.email })}
${field({ name: 'password', label: 'Password', type: 'password', autocomplete: 'new-password', required: true, hint: `At least ${MIN_PASSWORD_LENGTH} characters.`, error: e.password })}
${field({ name: 'first_name', label: 'First name', value: v.first_name, autocomplete: 'given-name', required: true, error: e.first_name })}
${field({ name: 'last_name', label: 'Last name', value: v.last_name, autocomplete: 'family-name', required: true, error: e.last_name })}
${field({ name: 'gender', label: 'Gender', value: v.gender, options: GENDERS, error: e.gender })}
${field({ name: 'birth_date', label: 'Birth date', type: 'date', value: v.birth_date, autocomplete: 'bday', error: e.birth_date })}
${field({ name: 'country', label: 'Country', value: v.country, autocomplete: 'country', hint: 'Two letters, such as FR or US.', error: e.country })}
${field({ name: 'language', label: 'Language', value: v.language, autocomplete: 'language', hint: 'Two letters, such as en or fr.', error: e.language })}
<button type="submit">Create account</button>
</form>
${opts.loginHref ? `<p>Already have an account? <a href="${escapeHtml(opts.loginHref)}">Sign in</a></p>` : ''}`;
}

/** The login and registration pages, and the end of oidc-provider interactions. */
export function pagesRouter(app: AppContext, provider: Provider): Router {
  const { db, config } = app;
  const perAccount = new RateLimiterRedis({
    storeClient: app.redis,
    keyPrefix: `${config.QUEUE_PREFIX}:login`,
    points: config.LOGIN_RATE_LIMIT_POINTS,
    duration: config.LOGIN_RATE_LIMIT_DURATION_S,
  });
  const perIp = new RateLimiterRedis({
    storeClient: app.redis,
    keyPrefix: `${config.QUEUE_PREFIX}:login-ip`,
    points: config.LOGIN_RATE_LIMIT_POINTS * 10,
    duration: config.LOGIN_RATE_LIMIT_DURATION_S,
  });

  /** Attempts per (IP, email) and per IP; 429 with Retry-After when exhausted. */
  async function limitAttempt(ctx: Context, email: string): Promise<void> {
    try {
      await Promise.all([perAccount.consume(`${ctx.ip}:${normalizeEmail(email)}`), perIp.consume(ctx.ip)]);
    } catch (rejection) {
      if (rejection instanceof RateLimiterRes) {
        throw tooManyRequests(Math.max(1, Math.ceil(rejection.msBeforeNext / 1000)));
      }
      ctx.state.log?.warn({ err: rejection }, 'login rate limiter unavailable; attempt allowed');
    }
  }

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

  /** Renders HttpErrors of these pages as HTML (they are browser pages, not API calls). */
  const htmlErrors = async (ctx: Context, next: () => Promise<unknown>) => {
    try {
      await next();
    } catch (error) {
      if (!(error instanceof HttpError)) throw error;
      renderProblem(ctx, error.status, error.message, error.headers);
    }
  };

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
