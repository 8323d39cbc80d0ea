import { setTimeout as sleep } from 'node:timers/promises';
import test from 'ava';
import { decodeJwt } from 'jose';
import * as oidc from 'openid-client';
import { accountsService } from '../api/accounts/index.ts';
import { trackingService } from '../api/tracking/index.ts';
import { issueApiKey } from '../shared/accounts/api-keys.ts';
import { registerClient } from '../shared/accounts/clients.ts';
import { refreshTokenTtl } from '../shared/auth/refresh-tokens.ts';
import { startTestApi, type TestApi } from './helpers/app.ts';
import { createClient, type TestClient } from './helpers/oauth-clients.ts';
import { authorizeUrl, createUser, FetchUserAgent, PASSWORD } from './helpers/oauth-user-agent.ts';
import { discover, logIn, oauthErrorOf } from './helpers/refresh-tokens.ts';
import { authorizationCode } from './helpers/tokens.ts';

// Refresh token lifetimes (idle and absolute, on an API whose settings are a few seconds) and the
// tracking spec's flow staying signed in through GET /oauth/accessToken.
const REDIRECT = 'https://app.example.test/cb';
const DAY = 24 * 3600;
// The absolute-lifetime test refreshes between ABSOLUTE_S - IDLE_S and IDLE_S after the sign-in:
// a window wide enough for a busy machine.
const ABSOLUTE_S = 20;
const IDLE_S = 16;
let api: TestApi;
let short: TestApi;
let app: TestClient & { apiKey: string };

test.before(async () => {
  [api, short] = await Promise.all([
    startTestApi(null, { services: [accountsService, trackingService] }),
    startTestApi(null, {
      publicUrl: true,
      services: [accountsService],
      env: { REFRESH_TOKEN_ABSOLUTE_TTL_S: String(ABSOLUTE_S), REFRESH_TOKEN_IDLE_TTL_S: String(IDLE_S) },
    }),
  ]);
  const client = await createClient(api, 'Tracking App', [REDIRECT]);
  app = { ...client, apiKey: (await issueApiKey(api.database.db, client.client_id, 'app')).api_key };
});
test.after.always(async () => {
  await api?.close();
  await short?.close();
});

test('the rule: an idle window, cut at the end of the family (30 and 14 days by default)', (t) => {
  const limits = { absoluteS: 30 * DAY, idleS: 14 * DAY };
  t.is(refreshTokenTtl(0, 0, limits), 14 * DAY);
  t.is(refreshTokenTtl(0, 10 * DAY, limits), 14 * DAY);
  t.is(refreshTokenTtl(0, 20 * DAY, limits), 10 * DAY);
  t.is(refreshTokenTtl(0, 30 * DAY - 5, limits), 5);
  t.is(refreshTokenTtl(0, 30 * DAY, limits), 1, 'never zero (oidc-provider wants a positive lifetime)');
  t.is(refreshTokenTtl(0, 0, { absoluteS: DAY, idleS: 14 * DAY }), DAY, 'an absolute shorter than the idle wins');
});

/** A refresh token's stored lifetime: when its family began (iiat), when it was issued and when it ends. */
async function lifetime(db: TestApi['database']['db'], refreshToken: string) {
  const row = await db
    .selectFrom('oidc_payloads')
    .select('payload')
    .where('model', '=', 'RefreshToken')
    .where('id', '=', refreshToken)
    .executeTakeFirstOrThrow();
  const { iiat, iat, exp } = row.payload as { iiat: number; iat: number; exp: number };
  return { iiat, iat, exp };
}

/** Waits until the clock passes this epoch second. */
async function until(epochSeconds: number): Promise<void> {
  const wait = epochSeconds * 1000 - Date.now();
  if (wait > 0) await sleep(wait);
}

async function shortLogIn() {
  const u = await createUser(short);
  const client = await registerClient(short.database.db, {
    client_name: 'Our app',
    redirect_uris: [REDIRECT],
    firstParty: true,
  });
  const config = await discover(short, client.client_id, client.client_secret);
  const tokens = await logIn(short, config, { email: u.email, redirectUri: REDIRECT, scope: 'openid offline_access' });
  return { config, refreshToken: tokens.refresh_token ?? '' };
}

