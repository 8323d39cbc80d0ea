import Router from '@koa/router';
import type { JWK as SigningKeyJwk } from 'jose';
import type { Middleware } from 'koa';
import compose from 'koa-compose';
import { type Configuration, errors, Provider, type JWK as ProviderJwk } from 'oidc-provider';
import { findAccountById, oidcClaims } from '../../shared/accounts/accounts.ts';
import { revokeTokenId } from '../../shared/accounts/revocation.ts';
import { secretMatches } from '../../shared/accounts/secrets.ts';
import { cookieKeysProblem } from '../../shared/auth/cookie-keys.ts';
import { postgresAdapterFactory } from '../../shared/auth/oidc-adapter.ts';
import { refreshTokenTtl } from '../../shared/auth/refresh-tokens.ts';
import { grantableApiScopes, OFFLINE_ACCESS_SCOPE, PROVIDER_SCOPES } from '../../shared/auth/scopes.ts';
import { ensureSigningKeys } from '../../shared/auth/signing-keys.ts';
import { type Config, ConfigError } from '../../shared/config.ts';
import type { Db } from '../../shared/db/database.ts';
import type { Logger } from '../../shared/observability/logger.ts';
import type { TokenVerifier } from '../http/auth.ts';
import { RETRY_AFTER_SECONDS, unavailableDependency } from '../http/unavailable.ts';
import { escapeHtml, logoutPage, signedOutPage } from './html.ts';

/**
 * The resource indicator (RFC 8707) of our APIs. Access tokens issued for it are JWTs whose
 * `aud` is AUTH_AUDIENCE, the audience the resource-server verifier (api/http/auth.ts) pins.
 * Clients need not send `resource`: it is the default.
 */
export const API_RESOURCE = 'urn:sports-backend:api';

/**
 * Token lifetimes (seconds). 15 minutes is the tracking spec's bearer validity. Refresh tokens
 * follow REFRESH_TOKEN_ABSOLUTE_TTL_S and REFRESH_TOKEN_IDLE_TTL_S (refreshTokenTtl).
 */
export const TTL = {
  AccessToken: 900,
  IdToken: 900,
  AuthorizationCode: 60,
  Interaction: 3600,
  Session: 14 * 24 * 3600,
  Grant: 14 * 24 * 3600,
};

/** A key as oidc-provider types it: jose's JWK members, named one by one (no index signature). */
function providerJwk({ kid, kty, alg, crv, use, d, x, y, n, e, p, q, dp, dq, qi }: SigningKeyJwk): ProviderJwk {
  return { kid, kty, alg, crv, use, d, x, y, n, e, p, q, dp, dq, qi };
}

/** Where oidc-provider's endpoints live (DESIGN: accounts own /authorize, /.well-known, /oauth/...). */
export const PROVIDER_ROUTES = {
  authorization: '/authorize',
  token: '/token',
  jwks: '/jwks',
  end_session: '/oauth/logout',
  revocation: '/oauth/revoke',
  introspection: '/oauth/introspect',
  pushed_authorization_request: '/oauth/par',
} as const;

/** A registered client as oidc-provider holds it, with our own metadata (oidc-adapter.ts). */
interface OurClient {
  clientId: string;
  first_party?: boolean;
}

