import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import test from 'ava';
import { decodeJwt, importJWK, SignJWT } from 'jose';
import { accountsService } from '../api/accounts/index.ts';
import { createAccount, ensureAccountWithRoles } from '../shared/accounts/accounts.ts';
import { issueApiKey } from '../shared/accounts/api-keys.ts';
import { ensureSigningKeys } from '../shared/auth/signing-keys.ts';
import { startTestApi, type TestApi } from './helpers/app.ts';
import { CookieJar, guardedTestService, mintToken, testClientId } from './helpers/tokens.ts';

// The attacks of "Security defects found from outside" on the login service, replayed over HTTP.
const run = promisify(execFile);
const PASSWORD = 'correct horse battery';
const EVIL_CB = 'https://evil.example.test/cb';
let api: TestApi;
let evil: { client_id: string; client_secret: string };
let evilBasic: string;

test.before(async () => {
  api = await startTestApi(null, {
    publicUrl: true,
    services: [accountsService, guardedTestService(), guardedTestService('places', '/test-places')],
  });
  // Anyone may register a client: the attacker does, with their own redirect URI.
  const res = await api.fetch('/api/v1/clients', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ client_name: 'Totally legit app', redirect_uris: [EVIL_CB] }),
  });
  evil = (await res.json()) as typeof evil;
  evilBasic = `Basic ${Buffer.from(`${evil.client_id}:${evil.client_secret}`).toString('base64')}`;
});
test.after.always(() => api?.close());

/** A browser of one user: cookies kept, redirects followed by hand (to see where they go). */
class UserAgent {
  readonly jar = new CookieJar();
  async go(url: string, init: RequestInit = {}): Promise<Response> {
    const res = await fetch(new URL(url, api.url), {
      ...init,
      redirect: 'manual',
      headers: { ...(init.headers as Record<string, string>), cookie: this.jar.header() },
    });
    this.jar.store(res);
    return res;
  }
  /** Follows redirects on our own origin; stops at a page or at a redirect elsewhere. */
  async follow(url: string, init: RequestInit = {}): Promise<Response> {
    let res = await this.go(url, init);
    while (res.status >= 300 && res.status < 400) {
      const next = new URL(res.headers.get('location') ?? '', api.url);
      if (next.origin !== new URL(api.url).origin) return res;
      res = await this.go(next.href);
    }
    return res;
  }
  async post(action: string, form: Record<string, string>): Promise<Response> {
    return this.follow(action, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams(form),
    });
  }
  /** Signs in on the page `res` shows; returns where it leads. */
  async signIn(res: Response, email: string): Promise<Response> {
    const html = await res.text();
    const csrf = /name="csrf" value="([^"]+)"/.exec(html)?.[1] ?? '';
    const action = /<form method="post" action="([^"]+\/login)"/.exec(html)?.[1];
    if (!action) throw new Error(`no sign-in form (HTTP ${res.status})`);
    return this.post(action, { csrf, email, password: PASSWORD });
  }
}

const authorizeUrl = (clientId: string, redirectUri: string, extra: Record<string, string> = {}) =>
  `/authorize?${new URLSearchParams({
    response_type: 'code',
    client_id: clientId,
    redirect_uri: redirectUri,
    scope: 'openid profile email tracking:read tracking:write admin',
    ...extra,
  })}`;

async function user(roles: ('user' | 'staff')[] = ['user']) {
  const email = `u-${Math.random().toString(36).slice(2, 9)}@example.test`;
  const account = await createAccount(api.database.db, { email, password: PASSWORD, roles });
  return { ...account, email };
}

/** A first-party client of the operator's, and a signed-in session of the user made through it. */
async function signedInBrowser(email: string): Promise<UserAgent> {
  const ua = new UserAgent();
  const firstParty = await testClientId(api.database.db);
  const page = await ua.follow(authorizeUrl(firstParty, 'https://app.test/cb', { scope: 'openid' }));
  const back = await ua.signIn(page, email);
  if (!back.headers.get('location')?.startsWith('https://app.test/cb?code=')) throw new Error('first-party sign-in');
  return ua;
}