test('idle lifetime: a refresh token unused for REFRESH_TOKEN_IDLE_TTL_S is refused', async (t) => {
  const { config, refreshToken } = await shortLogIn();
  const life = await lifetime(short.database.db, refreshToken);
  t.is(life.exp - life.iat, IDLE_S);
  await until(life.exp + 1);
  t.is(await oauthErrorOf(oidc.refreshTokenGrant(config, refreshToken)), 'invalid_grant');
});

test('absolute lifetime: rotated tokens never outlive REFRESH_TOKEN_ABSOLUTE_TTL_S after the sign-in', async (t) => {
  const { config, refreshToken } = await shortLogIn();
  const first = await lifetime(short.database.db, refreshToken);
  t.is(first.iiat, first.iat);
  // Past the point where a full idle window would reach beyond the family's end.
  await until(first.iiat + ABSOLUTE_S - IDLE_S + 2);
  const next = await oidc.refreshTokenGrant(config, refreshToken);
  const second = await lifetime(short.database.db, next.refresh_token ?? '');
  t.is(second.iiat, first.iiat, 'the same family');
  t.is(second.exp, first.iiat + ABSOLUTE_S, 'cut at the absolute end, before its idle window');
  t.true(second.exp < second.iat + IDLE_S);
  await until(second.exp + 1);
  t.is(await oauthErrorOf(oidc.refreshTokenGrant(config, next.refresh_token ?? '')), 'invalid_grant');
});

/** GET /oauth/accessToken with these parameters (and the app's credentials unless given). */
async function accessToken(params: Record<string, string>) {
  const query = new URLSearchParams({ client_id: app.client_id, client_secret: app.client_secret, ...params });
  const res = await api.fetch(`/oauth/accessToken?${query}`);
  return { status: res.status, body: (await res.json()) as Record<string, string> };
}

const trackingMe = (bearer: string) =>
  api.fetch('/v2/me', { headers: { authorization: `Bearer ${bearer}`, 'x-api-key': app.apiKey } });

test('tracking flow: offline_access at /oauth/authorize, then grant_type=refresh_token at /oauth/accessToken', async (t) => {
  const u = await createUser(api);
  const code = await authorizationCode(api.url, {
    path: '/oauth/authorize',
    clientId: app.client_id,
    redirectUri: REDIRECT,
    email: u.email,
    password: PASSWORD,
    scope: 'openid profile email tracking:read tracking:write offline_access',
  });
  const first = await accessToken({ grant_type: 'authorization_code', code, redirect_uri: REDIRECT });
  t.is(first.status, 200);
  t.deepEqual(Object.keys(first.body).sort(), ['access_token', 'refresh_token']);
  const second = await accessToken({ grant_type: 'refresh_token', refresh_token: first.body.refresh_token ?? '' });
  t.is(second.status, 200);
  t.deepEqual(Object.keys(second.body).sort(), ['access_token', 'refresh_token']);
  t.not(second.body.refresh_token, first.body.refresh_token, 'rotated');
  // The new access token gives the profile and the tracking bearer, as the first one did.
  const me = await api.fetch(`/api/me?access_token=${second.body.access_token}`);
  t.is(me.status, 200);
  const { requestKey } = (await me.json()) as { requestKey: string };
  t.is(decodeJwt(requestKey).grant_id, decodeJwt(second.body.access_token ?? '').grant_id);
  t.is((await trackingMe(requestKey)).status, 200);
  // The refresh token is the app's: another app, or a wrong secret, gets nothing from it.
  const other = await createClient(api, 'Other', [REDIRECT]);
  const stolen = await accessToken({
    client_id: other.client_id,
    client_secret: other.client_secret,
    grant_type: 'refresh_token',
    refresh_token: second.body.refresh_token ?? '',
  });
  t.like(stolen, { status: 400, body: { error: 'invalid_grant' } });
  const wrongSecret = await accessToken({
    client_secret: 'cs_wrong',
    grant_type: 'refresh_token',
    refresh_token: second.body.refresh_token ?? '',
  });
  t.like(wrongSecret, { status: 401, body: { error: 'invalid_client' } });
  // The first refresh token used again: the whole sign-in ends, the requestKey with it.
  const reused = await accessToken({ grant_type: 'refresh_token', refresh_token: first.body.refresh_token ?? '' });
  t.like(reused, { status: 400, body: { error: 'invalid_grant' } });
  t.is((await trackingMe(requestKey)).status, 401);
  t.is((await trackingMe(second.body.access_token ?? '')).status, 401);
  const after = await accessToken({ grant_type: 'refresh_token', refresh_token: second.body.refresh_token ?? '' });
  t.like(after, { status: 400, body: { error: 'invalid_grant' } });
});

