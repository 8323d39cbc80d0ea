import test from 'ava';
import { decodeJwt } from 'jose';
import * as oidc from 'openid-client';
import { accountsService } from '../api/accounts/index.ts';
import { placesService } from '../api/places/index.ts';
import { trackingService } from '../api/tracking/index.ts';
import { issueApiKey } from '../shared/accounts/api-keys.ts';
import { registerClient } from '../shared/accounts/clients.ts';
import { startTestApi, type TestApi } from './helpers/app.ts';
import { createClient } from './helpers/oauth-clients.ts';
import { authorizeUrl, createUser, FetchUserAgent, PASSWORD } from './helpers/oauth-user-agent.ts';
import { placeBody } from './helpers/places.ts';
import { discover, logIn, oauthErrorOf } from './helpers/refresh-tokens.ts';

// Refresh tokens (offline_access) on the code flow, driven with openid-client as a client app
// would: rotation on every use, reuse revoking the whole sign-in (RFC 9700 §4.14), revocation
// (RFC 7009), consent, and the real tracking and places services refusing the tokens of a
// revoked sign-in. Lifetimes and the tracking spec's flow: test/accounts-refresh-flows.test.ts.
const REDIRECT = 'https://app.example.test/cb';
const NATIVE_REDIRECT = 'com.example.fit:/callback';
const SCOPE = 'openid profile email offline_access tracking:read tracking:write places:write';
let api: TestApi;
let firstParty: { client_id: string; client_secret: string; apiKey: string };

test.before(async () => {
  // PUBLIC_URL is the server's own URL: openid-client checks the discovered issuer against it.
  api = await startTestApi(null, { publicUrl: true, services: [accountsService, placesService, trackingService] });
  const client = await registerClient(api.database.db, {
    client_name: 'Our app',
    redirect_uris: [REDIRECT],
    firstParty: true,
  });
  const { api_key: apiKey } = await issueApiKey(api.database.db, client.client_id, 'tests');
  firstParty = { client_id: client.client_id, client_secret: client.client_secret, apiKey };
});
test.after.always(() => api?.close());

/** A tracking call (GET /v2/me) and a places write, with this bearer: their HTTP statuses and 401 reasons. */
async function services(accessToken: string, apiKey = firstParty.apiKey) {
  const tracking = await api.fetch('/v2/me', {
    headers: { authorization: `Bearer ${accessToken}`, 'x-api-key': apiKey },
  });
  const places = await api.fetch('/api/v1/places', {
    method: 'POST',
    headers: { authorization: `Bearer ${accessToken}`, 'content-type': 'application/json' },
    body: JSON.stringify(placeBody()),
  });
  const reason = async (res: Response) => (res.status === 401 ? JSON.stringify(await res.json()) : '');
  return {
    tracking: tracking.status,
    places: places.status,
    reasons: `${await reason(tracking)} ${await reason(places)}`,
  };
}

const stored = (id: string) =>
  api.database.db
    .selectFrom('oidc_payloads')
    .select(['model', 'expires_at', 'consumed_at', 'grant_id'])
    .where('id', '=', id)
    .executeTakeFirst();

test('offline_access gives a refresh token; each use rotates it; the new tokens work on tracking and places', async (t) => {
  const u = await createUser(api);
  const config = await discover(api, firstParty.client_id, firstParty.client_secret);
  const first = await logIn(api, config, { email: u.email, redirectUri: REDIRECT, scope: SCOPE });
  t.truthy(first.refresh_token);
  t.is(typeof decodeJwt(first.access_token).grant_id, 'string');
  const second = await oidc.refreshTokenGrant(config, first.refresh_token ?? '');
  t.truthy(second.refresh_token);
  t.not(second.refresh_token, first.refresh_token, 'rotated');
  t.not(second.access_token, first.access_token);
  t.is(decodeJwt(second.access_token).grant_id, decodeJwt(first.access_token).grant_id, 'the same sign-in');
  t.is(decodeJwt(second.access_token).sub, u.id);
  t.truthy(second.id_token);
  t.like(await services(second.access_token), { tracking: 200, places: 201 });
  // The rotated token is kept, consumed: that is how a second use is recognised.
  t.truthy((await stored(first.refresh_token ?? ''))?.consumed_at);
  // A grant lives as long as its refresh tokens (oidc-provider refuses a refresh past its grant).
  const grant = await stored(String(decodeJwt(second.access_token).grant_id));
  const token = await stored(second.refresh_token ?? '');
  t.truthy(grant?.expires_at && token?.expires_at && grant.expires_at >= token.expires_at);
});