test('a third-party app gets no code for a signed-in user without a consent page (was: silent grant)', async (t) => {
  const victim = await user();
  const ua = await signedInBrowser(victim.email);
  // The attack: a page sends the signed-in browser to /authorize for the attacker's app.
  const res = await ua.follow(authorizeUrl(evil.client_id, EVIL_CB));
  t.is(res.status, 200, 'a page, not a redirect to the app');
  const html = await res.text();
  t.regex(html, /<h1>Allow Totally legit app\?<\/h1>/);
  t.regex(html, /registered by a third party/);
  t.regex(html, /See your activities, GPS tracks/);
  t.notRegex(html, /staff powers/, 'admin is never offered to a third-party app');
  t.regex(html, /sent back to <strong>https:\/\/evil\.example\.test<\/strong>/);
  // prompt=none cannot skip it: an error page on our origin, no redirect with a code or error.
  const silent = await ua.follow(authorizeUrl(evil.client_id, EVIL_CB, { prompt: 'none' }));
  t.is(silent.status, 400);
  t.is(silent.headers.get('location'), null);
  t.regex(await silent.text(), /consent_required/);
});

test('after Allow, a code and a token with the scopes allowed, never admin; remembered per user and app', async (t) => {
  const staff = await user(['user', 'staff']);
  const ua = await signedInBrowser(staff.email);
  const consent = await ua.follow(authorizeUrl(evil.client_id, EVIL_CB));
  const csrf = /name="csrf" value="([^"]+)"/.exec(await consent.text())?.[1] ?? '';
  const action = `${new URL(consent.url).pathname}/consent`;
  const back = await ua.post(action, { csrf, decision: 'allow' });
  const code = URL.parse(back.headers.get('location') ?? '')?.searchParams.get('code');
  t.truthy(code);
  const tokenRes = await api.fetch('/token', {
    method: 'POST',
    headers: { authorization: evilBasic, 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ grant_type: 'authorization_code', code: code ?? '', redirect_uri: EVIL_CB }),
  });
  const tokens = (await tokenRes.json()) as { access_token: string };
  const claims = decodeJwt(tokens.access_token);
  t.is(claims.scope, 'tracking:read tracking:write');
  t.is(claims.client_id, evil.client_id);
  // The staff member's token acts without staff powers (no admin scope).
  const me = await api.fetch('/test/me', { headers: { authorization: `Bearer ${tokens.access_token}` } });
  t.deepEqual(((await me.json()) as { roles: string[] }).roles, ['user']);
  // Places were never asked, so never granted.
  const places = await api.fetch('/test-places/writes', {
    method: 'POST',
    headers: { authorization: `Bearer ${tokens.access_token}` },
  });
  t.is(places.status, 403);
  t.regex(
    places.headers.get('www-authenticate') ?? '',
    /insufficient_scope, scope="places:write"|scope="places:write"/,
  );
  const row = await api.database.db
    .selectFrom('oauth_consents')
    .select('scopes')
    .where('account_id', '=', staff.id)
    .where('client_id', '=', evil.client_id)
    .executeTakeFirstOrThrow();
  t.deepEqual(row.scopes.sort(), ['email', 'openid', 'profile', 'tracking:read', 'tracking:write']);
  // Remembered: a new sign-in of the same user asks no more.
  const again = await ua.follow(authorizeUrl(evil.client_id, EVIL_CB));
  t.regex(again.headers.get('location') ?? '', /^https:\/\/evil\.example\.test\/cb\?code=/);
});

test('an unknown app gets our error page, not an error= redirect (was: open redirect)', async (t) => {
  const ua = new UserAgent();
  const cases: Record<string, string>[] = [
    { prompt: 'none' },
    { response_type: 'token' },
    { code_challenge_method: 'plain', code_challenge: 'x'.repeat(43) },
  ];
  for (const extra of cases) {
    const res = await ua.follow(authorizeUrl(evil.client_id, EVIL_CB, extra));
    t.is(res.headers.get('location'), null, JSON.stringify(extra));
    t.true(res.status >= 400 && res.status < 500, JSON.stringify(extra));
    t.regex(res.headers.get('content-type') ?? '', /html/);
  }
  // A first-party app's redirect URI is trusted: its errors go back to it.
  const firstParty = await testClientId(api.database.db);
  const res = await ua.follow(authorizeUrl(firstParty, 'https://app.test/cb', { prompt: 'none' }));
  t.regex(res.headers.get('location') ?? '', /^https:\/\/app\.test\/cb\?error=login_required/);
});

