import test from 'ava';
import * as oidc from 'openid-client';
import { accountsService } from '../api/accounts/index.ts';
import { createAccount } from '../shared/accounts/accounts.ts';
import { startTestApi, type TestApi } from './helpers/app.ts';
import { authorizationRedirect } from './helpers/tokens.ts';

// RFC 8252: a native app registers as a public client (no secret at /token, PKCE required) and
// comes back through a private-use URI scheme or a loopback address on any port. Driven with
// openid-client, as a mobile or desktop app would use it.
const PASSWORD = 'correct horse battery';
const SCHEME_REDIRECT = 'com.example.fit:/callback';
const LOOPBACK_REDIRECT = 'http://127.0.0.1/callback';
let api: TestApi;
let email: string;
let native: { client_id: string; client_secret: string; token_endpoint_auth_method: string };

async function register(body: Record<string, unknown>): Promise<Response> {
  return api.fetch('/api/v1/clients', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
}

test.before(async () => {
  // PUBLIC_URL is the server's own URL: openid-client checks the discovered issuer against it.
  api = await startTestApi(null, { publicUrl: true, services: [accountsService] });
  const res = await register({
    client_name: 'Example Fit for iOS',
    redirect_uris: [SCHEME_REDIRECT, LOOPBACK_REDIRECT],
    token_endpoint_auth_method: 'none',
  });
  if (res.status !== 201) throw new Error(`registration: ${res.status} ${await res.text()}`);
  native = (await res.json()) as typeof native;
  email = (await createAccount(api.database.db, { email: 'native@example.test', password: PASSWORD })).email ?? '';
});
test.after.always(() => api?.close());

/** openid-client's view of our provider, for the public client (no client authentication). */
function discover(): Promise<oidc.Configuration> {
  return oidc.discovery(new URL(api.url), native.client_id, undefined, oidc.None(), {
    execute: [oidc.allowInsecureRequests],
  });
}

/** Signs in as a browser would and returns where the provider sent it back. */
async function logIn(config: oidc.Configuration, redirectUri: string, pkce = true) {
  const verifier = oidc.randomPKCECodeVerifier();
  const state = oidc.randomState();
  const url = oidc.buildAuthorizationUrl(config, {
    redirect_uri: redirectUri,
    scope: 'openid profile email tracking:read',
    state,
    ...(pkce ? { code_challenge: await oidc.calculatePKCECodeChallenge(verifier), code_challenge_method: 'S256' } : {}),
  });
  const location = await authorizationRedirect(api.url, url.href, { redirectUri, email, password: PASSWORD });
  return { location: new URL(location), verifier, state };
}

test('registration: a public client gets token_endpoint_auth_method none', (t) => {
  t.is(native.token_endpoint_auth_method, 'none');
  t.regex(native.client_id, /^cl_/);
});

test('a public client logs in with a private-use URI scheme redirect, PKCE and no secret', async (t) => {
  const config = await discover();
  t.true(config.serverMetadata().token_endpoint_auth_methods_supported?.includes('none'));
  const { location, verifier, state } = await logIn(config, SCHEME_REDIRECT);
  t.is(location.protocol, 'com.example.fit:');
  t.is(location.pathname, '/callback');
  const tokens = await oidc.authorizationCodeGrant(config, location, {
    pkceCodeVerifier: verifier,
    expectedState: state,
  });
  t.is(tokens.token_type.toLowerCase(), 'bearer');
  t.truthy(tokens.id_token);
  t.is(tokens.claims()?.aud, native.client_id);
  // The access token is a bearer of our APIs: the tracking profile answers to it.
  const me = await api.fetch('/api/me', { headers: { authorization: `Bearer ${tokens.access_token}` } });
  t.is(me.status, 200);
  t.like(await me.json(), { email });
});

test('a loopback redirect is accepted on any port (RFC 8252 §7.3)', async (t) => {
  const config = await discover();
  const redirectUri = 'http://127.0.0.1:49152/callback';
  const { location, verifier, state } = await logIn(config, redirectUri);
  t.is(location.port, '49152');
  const tokens = await oidc.authorizationCodeGrant(config, location, {
    pkceCodeVerifier: verifier,
    expectedState: state,
  });
  t.truthy(tokens.access_token);
});

test('without PKCE a public client gets no code', async (t) => {
  const config = await discover();
  const url = oidc.buildAuthorizationUrl(config, {
    redirect_uri: SCHEME_REDIRECT,
    scope: 'openid',
    state: oidc.randomState(),
  });
  const res = await fetch(url, { redirect: 'manual' });
  // An untrusted redirect (nobody signed in yet): the error is shown on our page, not redirected.
  t.is(res.status, 400);
  t.regex(await res.text(), /invalid_request.*code_challenge|PKCE/i);
});

test('the token endpoint refuses a code without its verifier', async (t) => {
  const config = await discover();
  const { location } = await logIn(config, SCHEME_REDIRECT);
  const res = await api.fetch('/token', {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({
      grant_type: 'authorization_code',
      client_id: native.client_id,
      code: location.searchParams.get('code') ?? '',
      redirect_uri: SCHEME_REDIRECT,
    }),
  });
  t.is(res.status, 400);
  t.like(await res.json(), { error: 'invalid_grant' });
});

test("a public client's secret is refused at /token; it only issues the app's API keys", async (t) => {
  const basic = `Basic ${Buffer.from(`${native.client_id}:${native.client_secret}`).toString('base64')}`;
  const token = await api.fetch('/token', {
    method: 'POST',
    headers: { authorization: basic, 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ grant_type: 'authorization_code', code: 'x', redirect_uri: SCHEME_REDIRECT }),
  });
  t.is(token.status, 401);
  t.like(await token.json(), { error: 'invalid_client' });
  const key = await api.fetch(`/api/v1/clients/${native.client_id}/api-keys`, {
    method: 'POST',
    headers: { authorization: basic, 'content-type': 'application/json' },
    body: JSON.stringify({ label: 'iOS app' }),
  });
  t.is(key.status, 201);
});

test('private-use schemes: reverse domain names, for public clients only', async (t) => {
  const confidential = await register({ client_name: 'Web app', redirect_uris: [SCHEME_REDIRECT] });
  t.is(confidential.status, 422);
  t.regex(JSON.stringify(await confidential.json()), /token_endpoint_auth_method/);
  for (const uri of ['myapp:/callback', 'javascript:alert(1)', 'com.example.fit://callback', 'http://example.com/cb']) {
    const res = await register({ client_name: 'Bad', redirect_uris: [uri], token_endpoint_auth_method: 'none' });
    t.is(res.status, 422, uri);
  }
  const web = await register({
    client_name: 'Claimed https',
    redirect_uris: ['https://fit.example.com/app'],
    token_endpoint_auth_method: 'none',
  });
  t.is(web.status, 201);
});
