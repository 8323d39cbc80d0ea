import Router from '@koa/router';
import type { Context } from 'koa';
import { requireApiKey } from '../../api/http/api-key.ts';
import { bearerForWrites, requireBearer } from '../../api/http/auth.ts';
import type { ServiceModule } from '../../api/service-module.ts';
import { registerClient } from '../../shared/accounts/clients.ts';
import { issueOperatorToken } from '../../shared/auth/operator-tokens.ts';
import type { Config, ServiceName } from '../../shared/config.ts';
import type { Db } from '../../shared/db/database.ts';
import type { Role } from '../../shared/db/schema/accounts.ts';

export interface TestAccount {
  id: string;
  number: number;
  ldid: string;
  email: string;
  first_name: string;
  last_name: string;
  roles: Role[];
}

export async function createTestAccount(
  db: Db,
  roles: Role[] = ['user'],
  fields: Partial<TestAccount> = {},
): Promise<TestAccount> {
  const n = Math.random().toString(36).slice(2, 8);
  return db
    .insertInto('accounts')
    .values({
      email: fields.email ?? `user-${n}@example.test`,
      first_name: fields.first_name ?? 'Test',
      last_name: fields.last_name ?? `User ${n}`,
      roles,
    })
    .returning(['id', 'number', 'ldid', 'email', 'first_name', 'last_name', 'roles'])
    .executeTakeFirstOrThrow() as Promise<TestAccount>;
}

const testClients = new WeakMap<Db, Promise<string>>();

/** The first-party client the tests' tokens (and the tracking tests' API key) are issued to, one per database. */
export function testClientId(db: Db): Promise<string> {
  let id = testClients.get(db);
  if (!id) {
    id = registerClient(db, { client_name: 'tests', redirect_uris: ['https://app.test/cb'], firstParty: true }).then(
      (c) => c.client_id,
    );
    testClients.set(db, id);
  }
  return id;
}

/**
 * A valid access token for the account, signed with the test database's key: issued to the
 * tests' first-party client with every API scope, unless told otherwise.
 */
export async function mintToken(
  db: Db,
  config: Config,
  account: Pick<TestAccount, 'id'>,
  overrides: {
    ttlSeconds?: number;
    issuer?: string;
    audience?: string;
    clientId?: string;
    scopes?: string[];
    claims?: Record<string, unknown>;
  } = {},
): Promise<string> {
  return issueOperatorToken(db, config, {
    accountId: account.id,
    clientId: overrides.clientId ?? (await testClientId(db)),
    ...(overrides.scopes ? { scopes: overrides.scopes } : {}),
    ...(overrides.ttlSeconds !== undefined ? { ttlSeconds: overrides.ttlSeconds } : {}),
    ...(overrides.issuer ? { issuer: overrides.issuer } : {}),
    ...(overrides.audience ? { audience: overrides.audience } : {}),
    ...(overrides.claims ? { claims: overrides.claims } : {}),
  });
}

/**
 * Test-only routes guarded like the services: writes need a bearer (places, partners,
 * catalogue), tracking calls need a bearer and x-api-key, the public share only x-api-key.
 */
export function guardedTestService(name: ServiceName = 'tracking', prefix = '/test'): ServiceModule {
  return {
    name,
    routers: (ctx) => {
      const router = new Router({ prefix });
      const who = (c: Context) => ({
        accountId: c.state.principal?.accountId,
        ldid: c.state.principal?.ldid,
        roles: c.state.principal?.roles,
        apiKeyClient: c.state.apiKey?.clientId,
      });
      router.get('/writes', bearerForWrites(ctx.verifier), (c) => {
        c.body = { ok: true };
      });
      router.post('/writes', bearerForWrites(ctx.verifier), (c) => {
        c.status = 201;
        c.body = who(c);
      });
      router.get('/me', requireBearer(ctx.verifier), (c) => {
        c.body = who(c);
      });
      router.get('/tracking', requireApiKey(ctx.db), requireBearer(ctx.verifier), (c) => {
        c.body = who(c);
      });
      router.get('/share', requireApiKey(ctx.db), (c) => {
        c.body = who(c);
      });
      return [router];
    },
  };
}

/** Cookies of one user agent (names only: the provider's cookies all have distinct names). */
export class CookieJar {
  readonly #cookies = new Map<string, string>();