test('/api/me: no token from an id_token, and its requestKey never outlives the access token (was: renew forever)', async (t) => {
  const u = await user();
  const firstParty = await testClientId(api.database.db);
  const token = await mintToken(api.database.db, api.config, u, { ttlSeconds: 120 });
  const me = async (bearer: string) => api.fetch(`/api/me?access_token=${encodeURIComponent(bearer)}`);
  const first = await me(token);
  t.is(first.status, 200);
  const key = String(((await first.json()) as { requestKey: string }).requestKey);
  t.is(decodeJwt(key).exp, decodeJwt(token).exp);
  // Exchanging the requestKey again gives the same expiry: no chain of fresh tokens.
  const second = await me(key);
  const key2 = String(((await second.json()) as { requestKey: string }).requestKey);
  t.is(decodeJwt(key2).exp, decodeJwt(token).exp);
  // An id_token (of a first-party client: a bearer on the places routes) is refused.
  const [signing] = await ensureSigningKeys(api.database.db);
  if (!signing) throw new Error('no key');
  const idToken = await new SignJWT({ sub: u.id, ver: 0, nonce: 'n' })
    .setProtectedHeader({ alg: 'RS256', kid: signing.kid, typ: 'JWT' })
    .setIssuer(api.config.issuer)
    .setAudience(firstParty)
    .setIssuedAt()
    .setExpirationTime('10m')
    .sign(await importJWK(signing.privateJwk, 'RS256'));
  const places = await api.fetch('/test-places/writes', {
    method: 'POST',
    headers: { authorization: `Bearer ${idToken}` },
  });
  t.is(places.status, 201, 'the id_token is a places bearer');
  const refused = await me(idToken);
  t.is(refused.status, 401);
  t.regex(((await refused.json()) as { detail: string }).detail, /not an id_token/);
  // A token without tracking:read is refused.
  const placesOnly = await mintToken(api.database.db, api.config, u, { scopes: ['places:read'] });
  t.is((await me(placesOnly)).status, 403);
});

test('revocation at /oauth/revoke ends the access token and its requestKey at once (was: a no-op)', async (t) => {
  const u = await user();
  const token = await mintToken(api.database.db, api.config, u, {
    clientId: evil.client_id,
    scopes: ['tracking:read'],
  });
  // A third-party client's token needs the user's consent to hold anything.
  await api.database.db
    .insertInto('oauth_consents')
    .values({ account_id: u.id, client_id: evil.client_id, scopes: ['tracking:read'], granted_at: new Date(0) })
    .execute();
  const key = ((await (await api.fetch(`/api/me?access_token=${token}`)).json()) as { requestKey: string }).requestKey;
  const call = (bearer: string) => api.fetch('/test/me', { headers: { authorization: `Bearer ${bearer}` } });
  t.is((await call(token)).status, 200);
  t.is((await call(key)).status, 200);
  // Another client cannot revoke it (answered 200, left alone).
  const other = await api.fetch('/api/v1/clients', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ client_name: 'Other', redirect_uris: ['https://other.test/cb'] }),
  });
  const o = (await other.json()) as { client_id: string; client_secret: string };
  const revoke = (basic: string) =>
    api.fetch('/oauth/revoke', {
      method: 'POST',
      headers: { authorization: basic, 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ token }),
    });
  t.is((await revoke(`Basic ${Buffer.from(`${o.client_id}:${o.client_secret}`).toString('base64')}`)).status, 200);
  t.is((await call(token)).status, 200);
  const res = await revoke(evilBasic);
  t.is(res.status, 200);
  for (const bearer of [token, key]) {
    const after = await call(bearer);
    t.is(after.status, 401);
    t.regex(((await after.json()) as { detail: string }).detail, /revoked/);
  }
  const discovery = (await (await api.fetch('/.well-known/openid-configuration')).json()) as Record<string, string>;
  t.is(discovery.revocation_endpoint, `${api.config.issuer}/oauth/revoke`);
});