test('tracking flow without offline_access: exactly {access_token}, as the spec shows', async (t) => {
  const u = await createUser(api);
  const code = await authorizationCode(api.url, {
    path: '/oauth/authorize',
    clientId: app.client_id,
    redirectUri: REDIRECT,
    email: u.email,
    password: PASSWORD,
  });
  const res = await accessToken({ grant_type: 'authorization_code', code, redirect_uri: REDIRECT });
  t.is(res.status, 200);
  t.deepEqual(Object.keys(res.body), ['access_token']);
  const refresh = await accessToken({ grant_type: 'refresh_token', refresh_token: 'not-a-refresh-token' });
  t.like(refresh, { status: 400, body: { error: 'invalid_grant' } });
});

test('signing out at /oauth/logout ends the tokens of the sign-in, unless it stays signed in (offline_access)', async (t) => {
  const u = await createUser(api);
  const client = await registerClient(api.database.db, {
    client_name: 'Web',
    redirect_uris: [REDIRECT],
    firstParty: true,
  });
  const { api_key: apiKey } = await issueApiKey(api.database.db, client.client_id, 'web');
  const basic = `Basic ${Buffer.from(`${client.client_id}:${client.client_secret}`).toString('base64')}`;
  const token = async (form: Record<string, string>) => {
    const res = await api.fetch('/token', {
      method: 'POST',
      headers: { authorization: basic, 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams(form),
    });
    return { status: res.status, body: (await res.json()) as { access_token: string; refresh_token?: string } };
  };
  /** A browser signed in to the app with this scope, the tokens it got, and its sign-out. */
  const signedIn = async (scope: string) => {
    const ua = new FetchUserAgent(api.url);
    const back = await ua.signIn(await ua.follow(authorizeUrl(client.client_id, REDIRECT, { scope })), u.email);
    const code = URL.parse(back.headers.get('location') ?? '')?.searchParams.get('code') ?? '';
    const { body } = await token({ grant_type: 'authorization_code', code, redirect_uri: REDIRECT });
    const signOut = async () => {
      const confirm = await (await ua.follow('/oauth/logout')).text();
      t.regex(confirm, /<title>Sign out · Sports backend<\/title>/, 'our confirmation page');
      const xsrf = /name="xsrf" value="([^"]+)"/.exec(confirm)?.[1] ?? '';
      const done = await ua.post('/oauth/logout/confirm', { xsrf, logout: 'yes' });
      const landed =
        done.status >= 300 && done.status < 400 ? await ua.follow(done.headers.get('location') ?? '') : done;
      t.regex(await landed.text(), /<h1>Signed out<\/h1>/, 'our signed-out page');
    };
    return { tokens: body, signOut };
  };
  const me = (bearer: string) =>
    api.fetch('/v2/me', { headers: { authorization: `Bearer ${bearer}`, 'x-api-key': apiKey } });
  const plain = await signedIn('openid tracking:read');
  const offline = await signedIn('openid offline_access tracking:read');
  t.truthy(offline.tokens.refresh_token);
  t.is((await me(plain.tokens.access_token)).status, 200);
  await plain.signOut();
  const refused = await me(plain.tokens.access_token);
  t.is(refused.status, 401);
  t.regex(await refused.text(), /sign-in this token came from was revoked/);
  await offline.signOut();
  t.is((await me(offline.tokens.access_token)).status, 200, 'a grant holding offline_access outlives the sign-out');
  const next = await token({ grant_type: 'refresh_token', refresh_token: offline.tokens.refresh_token ?? '' });
  t.is(next.status, 200);
});