export async function createProvider(
  db: Db,
  config: Config,
  verifier: TokenVerifier,
  logger?: Logger,
): Promise<Provider> {
  const cookieKeys = config.COOKIE_KEYS.split(',').map((k) => k.trim());
  const weakKeys = config.NODE_ENV === 'production' ? cookieKeysProblem(config.COOKIE_KEYS) : undefined;
  if (weakKeys) throw new ConfigError(`Invalid configuration:\n  COOKIE_KEYS: ${weakKeys}`);
  const keys = await ensureSigningKeys(db);
  const configuration: Configuration = {
    // A revoked grant's access tokens are refused until the last of them expires (clock skew included).
    adapter: postgresAdapterFactory(db, {
      revokedGrantKeepSeconds: TTL.AccessToken + config.AUTH_CLOCK_TOLERANCE_S,
    }),
    jwks: { keys: keys.map((k) => providerJwk(k.privateJwk)) },
    cookies: {
      keys: cookieKeys,
      long: { signed: true, httpOnly: true, sameSite: 'lax' },
      short: { signed: true, httpOnly: true, sameSite: 'lax' },
    },
    routes: PROVIDER_ROUTES,
    responseTypes: ['code', 'id_token', 'id_token token', 'none'],
    scopes: [...PROVIDER_SCOPES],
    // Whether a client is first-party (no consent screen, may hold `admin`): oidc-adapter.ts.
    extraClientMetadata: { properties: ['first_party'] },
    claims: {
      // `ver`: the account's token version (migration 0050), so ending its sessions ends its id_tokens
      // too; `grant_id`: revoking the grant (refresh tokens) ends them as it ends access tokens.
      openid: ['sub', 'ver', 'grant_id'],
      profile: [
        'given_name',
        'family_name',
        'name',
        'gender',
        'birthdate',
        'locale',
        'picture',
        'roles',
        'ldid',
        'user_id',
      ],
      email: ['email', 'email_verified'],
    },
    ttl: {
      ...TTL,
      // Idle window, cut at the family's absolute end (iiat: when the family's first token was issued).
      RefreshToken: (_ctx, token) => {
        const now = Math.floor(Date.now() / 1000);
        return refreshTokenTtl(token.iiat ?? now, now, {
          absoluteS: config.REFRESH_TOKEN_ABSOLUTE_TTL_S,
          idleS: config.REFRESH_TOKEN_IDLE_TTL_S,
        });
      },
    },
    // Every refresh rotates the token, for confidential clients too (RFC 9700 §4.14.2 asks it of
    // public ones): a token used twice revokes its grant, so a stolen one is caught on first reuse.
    rotateRefreshToken: true,
    // PKCE is required for public clients (native apps, RFC 8252); when a confidential client
    // sends a code_challenge, the code_verifier is always checked.
    pkce: { required: (_ctx, client) => client.clientAuthMethod === 'none' },
    enabledJWA: { idTokenSigningAlgValues: ['RS256'], requestObjectSigningAlgValues: ['RS256', 'ES256'] },
    features: {
      devInteractions: { enabled: false },
      // Access tokens are for our APIs (resource indicator), which userinfo does not accept; the
      // profile is in the id_token and at /api/me.
      userinfo: { enabled: false },
      // RFC 7009. Revoking a refresh token revokes its grant (oidc-provider's revokeGrantPolicy):
      // every refresh and access token of that sign-in. Another client's token is left alone (200).
      revocation: { enabled: true, allowedPolicy: (_ctx, client, token) => token.clientId === client.clientId },
      // RFC 7662 §4: a client learns nothing of another client's token (active: false), so a stolen
      // refresh token cannot be tested without going through its reuse detection.
      introspection: { enabled: true, allowedPolicy: (_ctx, client, token) => token.clientId === client.clientId },
      // Our own pages, not oidc-provider's unstyled defaults.
      rpInitiatedLogout: {
        enabled: true,
        logoutSource: (ctx, form) => {
          ctx.type = 'html';
          ctx.body = logoutPage(form);
        },
        postLogoutSuccessSource: (ctx) => {
          ctx.type = 'html';
          ctx.body = signedOutPage();
        },
      },
      resourceIndicators: {
        enabled: true,
        defaultResource: () => API_RESOURCE,
        useGrantedResource: () => true,
        getResourceServerInfo: (_ctx, indicator, client) => {
          if (indicator !== API_RESOURCE) throw new errors.InvalidTarget();
          return {
            // What this client may ever hold; a token holds what was asked and granted of it.
            scope: grantableApiScopes((client as unknown as OurClient).first_party === true).join(' '),
            audience: config.AUTH_AUDIENCE,
            accessTokenTTL: TTL.AccessToken,
            accessTokenFormat: 'jwt',
            jwt: { sign: { alg: 'RS256' } },
          };
        },
      },
    },
    // The claims the resource-server verifier and services read: roles, ldid and the token version.
    // `grant_id` names the sign-in (grant) the token comes from, so revoking the grant refuses it.
    extraTokenClaims: async (_ctx, token) => {
      if (!('accountId' in token) || !token.accountId) return undefined;
      const account = await findAccountById(db, String(token.accountId));
      if (!account) return undefined;
      const grantId = 'grantId' in token && typeof token.grantId === 'string' ? { grant_id: token.grantId } : {};
      return {
        roles: account.roles,
        ldid: account.ldid,
        user_id: account.number,
        ver: account.token_version,
        ...grantId,
      };
    },
    // A disabled account is no account: no session, code or token is made for it.
    findAccount: async (ctx, sub) => {
      const account = await findAccountById(db, sub);
      if (!account || account.disabled_at) return undefined;
      // The grant is known once a token is made from it (read when the id_token's claims are).
      const grantId = () => (ctx.oidc.grant?.jti ? { grant_id: ctx.oidc.grant.jti } : {});
      return { accountId: account.id, claims: () => ({ ...oidcClaims(account), ...grantId() }) };
    },
    interactions: { url: (_ctx, interaction) => `/interaction/${interaction.uid}` },
    clientBasedCORS: () => true,
    renderError: (ctx, out, error) => {
      // An error that would have been redirected (an untrusted redirect URI) keeps its own status.
      const status = (error as { statusCode?: number }).statusCode ?? 400;
      if (ctx.status < 400) ctx.status = status >= 400 ? status : 400;
      ctx.remove('Location');
      ctx.type = 'html';
      ctx.body = `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Sign-in error</title></head>
<body><main><h1>Sign-in error</h1><p role="alert">${escapeHtml(String(out.error))}: ${escapeHtml(String(out.error_description ?? ''))}</p></main></body></html>`;
    },
  };
  const provider = new Provider(config.issuer, configuration);
  provider.proxy = config.TRUST_PROXY;
  provider.maxIpsCount = config.trustProxyHops;
  // An error goes back to a redirect URI only when that URI is trusted (RFC 9700 §4.11.2); else
  // it is shown on our error page, so the login origin is no open redirect for any registered app.
  provider.on('authorization.error', (ctx, err) => {
    if (!redirectTrusted(ctx)) (err as { allow_redirect?: boolean }).allow_redirect = false;
  });
  provider.use(revokeOurAccessTokens(db, verifier));
  // oidc-provider answers its own errors; server errors are logged here (never shown to users).
  // A dependency that is down is OAuth's temporarily_unavailable, a 503 with Retry-After.
  provider.on('server_error', (ctx, err) => {
    const unavailable = unavailableDependency(err);
    if (!unavailable) return logger?.error({ err }, 'identity provider error');
    logger?.warn(unavailable, 'dependency unavailable: identity provider answers 503');
    ctx.status = 503;
    ctx.set('Retry-After', String(RETRY_AFTER_SECONDS));
    if (typeof ctx.body === 'object' && ctx.body !== null)
      ctx.body = {
        error: 'temporarily_unavailable',
        error_description: 'A service the login needs is unavailable; retry shortly',
      };
  });
  // Client secrets are stored hashed (oauth_clients.secret_hash): compare hashes.
  provider.Client.prototype.compareClientSecret = function compareClientSecret(actual: string) {
    const stored = this.clientSecret;
    return Promise.resolve(typeof actual === 'string' && stored !== undefined && secretMatches(actual, stored));
  };
  return provider;
}

