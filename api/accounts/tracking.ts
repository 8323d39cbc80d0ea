import type Router from '@koa/router';
import type { Provider } from 'oidc-provider';
import { consentedAccount, findAccountById, trackingMe } from '../../shared/accounts/accounts.ts';
import { signAccessToken } from '../../shared/auth/access-token.ts';
import { OIDC_SCOPES } from '../../shared/auth/scopes.ts';
import { ensureSigningKeys } from '../../shared/auth/signing-keys.ts';
import type { AppContext } from '../context.ts';
import { bearerToken, insufficientScope } from '../http/auth.ts';
import { unauthorized } from '../http/errors.ts';
import { addOperation } from '../http/operation.ts';
import { ApiRouter } from '../http/route.ts';
import { providerMiddleware } from './provider.ts';
import {
  accessTokenQuery,
  accessTokenResponse,
  authorizeQuery,
  meQuery,
  meResponse,
  oauthError,
} from './tracking-schemas.ts';

/** What the tracking spec's login asks when the application names no scope: the profile and tracking. */
export const TRACKING_DEFAULT_SCOPE = [...OIDC_SCOPES, 'tracking:read', 'tracking:write'].join(' ');

/**
 * The tracking spec's account-service flow: `/oauth/authorize` (code), `GET /oauth/accessToken`
 * and `GET /api/me`. The first two are thin adapters over oidc-provider's `/authorize` and
 * `/token` so codes, clients and tokens are the same everywhere.
 */
