import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import test, { type ExecutionContext } from 'ava';
import { decodeJwt, decodeProtectedHeader } from 'jose';
import type { Page } from 'playwright-core';
import { accountsService } from '../api/accounts/index.ts';
import { createAccount } from '../shared/accounts/accounts.ts';
import { startTestApi, type TestApi } from './helpers/app.ts';
import { type CallbackServer, launchBrowser, startCallbackServer, type TestBrowser } from './helpers/browser.ts';
import { answerConsentPage, checkAccessible, signIn } from './helpers/login-pages.ts';
import { createClient, type TestClient } from './helpers/oauth-clients.ts';
import { guardedTestService } from './helpers/tokens.ts';

// A new user end to end in Debian's headless Chromium: the places spec's implicit login,
// registering on the way, then the consent page a third-party application gets (Allow, Deny)
// and the account page where the user withdraws it. The code flows of a known user are in
// test/accounts-browser-code.test.ts.
const PASSWORD = 'correct horse battery';
let api: TestApi;
let browser: TestBrowser;
let callback: CallbackServer;
let client: TestClient;
let basic: string;

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
});
test.after.always(async () => {
  await browser?.close();
  await callback?.close();
  await api?.api.close();
  await api?.database.drop();
});

const answerConsent = (t: ExecutionContext, page: Page, decision: 'Allow' | 'Deny', asks: RegExp[]) =>
  answerConsentPage(t, page, callback.redirectUri, decision, asks);

test.serial('places: implicit id_token login (register on the way), then a write with the JWT', async (t) => {
  const context = await browser.context();
  const page = await context.newPage();
  const nonce = randomBytes(16).toString('base64url');
  const state = randomUUID();
  await page.goto(
    `${api.url}/authorize?${new URLSearchParams({
      audience: api.config.AUTH_AUDIENCE,
      scope: 'openid profile email places:read places:write',
      response_type: 'id_token',
      client_id: client.client_id,
      redirect_uri: callback.redirectUri,
      nonce,
      state,
    })}`,
  );
  t.regex(await page.title(), /Sign in/);
  t.truthy(await page.getByText('Browser test app').count());
  await checkAccessible(t, page);
  await page.getByRole('link', { name: 'Create an account' }).click();
  t.regex(await page.title(), /Create an account/);
  await checkAccessible(t, page);

  // A bad submission shows the errors next to their fields.
  await page.getByLabel('Email', { exact: true }).fill('not-an-email');
  await page.getByRole('button', { name: 'Create account' }).click();
  t.truthy(await page.getByRole('alert').count());
  t.is(await page.getByLabel('Email', { exact: true }).getAttribute('aria-invalid'), 'true');

  const email = `new-${randomUUID().slice(0, 8)}@example.test`;
  await page.getByLabel('Email', { exact: true }).fill(email);
  await page.getByLabel('Password', { exact: true }).fill('a long enough password');
  await page.getByLabel('First name').fill('Paula');
  await page.getByLabel('Last name').fill('Places');
  await page.getByLabel('Country').fill('fr');
  await page.getByRole('button', { name: 'Create account' }).click();
  // Registering never signs in (the answer is the same for a taken email): sign in, then consent.
  t.regex(await page.getByRole('status').innerText(), /Your account is ready/);
  await page.getByLabel('Password', { exact: true }).fill('a long enough password');
  await page.getByRole('button', { name: 'Sign in' }).click();
  await answerConsent(t, page, 'Allow', [/Add, change and delete places/, /See your email address/]);
  await page.waitForURL((u) => u.href.startsWith(callback.redirectUri));

  const fragment = new URLSearchParams(new URL(page.url()).hash.slice(1));
  t.is(fragment.get('state'), state);
  const idToken = fragment.get('id_token') ?? '';
  const claims = decodeJwt(idToken);
  t.is(claims.nonce, nonce);
  t.is(claims.aud, client.client_id);
  t.is(claims.iss, api.config.issuer);
  t.is(claims.email, email);
  t.is(decodeProtectedHeader(idToken).alg, 'RS256');

  // The places spec then calls POST /api/v1/places with that JWT: places writes accept it, no other service does.
  const placesWrite = (token: string) =>
    api.fetch('/test-places/writes', { method: 'POST', headers: { authorization: `Bearer ${token}` } });
  const write = await placesWrite(idToken);
  t.is(write.status, 201);
  const who = (await write.json()) as { accountId: string; roles: string[] };
  t.is(who.accountId, String(claims.sub));
  t.deepEqual(who.roles, ['user']);
  t.is((await api.fetch('/test-places/writes', { method: 'POST' })).status, 401);
  const elsewhere = await api.fetch('/test/writes', {
    method: 'POST',
    headers: { authorization: `Bearer ${idToken}` },
  });
  t.is(elsewhere.status, 401);

  // Signed in and allowed already: `id_token token` returns at once with an API access token as well.
  const state2 = randomUUID();
  await page.goto(
    `${api.url}/authorize?${new URLSearchParams({
      scope: 'openid profile email places:read places:write',
      response_type: 'id_token token',
      client_id: client.client_id,
      redirect_uri: callback.redirectUri,
      nonce,
      state: state2,
    })}`,
  );
  await page.waitForURL((u) => u.href.startsWith(callback.redirectUri));
  const second = new URLSearchParams(new URL(page.url()).hash.slice(1));
  t.is(second.get('state'), state2);
  const accessToken = second.get('access_token') ?? '';
  t.is(decodeJwt(accessToken).aud, api.config.AUTH_AUDIENCE);
  t.is(decodeProtectedHeader(accessToken).typ, 'at+jwt');
  t.is(decodeJwt(accessToken).scope, 'places:read places:write');
  t.is((await placesWrite(accessToken)).status, 201);
  // It holds the places scopes only: a tracking write is refused (403 insufficient_scope).
  const tracking = await api.fetch('/test/writes', {
    method: 'POST',
    headers: { authorization: `Bearer ${accessToken}` },
  });
  t.is(tracking.status, 403);
  t.regex(tracking.headers.get('www-authenticate') ?? '', /insufficient_scope/);
  await context.close();
});