test('a role change, a password change, ending sessions and disabling end the tokens already issued', async (t) => {
  const ops = await ensureAccountWithRoles(api.database.db, { email: 'ops-made@example.test', roles: ['user'] });
  const call = (bearer: string) => api.fetch('/test/me', { headers: { authorization: `Bearer ${bearer}` } });
  const before = await mintToken(api.database.db, api.config, ops.account);
  t.is((await call(before)).status, 200);
  const changed = await ensureAccountWithRoles(api.database.db, {
    email: 'ops-made@example.test',
    roles: ['partner'],
  });
  t.deepEqual(changed.rolesAdded, ['partner']);
  t.is((await call(before)).status, 401, 'a role change ends earlier tokens');
  const afterRoles = await mintToken(api.database.db, api.config, ops.account);
  t.is((await call(afterRoles)).status, 200);
  await ensureAccountWithRoles(api.database.db, {
    email: 'ops-made@example.test',
    roles: [],
    password: 'a brand new password',
  });
  t.is((await call(afterRoles)).status, 401, 'a password change ends earlier tokens');

  // Staff (a token holding admin) disable and enable an account, and end its sessions.
  const staff = await api.account(['user', 'staff']);
  const target = await user();
  const targetToken = await mintToken(api.database.db, api.config, target);
  const admin = (path: string, method = 'POST', bearer = staff.token) =>
    api.fetch(`/api/v1/accounts/${target.id}${path}`, { method, headers: { authorization: `Bearer ${bearer}` } });
  t.is((await admin('/disable', 'POST', targetToken)).status, 403, 'not staff');
  const noAdmin = await mintToken(api.database.db, api.config, staff, { scopes: ['tracking:read'] });
  t.is((await admin('/disable', 'POST', noAdmin)).status, 403, 'staff without the admin scope');
  t.is((await admin('/disable')).status, 204);
  const refused = await call(targetToken);
  t.is(refused.status, 401);
  t.regex(((await refused.json()) as { detail: string }).detail, /disabled/);
  t.is((await call(await mintToken(api.database.db, api.config, target))).status, 401, 'no new token works');
  const ua = new UserAgent();
  const page = await ua.follow(authorizeUrl(await testClientId(api.database.db), 'https://app.test/cb'));
  t.is((await ua.signIn(page, target.email)).status, 401, 'a disabled account cannot sign in');
  t.is((await admin('/enable')).status, 204);
  const fresh = await mintToken(api.database.db, api.config, target);
  t.is((await call(fresh)).status, 200);
  t.is((await admin('/sessions', 'DELETE')).status, 204);
  t.is((await call(fresh)).status, 401);
  const unknown = await api.fetch('/api/v1/accounts/00000000-0000-4000-8000-000000000000/disable', {
    method: 'POST',
    headers: { authorization: `Bearer ${staff.token}` },
  });
  t.is(unknown.status, 404);
});

