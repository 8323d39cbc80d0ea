import { createHash, randomBytes, randomUUID } from 'node:crypto';
import test, { type ExecutionContext } from 'ava';
import { decodeJwt } from 'jose';
import type { Page } from 'playwright-core';
import { accountsService } from '../api/accounts/index.ts';
import { type Account, createAccount } from '../shared/accounts/accounts.ts';
import { startTestApi, type TestApi } from './helpers/app.ts';
import { type CallbackServer, launchBrowser, startCallbackServer, type TestBrowser } from './helpers/browser.ts';
import { answerConsentPage, signIn } from './helpers/login-pages.ts';
import { createClient, type TestClient } from './helpers/oauth-clients.ts';
import { guardedTestService } from './helpers/tokens.ts';

// The tracking spec's code flow and the code flow with PKCE, end to end in Debian's headless
// Chromium, for a user who allows the application once (the tests run in order). A new user's
// registration, consent and withdrawal are in test/accounts-browser-consent.test.ts.
const PASSWORD = 'correct horse battery';
let api: TestApi;
let browser: TestBrowser;
let callback: CallbackServer;
let client: TestClient;
let basic: string;
let known: Account;

test.before(async () => {
  [api, browser, callback] = await Promise.all([
    startTestApi(null, {
      publicUrl: true,
      services: [accountsService, guardedTestService(), guardedTestService('places', '/test-places')],
    }),
    launchBrowser(),
    startCallbackServer(),
  ]);
  client = await createClient(api, 'Browser test app', [callback.redirectUri]);
  basic = client.basic;
  known = await createAccount(api.database.db, {
    email: 'runner@example.test',
    password: PASSWORD,
    first_name: 'Rita',
    last_name: 'Runner',
    gender: 2,
    birth_date: '1990-04-05',
    country: 'FR',
  });
});
test.after.always(async () => {
  await browser?.close();
  await callback?.close();
  await api?.api.close();
  await api?.database.drop();
});

const answerConsent = (t: ExecutionContext, page: Page, decision: 'Allow' | 'Deny', asks: RegExp[]) =>
  answerConsentPage(t, page, callback.redirectUri, decision, asks);

test.serial('tracking: /oauth/authorize code, GET /oauth/accessToken, /api/me and its requestKey', async (t) => {
  const context = await browser.context();
  const page = await context.newPage();
  await page.goto(
    `${api.url}/oauth/authorize?${new URLSearchParams({ response_type: 'code', client_id: client.client_id, redirect_uri: callback.redirectUri })}`,
  );
  // A wrong password is refused on the page, with the error announced.
  await signIn(page, known.email ?? '', 'wrong password!');
  t.is(await page.getByRole('alert').textContent(), 'The email or password is not correct.');
  await signIn(page, known.email ?? '', PASSWORD);
  await answerConsent(t, page, 'Allow', [/See your activities, GPS tracks/, /Add, change and delete your activities/]);
  await page.waitForURL((u) => u.href.startsWith(callback.redirectUri));
  const code = new URL(page.url()).searchParams.get('code') ?? '';
  t.true(code.length > 10);
  await context.close();

  const exchange = (c: string) =>
    api.fetch(
      `/oauth/accessToken?${new URLSearchParams({
        client_id: client.client_id,
        redirect_uri: callback.redirectUri,
        client_secret: client.client_secret,
        code: c,
        grant_type: 'authorization_code',
      })}`,
    );
  const tokenRes = await exchange(code);
  t.is(tokenRes.status, 200, await tokenRes.clone().text());
  const body = (await tokenRes.json()) as { access_token: string };
  t.deepEqual(Object.keys(body), ['access_token']);
  const at = decodeJwt(body.access_token);
  t.is(at.sub, known.id);
  t.is(at.aud, api.config.AUTH_AUDIENCE);
  t.is(at.ldid, known.ldid);

  const meRes = await api.fetch(`/api/me?access_token=${encodeURIComponent(body.access_token)}`);
  t.is(meRes.status, 200);
  const me = (await meRes.json()) as Record<string, unknown>;
  t.like(me, {
    email: 'runner@example.test',
    firstName: 'Rita',
    lastName: 'Runner',
    gender: 2,
    birthdate: Date.UTC(1990, 3, 5),
    ldid: known.ldid,
  });
  t.is(typeof me.created, 'number');
  const key = decodeJwt(String(me.requestKey));
  t.like(key, {
    iss: api.config.issuer,
    ldid: known.ldid,
    stack: 'default',
    firstname: 'Rita',
    lastname: 'Runner',
    email: 'runner@example.test',
    gender: 2,
    birthdate: '1990-04-05',
    country: 'FR',
  });
  // requestKey is the same token in the tracking form: it never outlives it, and never outranks it.
  t.is(key.exp, at.exp);
  t.is(key.jti, at.jti);
  t.is(key.scope, at.scope);
  t.is(key.client_id, client.client_id);

  // Tracking calls: requestKey as bearer plus an x-api-key of the client.
  const issued = await api.fetch(`/api/v1/clients/${client.client_id}/api-keys`, {
    method: 'POST',
    headers: { authorization: basic },
  });
  t.is(issued.status, 201);
  const { api_key } = (await issued.json()) as { api_key: string };
  const tracked = await api.fetch('/test/tracking', {
    headers: { authorization: `Bearer ${me.requestKey}`, 'x-api-key': api_key },
  });
  t.is(tracked.status, 200);
  t.like(await tracked.json(), { accountId: known.id, ldid: known.ldid, apiKeyClient: client.client_id });

  // A code works once; presented again, the tokens issued from it are refused (RFC 6749 §4.1.2).
  const again = await exchange(code);
  t.is(again.status, 400);
  t.is(((await again.json()) as { error: string }).error, 'invalid_grant');
  const revoked = await api.fetch('/test/tracking', {
    headers: { authorization: `Bearer ${me.requestKey}`, 'x-api-key': api_key },
  });
  t.is(revoked.status, 401);
});

