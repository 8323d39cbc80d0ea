import test from 'ava';
import { decodeJwt } from 'jose';
import { accountsService } from '../api/accounts/index.ts';
import { startTestApi, type TestApi } from './helpers/app.ts';
import { createClient, type TestClient } from './helpers/oauth-clients.ts';
import { authorizeUrl, createUser, FetchUserAgent, PASSWORD } from './helpers/oauth-user-agent.ts';
import { guardedTestService, mintToken, testClientId } from './helpers/tokens.ts';

// The attacks of "Security defects found from outside" on the login service, replayed over HTTP:
// the consent page, the error pages and the account page (the tokens are in
// test/accounts-consent-tokens.test.ts).
const EVIL_CB = 'https://evil.example.test/cb';
let api: TestApi;
let evil: TestClient;
let evilBasic: string;

test.before(async () => {
  api = await startTestApi(null, {
    publicUrl: true,
    services: [accountsService, guardedTestService(), guardedTestService('places', '/test-places')],
  });
  // Anyone may register a client: the attacker does, with their own redirect URI.
  evil = await createClient(api, 'Totally legit app', [EVIL_CB]);
  evilBasic = evil.basic;
});
test.after.always(() => api?.close());

/** A browser of one user on this file's API. */
class UserAgent extends FetchUserAgent {
  constructor() {
    super(api.url);
  }
}

const user = (roles?: ('user' | 'staff')[]) => createUser(api, roles);

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

test('the account scope is asked in plain words on the consent page', async (t) => {
  const u = await user();
  const ua = await signedInBrowser(u.email);
  const res = await ua.follow(authorizeUrl(evil.client_id, EVIL_CB, { scope: 'openid tracking:read account' }));
  t.is(res.status, 200);
  const html = await res.text();
  t.regex(html, /Export all your personal data \(your email, names and the applications you allowed among it\)/);
  t.regex(html, /schedule the deletion of your account/);
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