test('without offline_access, or with a prompt lacking consent, no refresh token is issued', async (t) => {
  const u = await createUser(api);
  const config = await discover(api, firstParty.client_id, firstParty.client_secret);
  const plain = await logIn(api, config, { email: u.email, redirectUri: REDIRECT, scope: 'openid tracking:read' });
  t.truthy(plain.access_token);
  t.is(plain.refresh_token, undefined);
  // A refresh grant needs a refresh token: an access token is no refresh token.
  t.is(await oauthErrorOf(oidc.refreshTokenGrant(config, plain.access_token)), 'invalid_grant');
  // OpenID Connect Core §11: offline_access with another prompt than consent gives none.
  const login = await logIn(api, config, {
    email: u.email,
    redirectUri: REDIRECT,
    scope: SCOPE,
    extra: { prompt: 'login' },
  });
  t.truthy(login.access_token);
  t.is(login.refresh_token, undefined);
});

test('two refreshes with the same token at once count as a reuse: one answer, then the sign-in is revoked', async (t) => {
  const u = await createUser(api);
  const config = await discover(api, firstParty.client_id, firstParty.client_secret);
  const tokens = await logIn(api, config, { email: u.email, redirectUri: REDIRECT, scope: SCOPE });
  const results = await Promise.allSettled(
    [1, 2].map(() => oidc.refreshTokenGrant(config, tokens.refresh_token ?? '')),
  );
  const won = results.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
  t.is(won.length, 1, 'exactly one refresh succeeds');
  const [winner] = won;
  t.is(await oauthErrorOf(oidc.refreshTokenGrant(config, winner?.refresh_token ?? '')), 'invalid_grant');
  t.like(await services(winner?.access_token ?? ''), { tracking: 401, places: 401 });
});

test('a rotated refresh token used again revokes the whole sign-in: its tokens are refused everywhere', async (t) => {
  const u = await createUser(api);
  const config = await discover(api, firstParty.client_id, firstParty.client_secret);
  const first = await logIn(api, config, { email: u.email, redirectUri: REDIRECT, scope: SCOPE });
  const second = await oidc.refreshTokenGrant(config, first.refresh_token ?? '');
  const third = await oidc.refreshTokenGrant(config, second.refresh_token ?? '');
  for (const tokens of [first, second, third]) t.like(await services(tokens.access_token), { tracking: 200 });
  // An attacker (or a confused client) presents the first refresh token again.
  t.is(await oauthErrorOf(oidc.refreshTokenGrant(config, first.refresh_token ?? '')), 'invalid_grant');
  // Every token of the family is refused: the live refresh token and every access token.
  t.is(await oauthErrorOf(oidc.refreshTokenGrant(config, third.refresh_token ?? '')), 'invalid_grant');
  for (const tokens of [first, second, third]) {
    const after = await services(tokens.access_token);
    t.like(after, { tracking: 401, places: 401 });
    t.regex(after.reasons, /sign-in this token came from was revoked/);
  }
  // The id_token is a places bearer (the places spec's login): it carries the grant too.
  const idToken = await services(third.id_token ?? '');
  t.is(idToken.places, 401);
  t.is(await stored(third.refresh_token ?? ''), undefined, 'the live refresh token is deleted');
});

