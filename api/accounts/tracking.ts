import Router from '@koa/router';
import type { Context, Middleware } from 'koa';
import type { Provider } from 'oidc-provider';
import { findAccountById, trackingMe } from '../../shared/accounts/accounts.ts';
import { signAccessToken } from '../../shared/auth/access-token.ts';
import { ensureSigningKeys } from '../../shared/auth/signing-keys.ts';
import type { AppContext } from '../context.ts';
import { bearerToken } from '../http/auth.ts';
import { badRequest, unauthorized } from '../http/errors.ts';
import { OIDC_SCOPES, providerMiddleware } from './provider.ts';

/** The `stack` claim of requestKey: which deployment issued it (the tracking spec names the claim only). */
export const REQUEST_KEY_TTL_S = 900;

function one(value: unknown): string | undefined {
  return typeof value === 'string' ? value : undefined;
}

/**
 * The tracking spec's account-service flow: `/oauth/authorize` (code), `GET /oauth/accessToken`
 * and `GET /api/me`. The first two are thin adapters over oidc-provider's `/authorize` and
 * `/token` so codes, clients and tokens are the same everywhere.
 */
export function trackingRouter(app: AppContext, provider: Provider): Router {
  const router = new Router();
  const toProvider = providerMiddleware(provider);

  router.get('/oauth/authorize', (ctx) => {
    const params = new URLSearchParams(ctx.querystring);
    if (!params.get('scope')) params.set('scope', OIDC_SCOPES.join(' '));
    ctx.status = 302;
    ctx.redirect(`/authorize?${params}`);
  });

  /** Exchanges a code; the spec sends every parameter in the query of a GET. */
  const accessToken: Middleware = async (ctx: Context, next) => {
    ctx.set('Cache-Control', 'no-store');
    const q = ctx.query;
    const clientId = one(q.client_id);
    const clientSecret = one(q.client_secret);
    if (!clientId || !clientSecret) {
      ctx.status = 401;
      ctx.body = { error: 'invalid_client', error_description: 'client_id and client_secret are required' };
      return;
    }
    // Replay the request as the standard token request (client_secret_basic, form body).
    const form: Record<string, string> = {};
    for (const name of ['grant_type', 'code', 'redirect_uri'])
      if (one(q[name]) !== undefined) form[name] = one(q[name]) as string;
    const req = ctx.req;
    req.headers.authorization = `Basic ${Buffer.from(`${encodeURIComponent(clientId)}:${encodeURIComponent(clientSecret)}`).toString('base64')}`;
    req.headers['content-type'] = 'application/x-www-form-urlencoded';
    const encoded = Buffer.from(new URLSearchParams(form).toString());
    req.headers['content-length'] = String(encoded.length);
    delete req.headers['transfer-encoding'];
    // A GET has an empty, unread body stream: put the form in front so oidc-provider reads it.
    req.unshift(encoded);
    const original = { method: ctx.method, url: ctx.url };
    ctx.method = 'POST';
    ctx.path = '/token';
    ctx.querystring = '';
    try {
      await toProvider(ctx, next);
    } finally {
      ctx.method = original.method;
      ctx.url = original.url;
    }
    const body = ctx.body as { access_token?: string } | undefined;
    if (ctx.status === 200 && body?.access_token) ctx.body = { access_token: body.access_token };
  };
  router.get('/oauth/accessToken', accessToken);

  router.get('/api/me', async (ctx) => {
    ctx.state.errorFormat = 'problem';
    const queryToken = ctx.query.access_token;
    if (Array.isArray(queryToken)) throw badRequest('Send access_token once');
    const token = queryToken ?? bearerToken(ctx.get('authorization'));
    if (!token) throw unauthorized('An access_token query parameter (or an Authorization: Bearer header) is required');
    const principal = await app.verifier.verify(token);
    const account = await findAccountById(app.db, principal.accountId);
    if (!account) throw unauthorized('The access token does not match an account');
    const [key] = await ensureSigningKeys(app.db);
    if (!key) throw new Error('no signing key');
    const requestKey = await signAccessToken(
      key,
      {
        sub: account.id,
        roles: account.roles,
        ldid: account.ldid,
        stack: app.config.ACCOUNTS_STACK,
        firstname: account.first_name,
        lastname: account.last_name,
        email: account.email,
        gender: account.gender,
        birthdate: account.birth_date,
        country: account.country,
      },
      { issuer: app.config.issuer, audience: app.config.AUTH_AUDIENCE, ttlSeconds: REQUEST_KEY_TTL_S },
    );
    ctx.set('Cache-Control', 'no-store');
    ctx.body = { ...trackingMe(account), requestKey };
  });

  return router;
}