/**
 * A redirect URI is trusted for errors when its client is first-party, when the user has just
 * answered our page for it (cancelled the sign-in or refused consent), or when this browser's
 * session holds a grant the user gave that client.
 */
function redirectTrusted(ctx: Parameters<Parameters<Provider['on']>[1]>[0]): boolean {
  const oidc = (ctx as { oidc?: { client?: OurClient; route?: string; session?: SessionView } }).oidc;
  const client = oidc?.client;
  if (!client) return false;
  // `resume` runs right after the user answered one of our pages (an error there is their answer).
  if (client.first_party === true || oidc.route === 'resume') return true;
  try {
    return Boolean(oidc.session?.accountId && oidc.session.grantIdFor(client.clientId));
  } catch {
    return false;
  }
}

interface SessionView {
  accountId?: string;
  grantIdFor(clientId: string): string | undefined;
}

/**
 * RFC 7009 for our JWT access tokens, which oidc-provider cannot revoke (it refuses structured
 * tokens once the client is authenticated): a token of the authenticated client goes on the
 * revocation list until it expires. Another client's token, or one that does not verify, is
 * answered 200 and left alone, as the RFC asks for invalid tokens.
 */
function revokeOurAccessTokens(db: Db, verifier: TokenVerifier): Middleware {
  return async (ctx, next) => {
    await next();
    const oidc = (ctx as { oidc?: { route?: string; client?: OurClient; params?: { token?: unknown } } }).oidc;
    const body = ctx.body as { error?: string } | undefined;
    if (oidc?.route !== 'revocation' || !oidc.client || body?.error !== 'unsupported_token_type') return;
    ctx.status = 200;
    ctx.body = '';
    const token = oidc.params?.token;
    if (typeof token !== 'string') return;
    const verified = await verifier.signedClaims(token).catch(() => undefined);
    if (verified?.kind !== 'access') return;
    const { jti, exp, client_id: clientId } = verified.payload;
    if (typeof jti === 'string' && typeof exp === 'number' && clientId === oidc.client.clientId)
      await revokeTokenId(db, jti, new Date(exp * 1000));
  };
}