test('npm run account --role staff on a self-registered account refuses without --change-existing (was: silent grant)', async (t) => {
  // The attacker registers the address first and keeps a session (a token).
  const attacker = await user();
  const attackerToken = await mintToken(api.database.db, api.config, attacker);
  const env = { ...process.env, DATABASE_URL: api.database.url, PUBLIC_URL: api.url, LOG_LEVEL: 'silent' };
  const cli = (args: string[]) =>
    run(process.execPath, ['scripts/account.ts', '--email', attacker.email, ...args], { env }).then(
      (r) => ({ code: 0, ...r }),
      (e: { code: number; stdout: string; stderr: string }) => e,
    );
  const refused = await cli(['--role', 'staff']);
  t.is(refused.code, 2);
  t.regex(refused.stderr, /not created by an operator.*self-registration.*--change-existing/s);
  const row = () =>
    api.database.db.selectFrom('accounts').select('roles').where('id', '=', attacker.id).executeTakeFirstOrThrow();
  t.deepEqual((await row()).roles, ['user']);
  const me = (bearer: string) => api.fetch('/test/me', { headers: { authorization: `Bearer ${bearer}` } });
  t.is((await me(attackerToken)).status, 200);

  const granted = await cli(['--role', 'staff', '--change-existing']);
  t.is(granted.code, 0, granted.stderr);
  const out = JSON.parse(granted.stdout) as { done: string[]; access_token: string };
  t.deepEqual((await row()).roles, ['user', 'staff']);
  t.true(out.done.some((d) => /added roles staff/.test(d)));
  t.true(out.done.some((d) => /ended \d+ session/.test(d)));
  t.regex(granted.stderr, /account: added roles staff/);
  // The session the attacker held before the grant is over.
  t.is((await me(attackerToken)).status, 401);
  // The operator's new token carries staff powers.
  const roles = ((await (await me(out.access_token)).json()) as { roles: string[] }).roles;
  t.deepEqual(roles, ['user', 'staff']);
});

test('an x-api-key only goes with tokens issued to its own client (was: any token, any key)', async (t) => {
  const u = await user();
  const { api_key: evilKey } = await issueApiKey(api.database.db, evil.client_id, 'attacker');
  const { api_key: ownKey } = await issueApiKey(api.database.db, await testClientId(api.database.db), 'ours');
  const token = await mintToken(api.database.db, api.config, u);
  const tracking = (key: string) =>
    api.fetch('/test/tracking', { headers: { authorization: `Bearer ${token}`, 'x-api-key': key } });
  const res = await tracking(evilKey);
  t.is(res.status, 401);
  t.regex(((await res.json()) as { detail: string }).detail, /another application/);
  t.is((await tracking(ownKey)).status, 200);
});

test('only staff holding admin register first-party clients; tokens hold only their scopes', async (t) => {
  const register = (bearer?: string) =>
    api.fetch('/api/v1/clients', {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(bearer ? { authorization: `Bearer ${bearer}` } : {}) },
      body: JSON.stringify({
        client_name: 'Official app',
        redirect_uris: ['https://official.test/cb'],
        first_party: true,
      }),
    });
  t.is((await register()).status, 403);
  const u = await api.account(['user']);
  t.is((await register(u.token)).status, 403);
  const staff = await api.account(['user', 'staff']);
  const ok = await register(staff.token);
  t.is(ok.status, 201);
  t.is(((await ok.json()) as { first_party: boolean }).first_party, true);
  const plain = await api.fetch('/api/v1/clients', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ client_name: 'Someone', redirect_uris: ['https://someone.test/cb'] }),
  });
  t.is(((await plain.json()) as { first_party: boolean }).first_party, false);

  const readOnly = await mintToken(api.database.db, api.config, u, { scopes: ['tracking:read'] });
  const get = await api.fetch('/test/me', { headers: { authorization: `Bearer ${readOnly}` } });
  t.is(get.status, 200);
  const post = await api.fetch('/test/writes', { method: 'POST', headers: { authorization: `Bearer ${readOnly}` } });
  t.is(post.status, 403);
  t.is(post.headers.get('www-authenticate'), 'Bearer error="insufficient_scope", scope="tracking:write"');
});

/** Allows the attacker's app for this browser's user, through the consent page. */
async function allow(ua: UserAgent, url: string): Promise<Response> {
  const consent = await ua.follow(url);
  const csrf = /name="csrf" value="([^"]+)"/.exec(await consent.text())?.[1] ?? '';
  return ua.post(`${new URL(consent.url).pathname}/consent`, { csrf, decision: 'allow' });
}