test('a native app (public client, PKCE) gets refresh tokens after consent; rotation and reuse detection hold', async (t) => {
  const u = await createUser(api);
  const res = await api.fetch('/api/v1/clients', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      client_name: 'Example Fit',
      redirect_uris: [NATIVE_REDIRECT],
      token_endpoint_auth_method: 'none',
    }),
  });
  const native = (await res.json()) as { client_id: string };
  const { api_key: apiKey } = await issueApiKey(api.database.db, native.client_id, 'app');
  const config = await discover(api, native.client_id);
  const first = await logIn(api, config, { email: u.email, redirectUri: NATIVE_REDIRECT, scope: SCOPE });
  t.truthy(first.refresh_token);
  const second = await oidc.refreshTokenGrant(config, first.refresh_token ?? '');
  t.not(second.refresh_token, first.refresh_token);
  t.like(await services(second.access_token, apiKey), { tracking: 200 });
  t.is(await oauthErrorOf(oidc.refreshTokenGrant(config, first.refresh_token ?? '')), 'invalid_grant');
  t.like(await services(second.access_token, apiKey), { tracking: 401 });
  t.is(await oauthErrorOf(oidc.refreshTokenGrant(config, second.refresh_token ?? '')), 'invalid_grant');
  // The app revokes its refresh token when the user signs out of it (no secret: its client_id).
  const again = await logIn(api, config, { email: u.email, redirectUri: NATIVE_REDIRECT, scope: SCOPE });
  await oidc.tokenRevocation(config, again.refresh_token ?? '');
  t.is(await oauthErrorOf(oidc.refreshTokenGrant(config, again.refresh_token ?? '')), 'invalid_grant');
  t.like(await services(again.access_token, apiKey), { tracking: 401 });
});

test('revoking a refresh token (RFC 7009) revokes its sign-in; another client cannot revoke it', async (t) => {
  const u = await createUser(api);
  const config = await discover(api, firstParty.client_id, firstParty.client_secret);
  t.is(config.serverMetadata().revocation_endpoint, `${api.config.issuer}/oauth/revoke`);
  const tokens = await logIn(api, config, { email: u.email, redirectUri: REDIRECT, scope: SCOPE });
  const refreshToken = tokens.refresh_token ?? '';
  // Another registered client presenting it is answered 200 and the token is left alone.
  const other = await createClient(api, 'Other app', [REDIRECT]);
  await oidc.tokenRevocation(await discover(api, other.client_id, other.client_secret), refreshToken);
  t.truthy(await stored(refreshToken));
  t.like(await services(tokens.access_token), { tracking: 200 });
  await oidc.tokenRevocation(config, refreshToken, { token_type_hint: 'refresh_token' });
  t.is(await oauthErrorOf(oidc.refreshTokenGrant(config, refreshToken)), 'invalid_grant');
  t.like(await services(tokens.access_token), { tracking: 401, places: 401 });
  // Revoking again, or an unknown token, is answered 200 as the RFC asks.
  await t.notThrowsAsync(oidc.tokenRevocation(config, refreshToken));
});

test('revoking an access token ends that token only; the refresh token still works', async (t) => {
  const u = await createUser(api);
  const config = await discover(api, firstParty.client_id, firstParty.client_secret);
  const tokens = await logIn(api, config, { email: u.email, redirectUri: REDIRECT, scope: SCOPE });
  await oidc.tokenRevocation(config, tokens.access_token, { token_type_hint: 'access_token' });
  t.like(await services(tokens.access_token), { tracking: 401 });
  const next = await oidc.refreshTokenGrant(config, tokens.refresh_token ?? '');
  t.like(await services(next.access_token), { tracking: 200 });
});