export function trackingRouter(app: AppContext, provider: Provider): Router {
  const r = new ApiRouter({
    prefix: '',
    errorFormat: 'problem',
    registry: app.registry,
    bodyLimitBytes: app.config.bodyLimitBytes,
    tag: 'accounts',
  });
  const toProvider = providerMiddleware(provider);

  addOperation(r, app, {
    method: 'get',
    path: '/oauth/authorize',
    access: 'public',
    writesResponse: true,
    // Its parameters never refuse a request: errors are shown on oidc-provider's page.
    queryCannotFail: true,
    spec: {
      summary: 'Log a user in (tracking spec): authorization code flow',
      description:
        'Redirects to `/authorize` with the same parameters (any other OpenID Connect parameter passes through; `scope` defaults to `openid profile email tracking:read tracking:write`). After signing in (and, for a third-party application, allowing it), the user comes back to `redirect_uri` with `?code=`. Errors in the parameters are shown to the user on an HTML page.',
      query: authorizeQuery,
      responses: { 302: { description: 'To /authorize, then the sign-in page' } },
      handler: ({ ctx }) => {
        const params = new URLSearchParams(ctx.querystring);
        if (!params.get('scope')) params.set('scope', TRACKING_DEFAULT_SCOPE);
        ctx.status = 302;
        ctx.redirect(`/authorize?${params}`);
      },
    },
  });

  addOperation(r, app, {
    method: 'get',
    path: '/oauth/accessToken',
    access: 'public',
    // It answers OAuth errors (RFC 6749 §5.2) itself, never a 422.
    writesResponse: true,
    queryCannotFail: true,
    spec: {
      summary: 'Exchange an authorization code, or a refresh token, for an access token (tracking spec)',
      description:
        'The standard token request (`POST /token`) sent as a GET with every parameter in the query, as the tracking spec does. Errors are OAuth 2.0 error responses (RFC 6749 §5.2), not problem details. A code works once: presented again, it is refused and the grant it came from is revoked. To stay signed in, ask `offline_access` in the `/oauth/authorize` scope: the answer then also carries a `refresh_token`, which `grant_type=refresh_token&refresh_token=...` (with `client_id` and `client_secret`) exchanges for a new access token and a new refresh token. Each refresh token works once: presented again, the whole sign-in is revoked (every token issued from it).',
      query: accessTokenQuery,
      responses: {
        200: { description: 'The access token', schema: accessTokenResponse },
        400: {
          description:
            '`invalid_grant` (unknown, expired or used code or refresh token, wrong redirect_uri), `invalid_request`, `unsupported_grant_type`',
          schema: oauthError,
        },
        401: { description: '`invalid_client`: client_id or client_secret missing or wrong', schema: oauthError },
      },
      handler: async ({ ctx, query }) => {
        ctx.set('Cache-Control', 'no-store');
        if (!query.client_id || !query.client_secret) {
          ctx.status = 401;
          ctx.body = { error: 'invalid_client', error_description: 'client_id and client_secret are required' };
          return;
        }
        // Replay the request as the standard token request (client_secret_basic, form body).
        const form: Record<string, string> = {};
        for (const name of ['grant_type', 'code', 'redirect_uri', 'refresh_token'] as const) {
          const value = query[name];
          if (value !== undefined) form[name] = value;
        }
        const credentials = `${encodeURIComponent(query.client_id)}:${encodeURIComponent(query.client_secret)}`;
        const req = ctx.req;
        req.headers.authorization = `Basic ${Buffer.from(credentials).toString('base64')}`;
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
          await toProvider(ctx, async () => {});
        } finally {
          ctx.method = original.method;
          ctx.url = original.url;
        }
        const body = ctx.body as { access_token?: string; refresh_token?: string } | undefined;
        if (ctx.status === 200 && body?.access_token)
          ctx.body = {
            access_token: body.access_token,
            ...(body.refresh_token ? { refresh_token: body.refresh_token } : {}),
          };
      },
    },
  });

  addOperation(r, app, {
    method: 'get',
    path: '/api/me',
    // It reads its token from the query or the header itself (the tracking spec's flow).
    access: 'public',
    spec: {
      summary: 'The signed-in user and their tracking bearer (tracking spec)',
      description:
        'Send the access token from `/oauth/accessToken` (or `/token`), holding the `tracking:read` scope, as the `access_token` query parameter or as `Authorization: Bearer`. The profile fields are those the user allowed the application (`profile`, `email`; all for a first-party one), empty otherwise, in the answer and in `requestKey` alike. `requestKey` is the JWT the tracking service expects as bearer: the same token in the tracking form (same id, scopes, application and expiry), so it never outlives nor outranks the access token, and revoking either revokes both. An id_token is refused.',
      query: meQuery,
      queryErrorStatus: 400,
      responses: {
        200: { description: 'The account and its requestKey', schema: meResponse },
        400: { description: 'access_token sent more than once' },
        401: { description: 'No token, or an invalid, expired or revoked one, or an id_token' },
        403: { description: 'The token lacks the `tracking:read` scope' },
      },
      handler: async ({ ctx, query }) => {
        const token = query.access_token ?? bearerToken(ctx.get('authorization'));
        if (!token)
          throw unauthorized('An access_token query parameter (or an Authorization: Bearer header) is required');
        const principal = await app.verifier.verify(token);
        // A new token comes only from a code (or a refresh): never from an id_token or another bearer.
        if (principal.kind !== 'access')
          throw unauthorized('Send an access token from /oauth/accessToken, not an id_token');
        if (!principal.scopes.has('tracking:read')) throw insufficientScope('tracking:read');
        const { jti, exp, scope, grant_id: grantId } = principal.claims;
        if (typeof jti !== 'string' || typeof exp !== 'number' || !principal.clientId)
          throw unauthorized('The access token has no id, expiry or client');
        const found = await findAccountById(app.db, principal.accountId);
        if (!found) throw unauthorized('The access token does not match an account');
        const account = consentedAccount(found, principal.oidcScopes);
        const [key] = await ensureSigningKeys(app.db);
        if (!key) throw new Error('no signing key');
        const requestKey = await signAccessToken(
          key,
          {
            sub: account.id,
            roles: account.roles,
            ver: account.token_version,
            client_id: principal.clientId,
            scope: String(scope ?? ''),
            ldid: account.ldid,
            stack: app.config.ACCOUNTS_STACK,
            firstname: account.first_name,
            lastname: account.last_name,
            email: account.email,
            gender: account.gender,
            birthdate: account.birth_date,
            country: account.country,
            // The same grant as the access token: revoking the sign-in refuses both.
            ...(typeof grantId === 'string' ? { grant_id: grantId } : {}),
          },
          { issuer: app.config.issuer, audience: app.config.AUTH_AUDIENCE, sameAs: { jti, exp } },
        );
        ctx.set('Cache-Control', 'no-store');
        return { ...trackingMe(account), requestKey };
      },
    },
  });

  return r.router;
}