test('the claims parameter cannot pull a profile detail the user did not allow', async (t) => {
  const victim = await user();
  const ua = await signedInBrowser(victim.email);
  const scope = { scope: 'openid tracking:read', response_type: 'id_token', nonce: 'n' };
  const back = await allow(ua, authorizeUrl(evil.client_id, EVIL_CB, scope));
  t.regex(back.headers.get('location') ?? '', /#id_token=/);
  // Asking the email claim by name (no `email` scope): the parameter is not supported, so the
  // id_token carries only what the user allowed.
  const claims = JSON.stringify({ id_token: { email: null, name: null } });
  const res = await ua.follow(authorizeUrl(evil.client_id, EVIL_CB, { ...scope, claims }));
  const fragment = new URLSearchParams(new URL(res.headers.get('location') ?? '').hash.slice(1));
  const idToken = decodeJwt(fragment.get('id_token') ?? '');
  t.is(idToken.sub, victim.id);
  t.is(idToken.email, undefined);
  t.is(idToken.name, undefined);
});

test('the account page: CSRF, sign-in, and withdrawing needs the signed-in user', async (t) => {
  const victim = await user();
  const ua = new UserAgent();
  const page = await ua.follow('/account');
  t.is(page.status, 200);
  const csrf = /name="csrf" value="([^"]+)"/.exec(await page.text())?.[1] ?? '';
  t.is((await ua.post(`/account/apps/${evil.client_id}/revoke`, { decision: 'x' })).status, 400, 'no CSRF token');
  const anonymous = await ua.post(`/account/apps/${evil.client_id}/revoke`, { csrf });
  t.is(anonymous.status, 401);
  t.regex(await anonymous.text(), /Sign in again/);
  const wrong = await ua.post('/account/login', { csrf, email: victim.email, password: 'not the password' });
  t.is(wrong.status, 401);
  const signedIn = await ua.post('/account/login', { csrf, email: victim.email, password: PASSWORD });
  t.is(signedIn.status, 200);
  t.regex(await signedIn.text(), /not allowed any third-party application/);
  // "Sign out everywhere" ends the account's tokens and this page's own session.
  const token = await mintToken(api.database.db, api.config, victim);
  const me = () => api.fetch('/test/me', { headers: { authorization: `Bearer ${token}` } });
  t.is((await me()).status, 200);
  const ended = await ua.post('/account/sessions/end', { csrf });
  t.regex(await ended.text(), /Signed out everywhere/);
  t.is((await me()).status, 401);
  t.regex(await (await ua.follow('/account')).text(), /Sign in to see/);
});

test('/api/me shows a third-party app only the profile and email the user allowed it', async (t) => {
  const u = await user();
  await api.database.db
    .updateTable('accounts')
    .set({ first_name: 'Rita', country: 'FR' })
    .where('id', '=', u.id)
    .execute();
  const me = async (scopes: string[]) => {
    await api.database.db
      .insertInto('oauth_consents')
      .values({ account_id: u.id, client_id: evil.client_id, scopes, granted_at: new Date(0) })
      .onConflict((oc) => oc.columns(['account_id', 'client_id']).doUpdateSet({ scopes }))
      .execute();
    const token = await mintToken(api.database.db, api.config, u, {
      clientId: evil.client_id,
      scopes: ['tracking:read'],
    });
    const res = await api.fetch(`/api/me?access_token=${token}`);
    t.is(res.status, 200);
    const body = (await res.json()) as Record<string, unknown>;
    return { body, key: decodeJwt(String(body.requestKey)) };
  };
  // Allowed tracking only: no email, no name, no country, in the answer or in requestKey.
  const bare = await me(['openid', 'tracking:read']);
  t.like(bare.body, { email: null, firstName: '', country: null, ldid: u.ldid });
  t.like(bare.key, { email: null, firstname: '', country: null, ldid: u.ldid });
  // With profile and email allowed, they are shown.
  const full = await me(['openid', 'profile', 'email', 'tracking:read']);
  t.like(full.body, { email: u.email, firstName: 'Rita', country: 'FR' });
  t.like(full.key, { email: u.email, firstname: 'Rita', country: 'FR' });
  // A first-party app reads the whole profile.
  const own = await mintToken(api.database.db, api.config, u, { scopes: ['tracking:read'] });
  const ownMe = (await (await api.fetch(`/api/me?access_token=${own}`)).json()) as Record<string, unknown>;
  t.like(ownMe, { email: u.email, firstName: 'Rita' });
});