test.serial('authorization code with PKCE at /authorize and POST /token', async (t) => {
  const context = await browser.context();
  const page = await context.newPage();
  const verifier = randomBytes(32).toString('base64url');
  const challenge = createHash('sha256').update(verifier).digest('base64url');
  const state = randomUUID();
  await page.goto(
    `${api.url}/authorize?${new URLSearchParams({
      response_type: 'code',
      scope: 'openid profile email',
      client_id: client.client_id,
      redirect_uri: callback.redirectUri,
      code_challenge: challenge,
      code_challenge_method: 'S256',
      state,
    })}`,
  );
  await signIn(page, known.email ?? '', PASSWORD);
  await page.waitForURL((u) => u.href.startsWith(callback.redirectUri));
  const back = new URL(page.url()).searchParams;
  t.is(back.get('state'), state);
  t.is(back.get('iss'), api.config.issuer);
  await context.close();

  const token = (codeVerifier: string) =>
    api.fetch('/token', {
      method: 'POST',
      headers: { authorization: basic, 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        grant_type: 'authorization_code',
        code: back.get('code') ?? '',
        redirect_uri: callback.redirectUri,
        code_verifier: codeVerifier,
      }),
    });
  const wrong = await token(randomBytes(32).toString('base64url'));
  t.is(wrong.status, 400);
  t.is(((await wrong.json()) as { error: string }).error, 'invalid_grant');
});

test.serial('authorization code with PKCE: the right verifier gets an access token the services accept', async (t) => {
  const context = await browser.context();
  const page = await context.newPage();
  const verifier = randomBytes(32).toString('base64url');
  const challenge = createHash('sha256').update(verifier).digest('base64url');
  await page.goto(
    `${api.url}/authorize?${new URLSearchParams({
      response_type: 'code',
      scope: 'openid email tracking:write',
      client_id: client.client_id,
      redirect_uri: callback.redirectUri,
      code_challenge: challenge,
      code_challenge_method: 'S256',
    })}`,
  );
  await signIn(page, known.email ?? '', PASSWORD);
  await page.waitForURL((u) => u.href.startsWith(callback.redirectUri));
  const code = new URL(page.url()).searchParams.get('code') ?? '';
  await context.close();
  const res = await api.fetch('/token', {
    method: 'POST',
    headers: { authorization: basic, 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({
      grant_type: 'authorization_code',
      code,
      redirect_uri: callback.redirectUri,
      code_verifier: verifier,
    }),
  });
  t.is(res.status, 200);
  const tokens = (await res.json()) as {
    access_token: string;
    id_token: string;
    token_type: string;
    expires_in: number;
  };
  t.is(tokens.token_type, 'Bearer');
  t.is(tokens.expires_in, 900);
  t.is(decodeJwt(tokens.id_token).aud, client.client_id);
  const at = decodeJwt(tokens.access_token);
  t.like(at, { sub: known.id, aud: api.config.AUTH_AUDIENCE, iss: api.config.issuer, ldid: known.ldid });
  t.deepEqual(at.roles, ['user']);
  t.is(at.scope, 'tracking:write');
  const write = await api.fetch('/test/writes', {
    method: 'POST',
    headers: { authorization: `Bearer ${tokens.access_token}` },
  });
  t.is(write.status, 201);
});
