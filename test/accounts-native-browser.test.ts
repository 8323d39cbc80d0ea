import { createHash, randomBytes } from 'node:crypto';
import test from 'ava';
import { accountsService } from '../api/accounts/index.ts';
import { createAccount } from '../shared/accounts/accounts.ts';
import { startTestApi, type TestApi } from './helpers/app.ts';
import { launchBrowser, type TestBrowser } from './helpers/browser.ts';

// A native app's login in a real browser (Debian's Chromium), as the system browser an app opens
// shows it: sign in, consent, then the hand-back to the app's private-use URI scheme, which the
// login pages' Content-Security-Policy (form-action) must let through.
const PASSWORD = 'correct horse battery';
const REDIRECT = 'com.example.fit:/callback';
let api: TestApi;
let browser: TestBrowser;
let clientId: string;
let email: string;

test.before(async () => {
  api = await startTestApi(null, { publicUrl: true, services: [accountsService] });
  browser = await launchBrowser();
  const res = await api.fetch('/api/v1/clients', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ client_name: 'Example Fit', redirect_uris: [REDIRECT], token_endpoint_auth_method: 'none' }),
  });
  clientId = ((await res.json()) as { client_id: string }).client_id;
  email =
    (await createAccount(api.database.db, { email: 'native-browser@example.test', password: PASSWORD })).email ?? '';
});
test.after.always(async () => {
  await browser?.close();
  await api?.close();
});

test('sign-in and consent hand the code to the app through its private-use scheme', async (t) => {
  const context = await browser.context();
  const page = await context.newPage();
  const problems: string[] = [];
  page.on('console', (m) => {
    if (/Content Security Policy|form-action/i.test(m.text())) problems.push(m.text());
  });
  const handedBack: string[] = [];
  page.on('response', (r) => {
    const location = r.headers().location;
    if (location?.startsWith(REDIRECT)) handedBack.push(location);
  });
  const verifier = randomBytes(32).toString('base64url');
  try {
    await page.goto(
      `${api.url}/authorize?${new URLSearchParams({
        response_type: 'code',
        client_id: clientId,
        redirect_uri: REDIRECT,
        scope: 'openid profile tracking:read',
        state: 'xyz',
        code_challenge: createHash('sha256').update(verifier).digest('base64url'),
        code_challenge_method: 'S256',
      })}`,
    );
    await page.getByLabel('Email', { exact: true }).fill(email);
    await page.getByLabel('Password', { exact: true }).fill(PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL((u) => u.pathname.startsWith('/interaction/'));
    const text = await page.locator('main').innerText();
    t.regex(text, /Example Fit/);
    t.regex(text, /sent back to the app com\.example\.fit/);
    t.notRegex(text, /\bnull\b/);
    await page.getByRole('button', { name: 'Allow' }).click();
    for (let i = 0; i < 1200 && handedBack.length === 0 && problems.length === 0; i++) await page.waitForTimeout(100);
    await page.waitForTimeout(300);
    t.deepEqual(problems, [], 'no Content-Security-Policy violation on the way back to the app');
    t.is(handedBack.length, 1);
    const back = new URL(handedBack[0] ?? '');
    t.is(back.searchParams.get('state'), 'xyz');
    t.truthy(back.searchParams.get('code'));
  } finally {
    await context.close();
  }
});