  store(res: Response): void {
    for (const line of res.headers.getSetCookie()) {
      const [pair = ''] = line.split(';');
      const eq = pair.indexOf('=');
      if (eq > 0) this.#cookies.set(pair.slice(0, eq).trim(), pair.slice(eq + 1).trim());
    }
  }

  header(): string {
    return [...this.#cookies].map(([k, v]) => `${k}=${v}`).join('; ');
  }
}

/**
 * A fresh authorization code, obtained as a browser would (sign-in form, cookies, redirects) but
 * over plain HTTP. `path` is `/authorize` (OIDC, PKCE when `codeChallenge` is given) or the
 * tracking spec's `/oauth/authorize`.
 */
export async function authorizationCode(
  baseUrl: string,
  opts: {
    clientId: string;
    redirectUri: string;
    email: string;
    password: string;
    codeChallenge?: string;
    path?: '/authorize' | '/oauth/authorize';
    /** Scopes to ask (default: openid profile email and the tracking scopes). */
    scope?: string;
    /** Answer a consent page with Allow (default) or Deny. */
    consent?: 'allow' | 'deny';
  },
): Promise<string> {
  const query = new URLSearchParams({
    response_type: 'code',
    client_id: opts.clientId,
    redirect_uri: opts.redirectUri,
  });
  if (opts.scope || opts.path !== '/oauth/authorize')
    query.set('scope', opts.scope ?? 'openid profile email tracking:read tracking:write');
  if (opts.codeChallenge) {
    query.set('code_challenge', opts.codeChallenge);
    query.set('code_challenge_method', 'S256');
  }
  const location = await authorizationRedirect(baseUrl, `${opts.path ?? '/authorize'}?${query}`, opts);
  const code = URL.parse(location)?.searchParams.get('code');
  if (!code) throw new Error(`no code in the redirect (${location})`);
  return code;
}

/**
 * Where the provider sends the browser back after an authorization request (`authorizeUrl`,
 * absolute or relative to `baseUrl`): the sign-in form and the consent page are answered as a
 * browser would, over plain HTTP. The redirect URI may use any scheme: it is never followed.
 */
export async function authorizationRedirect(
  baseUrl: string,
  authorizeUrl: string,
  opts: { redirectUri: string; email: string; password: string; consent?: 'allow' | 'deny' },
): Promise<string> {
  const jar = new CookieJar();
  const go = async (url: string, init: RequestInit = {}): Promise<Response> => {
    const res = await fetch(new URL(url, baseUrl), {
      ...init,
      redirect: 'manual',
      headers: { ...(init.headers as Record<string, string>), cookie: jar.header() },
    });
    jar.store(res);
    return res;
  };
  let res = await go(authorizeUrl);
  // /oauth/authorize first redirects to /authorize; follow until the sign-in page.
  while (res.status >= 300 && res.status < 400 && !res.headers.get('location')?.startsWith(opts.redirectUri))
    res = await go(res.headers.get('location') ?? '');
  const html = await res.text();
  const csrf = /name="csrf" value="([^"]+)"/.exec(html)?.[1];
  const action = /<form method="post" action="([^"]+\/login)"/.exec(html)?.[1];
  if (!csrf || !action) throw new Error(`no sign-in form (HTTP ${res.status})`);
  res = await go(action, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ csrf, email: opts.email, password: opts.password }),
  });
  while (res.status >= 300 && res.status < 400 && !res.headers.get('location')?.startsWith(opts.redirectUri))
    res = await go(res.headers.get('location') ?? '');
  // A third-party client: the consent page.
  if (res.status === 200) {
    const page = await res.text();
    const consent = /<form method="post" action="([^"]+\/consent)"/.exec(page)?.[1];
    if (!consent) throw new Error('neither a redirect nor a consent page after signing in');
    res = await go(consent, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ csrf, decision: opts.consent ?? 'allow' }),
    });
    while (res.status >= 300 && res.status < 400 && !res.headers.get('location')?.startsWith(opts.redirectUri))
      res = await go(res.headers.get('location') ?? '');
  }
  const location = res.headers.get('location');
  if (!location?.startsWith(opts.redirectUri)) throw new Error(`no redirect to the client (HTTP ${res.status})`);
  return location;
}