/** Runs oidc-provider's Koa middleware on the app's own context (what koa-mount does). */
export function providerMiddleware(provider: Provider): Middleware {
  const stack = compose(provider.middleware as unknown as Middleware[]);
  return (ctx, next) => {
    // Signed cookies with the provider's keys (COOKIE_KEYS), not the host app's.
    ctx.cookies = provider.createContext(ctx.req, ctx.res).cookies;
    return stack(ctx, next);
  };
}

/** A router that hands oidc-provider's paths to it. */
export function providerRouter(provider: Provider): Router {
  const router = new Router();
  const delegate = providerMiddleware(provider);
  const r = PROVIDER_ROUTES;
  const paths = [
    '/.well-known/openid-configuration',
    r.authorization,
    `${r.authorization}/:uid`,
    r.token,
    r.jwks,
    r.end_session,
    `${r.end_session}/confirm`,
    `${r.end_session}/success`,
    r.revocation,
    r.introspection,
    r.pushed_authorization_request,
  ];
  router.get(r.authorization, consentForOfflineAccess);
  for (const path of paths) router.all(path, delegate);
  return router;
}

/**
 * OpenID Connect Core §11 honours offline_access only with `prompt=consent` (oidc-provider drops
 * it otherwise). An authorization request asking it with no prompt at all gets that prompt: the
 * consent step then runs, which asks a third-party app's user (unless they allowed it before)
 * and passes a first-party app straight through, so apps need not know the rule. An explicit
 * other prompt (`none`, `login`) keeps its meaning: no refresh token.
 */
const consentForOfflineAccess: Middleware = (ctx, next) => {
  const params = new URLSearchParams(ctx.querystring);
  if (!params.has('prompt') && params.get('scope')?.split(' ').includes(OFFLINE_ACCESS_SCOPE)) {
    params.set('prompt', 'consent');
    ctx.querystring = params.toString();
  }
  return next();
};
