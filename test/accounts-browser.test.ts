import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import test from 'ava';
import { decodeJwt, decodeProtectedHeader } from 'jose';
import type { Page } from 'playwright-core';
import { accountsService } from '../api/accounts/index.ts';
import { type Account, createAccount } from '../shared/accounts/accounts.ts';
import { startTestApi, type TestApi } from './helpers/app.ts';
import { type CallbackServer, launchBrowser, startCallbackServer, type TestBrowser } from './helpers/browser.ts';
import { guardedTestService } from './helpers/tokens.ts';

// Both login flows of the specs, end to end in Debian's headless Chromium, with the consent page
// a third-party application gets and the account page where a user withdraws it.
const PASSWORD = 'correct horse battery';
let api: TestApi;
let browser: TestBrowser;
let callback: CallbackServer;
let client: { client_id: string; client_secret: string };
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
  const res = await api.fetch('/api/v1/clients', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ client_name: 'Browser test app', redirect_uris: [callback.redirectUri] }),
  });
  client = (await res.json()) as { client_id: string; client_secret: string };
  basic = `Basic ${Buffer.from(`${client.client_id}:${client.client_secret}`).toString('base64')}`;
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

/** Every visible form control has a label; the page has a language and one h1. */
async function checkAccessible(t: { true: (v: boolean, m?: string) => void }, page: Page): Promise<void> {
  const unlabelled = await page
    .locator('input:not([type=hidden]), select')
    .evaluateAll((controls) =>
      controls
        .filter((c) => ((c as unknown as { labels: { length: number } | null }).labels?.length ?? 0) === 0)
        .map((c) => c.getAttribute('name') ?? '?'),
    );
  const report = {
    unlabelled,
    lang: await page.locator('html').getAttribute('lang'),
    h1: await page.locator('h1').count(),
  };
  t.true(report.unlabelled.length === 0, `unlabelled controls: ${report.unlabelled.join(', ')}`);
  t.true(report.lang === 'en' && report.h1 === 1, 'page has lang and one h1');
}

async function signIn(page: Page, email: string, password: string): Promise<void> {
  await page.getByLabel('Email', { exact: true }).fill(email);
  await page.getByLabel('Password', { exact: true }).fill(password);
  await page.getByRole('button', { name: 'Sign in' }).click();
}

/** The consent page names the application and what it asks; `allow` or deny it. */
async function answerConsent(
  t: import('ava').ExecutionContext,
  page: Page,
  decision: 'Allow' | 'Deny',
  asks: RegExp[],
): Promise<void> {
  await page.waitForURL((u) => u.pathname.startsWith('/interaction/'));
  t.regex(await page.title(), /Allow Browser test app\?/);
  const text = await page.locator('main').innerText();
  t.regex(text, /registered by a third party/);
  for (const ask of asks) t.regex(text, ask);
  t.regex(text, new RegExp(`sent back to ${new URL(callback.redirectUri).origin.replaceAll('.', '\\.')}`));
  await checkAccessible(t, page);
  await page.getByRole('button', { name: decision }).click();
}

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
  // A code works once.
  const again = await exchange(code);
  t.is(again.status, 400);
  t.is(((await again.json()) as { error: string }).error, 'invalid_grant');

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