test.serial(
  'consent page: Deny goes back to the app with access_denied; the account page withdraws an allowed app',
  async (t) => {
    const shots = await mkdtemp(path.join(tmpdir(), 'sb-consent-'));
    const context = await browser.context();
    try {
      const page = await context.newPage();
      const email = `deny-${randomUUID().slice(0, 8)}@example.test`;
      await createAccount(api.database.db, { email, password: PASSWORD, first_name: 'Dee', last_name: 'Nied' });
      const authorize = (state: string) =>
        `${api.url}/authorize?${new URLSearchParams({
          response_type: 'code',
          scope: 'openid email tracking:read admin',
          client_id: client.client_id,
          redirect_uri: callback.redirectUri,
          state,
        })}`;
      await page.goto(authorize('s1'));
      await signIn(page, email, PASSWORD);
      await page.waitForURL((u) => u.pathname.startsWith('/interaction/'));
      // `admin` is never offered to a third-party application.
      t.notRegex(await page.locator('main').innerText(), /staff powers/);
      const file = path.join(shots, 'consent.png');
      await page.screenshot({ path: file, fullPage: true });
      t.true((await stat(file)).size > 10_000, 'a screenshot with content');
      await answerConsent(t, page, 'Deny', [/See your activities/, /See your email address/]);
      await page.waitForURL((u) => u.href.startsWith(callback.redirectUri));
      const denied = new URL(page.url()).searchParams;
      t.is(denied.get('error'), 'access_denied');
      t.is(denied.get('code'), null);

      // Allowed this time: a code, then a token the services accept.
      await page.goto(authorize('s2'));
      await answerConsent(t, page, 'Allow', [/See your activities/]);
      await page.waitForURL((u) => u.href.startsWith(callback.redirectUri));
      const code = new URL(page.url()).searchParams.get('code') ?? '';
      const res = await api.fetch('/token', {
        method: 'POST',
        headers: { authorization: basic, 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ grant_type: 'authorization_code', code, redirect_uri: callback.redirectUri }),
      });
      const { access_token: token } = (await res.json()) as { access_token: string };
      t.is(decodeJwt(token).scope, 'tracking:read');
      const read = () => api.fetch('/test/me', { headers: { authorization: `Bearer ${token}` } });
      const placesWrite = () =>
        api.fetch('/test-places/writes', { method: 'POST', headers: { authorization: `Bearer ${token}` } });
      const trackingWrite = () =>
        api.fetch('/test/writes', { method: 'POST', headers: { authorization: `Bearer ${token}` } });
      t.is((await read()).status, 200);
      t.is((await placesWrite()).status, 403, 'no places scope was granted');
      t.is((await trackingWrite()).status, 403, 'tracking:read only');

      // The account page lists the app and what it may do; withdrawing it ends its token at once.
      await page.goto(`${api.url}/account`);
      await checkAccessible(t, page);
      await signIn(page, email, PASSWORD);
      await page.waitForURL((u) => u.pathname === '/account');
      t.regex(await page.title(), /Applications you allowed/);
      const listed = await page.locator('main').innerText();
      t.regex(listed, /Browser test app/);
      t.regex(listed, /See your activities, GPS tracks/);
      await checkAccessible(t, page);
      const accountShot = path.join(shots, 'account.png');
      await page.screenshot({ path: accountShot, fullPage: true });
      t.true((await stat(accountShot).then((s) => s.size)) > 10_000);
      await page.getByRole('button', { name: 'Withdraw access of Browser test app' }).click();
      t.regex(await page.getByRole('status').innerText(), /Access withdrawn/);
      t.regex(await page.locator('main').innerText(), /not allowed any third-party application/);
      const refused = await read();
      t.is(refused.status, 401);
      t.regex(((await refused.json()) as { detail: string }).detail, /withdrew/);

      // The same browser asks again: the consent page, not a silent code.
      await page.goto(authorize('s3'));
      await page.waitForURL((u) => u.pathname.startsWith('/interaction/'));
      t.regex(await page.title(), /Allow Browser test app\?/);
    } finally {
      await context.close();
      await rm(shots, { recursive: true, force: true });
    }
  },
);