test('a third-party app asking offline_access gets the consent page saying it stays signed in; first-party apps skip it', async (t) => {
  const u = await createUser(api);
  const app = await createClient(api, 'Stay Signed In App', [REDIRECT]);
  const ua = new FetchUserAgent(api.url);
  // First-party: signing in leads straight back to the app with a code.
  const own = await ua.follow(authorizeUrl(firstParty.client_id, REDIRECT, { scope: 'openid offline_access' }));
  const back = await ua.signIn(own, u.email);
  t.regex(back.headers.get('location') ?? '', /^https:\/\/app\.example\.test\/cb\?code=/);
  // Third-party, first without offline_access: allowed once, remembered.
  const asked = async (scope: string) => ua.follow(authorizeUrl(app.client_id, REDIRECT, { scope }));
  const page = await asked('openid tracking:read');
  const html = await page.text();
  t.notRegex(html, /Stay signed in/);
  const csrf = /name="csrf" value="([^"]+)"/.exec(html)?.[1] ?? '';
  const allowed = await ua.post(`${new URL(page.url).pathname}/consent`, { csrf, decision: 'allow' });
  t.regex(allowed.headers.get('location') ?? '', /code=/);
  t.regex((await asked('openid tracking:read')).headers.get('location') ?? '', /code=/, 'remembered');
  // Asking to stay signed in shows the page again, naming it.
  const more = await asked('openid tracking:read offline_access');
  t.is(more.status, 200);
  const moreHtml = await more.text();
  t.regex(moreHtml, /asks for more than you allowed before/);
  t.regex(moreHtml, /Stay signed in: keep this access while you are away/);
  const allowedMore = await ua.post(`${new URL(more.url).pathname}/consent`, { csrf, decision: 'allow' });
  const code = URL.parse(allowedMore.headers.get('location') ?? '')?.searchParams.get('code') ?? '';
  const token = await api.fetch('/token', {
    method: 'POST',
    headers: { authorization: app.basic, 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ grant_type: 'authorization_code', code, redirect_uri: REDIRECT }),
  });
  t.truthy(((await token.json()) as { refresh_token?: string }).refresh_token);
  // prompt=none cannot add offline_access silently: oidc-provider drops it, no refresh token.
  const silent = await ua.follow(
    authorizeUrl(app.client_id, REDIRECT, { scope: 'openid offline_access', prompt: 'none' }),
  );
  const silentCode = URL.parse(silent.headers.get('location') ?? '')?.searchParams.get('code') ?? '';
  const silentToken = await api.fetch('/token', {
    method: 'POST',
    headers: { authorization: app.basic, 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ grant_type: 'authorization_code', code: silentCode, redirect_uri: REDIRECT }),
  });
  t.is(((await silentToken.json()) as { refresh_token?: string }).refresh_token, undefined);
});

test('withdrawing an app on the account page ends its refresh tokens', async (t) => {
  const u = await createUser(api);
  const app = await createClient(api, 'Withdrawn App', [REDIRECT]);
  const { api_key: apiKey } = await issueApiKey(api.database.db, app.client_id, 'app');
  const config = await discover(api, app.client_id, app.client_secret);
  const tokens = await logIn(api, config, { email: u.email, redirectUri: REDIRECT, scope: SCOPE });
  const ua = new FetchUserAgent(api.url);
  const csrf = /name="csrf" value="([^"]+)"/.exec(await (await ua.follow('/account')).text())?.[1] ?? '';
  const list = await ua.post('/account/login', { csrf, email: u.email, password: PASSWORD });
  t.regex(await list.text(), /Withdrawn App[\s\S]*Stay signed in/);
  await ua.post(`/account/apps/${app.client_id}/revoke`, { csrf });
  t.is(await oauthErrorOf(oidc.refreshTokenGrant(config, tokens.refresh_token ?? '')), 'invalid_grant');
  t.like(await services(tokens.access_token, apiKey), { tracking: 401 });
});

test("/oauth/introspect tells a client nothing of another client's token (was: active, sub and scope to anyone)", async (t) => {
  const u = await createUser(api);
  const config = await discover(api, firstParty.client_id, firstParty.client_secret);
  const signedIn = await logIn(api, config, { email: u.email, redirectUri: REDIRECT, scope: SCOPE });
  const refresh = signedIn.refresh_token ?? '';
  t.truthy(refresh);
  const thief = await createClient(api, 'Thief');
  const introspect = (basic: string) =>
    api
      .fetch('/oauth/introspect', {
        method: 'POST',
        headers: { authorization: basic, 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ token: refresh, token_type_hint: 'refresh_token' }),
      })
      .then(async (res) => ({ status: res.status, body: (await res.json()) as Record<string, unknown> }));
  const byThief = await introspect(thief.basic);
  t.is(byThief.status, 200);
  t.deepEqual(byThief.body, { active: false });
  const own = `Basic ${Buffer.from(`${firstParty.client_id}:${firstParty.client_secret}`).toString('base64')}`;
  const byOwner = await introspect(own);
  t.like(byOwner.body, { active: true, sub: u.id, client_id: firstParty.client_id });
  // The thief's probe did not count as a use: the token still refreshes once.
  t.truthy((await oidc.refreshTokenGrant(config, refresh)).access_token);
});
