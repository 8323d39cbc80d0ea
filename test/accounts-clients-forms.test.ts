import test from 'ava';
import { sql } from 'kysely';
import { accountsService } from '../api/accounts/index.ts';
import { createAccount } from '../shared/accounts/accounts.ts';
import { startTestApi, type TestApi } from './helpers/app.ts';
import { createClient } from './helpers/oauth-clients.ts';
import { guardedTestService } from './helpers/tokens.ts';

// The HTML forms' protections (CSRF, CSP), login rate limits, the registration page and the
// provider's error pages (the client API is in test/accounts-clients-api.test.ts).
let api: TestApi;
test.before(async () => {
  api = await startTestApi(null, {
    publicUrl: true,
    services: [accountsService, guardedTestService()],
    env: { LOGIN_RATE_LIMIT_POINTS: '3', LOGIN_RATE_LIMIT_DURATION_S: '120' },
  });
});
test.after.always(async () => {
  await api?.api.close();
  await api?.database.drop();
});

const newClient = () => createClient(api);

/** A tiny cookie jar for driving the HTML forms with fetch. */
function jar() {
  const cookies = new Map<string, string>();
  return {
    header: () => [...cookies].map(([k, v]) => `${k}=${v}`).join('; '),
    take(res: Response) {
      for (const c of res.headers.getSetCookie()) {
        const [pair] = c.split(';');
        const i = pair?.indexOf('=') ?? -1;
        if (pair && i > 0) cookies.set(pair.slice(0, i), pair.slice(i + 1));
      }
    },
  };
}

async function startLogin() {
  const c = await newClient();
  const cookies = jar();
  let res = await api.fetch(
    `/authorize?${new URLSearchParams({ client_id: c.client_id, redirect_uri: 'https://app.example.test/cb', response_type: 'code', scope: 'openid' })}`,
    { redirect: 'manual' },
  );
  cookies.take(res);
  const location = new URL(res.headers.get('location') ?? '', api.url);
  res = await api.fetch(location.pathname, { headers: { cookie: cookies.header() } });
  cookies.take(res);
  const html = await res.text();
  const csrf = /name="csrf" value="([^"]+)"/.exec(html)?.[1] ?? '';
  const post = (form: Record<string, string>) =>
    api.fetch(`${location.pathname}/login`, {
      method: 'POST',
      redirect: 'manual',
      headers: { cookie: cookies.header(), 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams(form),
    });
  return { html, csrf, post, res };
}

test('login page: CSP, CSRF token required', async (t) => {
  const { html, csrf, post, res } = await startLogin();
  t.is(res.status, 200);
  t.regex(res.headers.get('content-security-policy') ?? '', /form-action 'self' https:\/\/app\.example\.test/);
  t.regex(html, /<label for="f-email">Email/);
  const noToken = await post({ email: 'a@b.test', password: 'whatever12' });
  t.is(noToken.status, 400);
  t.regex(await noToken.text(), /form has expired/);
  const wrongToken = await post({ csrf: `${csrf.slice(0, -1)}x`, email: 'a@b.test', password: 'whatever12' });
  t.is(wrongToken.status, 400);
});

test('login attempts are rate limited: 429 with Retry-After', async (t) => {
  await createAccount(api.database.db, { email: 'limited@example.test', password: 'the right password' });
  const { csrf, post } = await startLogin();
  const statuses: number[] = [];
  let last: Response | undefined;
  for (let i = 0; i < 5; i++) {
    last = await post({ csrf, email: 'limited@example.test', password: `wrong password ${i}` });
    statuses.push(last.status);
  }
  t.deepEqual(statuses, [401, 401, 401, 429, 429]);
  const retryAfter = Number(last?.headers.get('retry-after'));
  t.true(retryAfter > 0 && retryAfter <= 120, String(retryAfter));
  // Even the right password waits until the window ends.
  const right = await post({ csrf, email: 'limited@example.test', password: 'the right password' });
  t.is(right.status, 429);
  // Another email from the same place is not blocked.
  const other = await post({ csrf, email: 'someone-else@example.test', password: 'wrong password' });
  t.is(other.status, 401);
});

test('standalone registration page: creates the account (scrypt hash), answers a taken email the same (no oracle), refuses bad input', async (t) => {
  const cookies = jar();
  const page = await api.fetch('/register');
  cookies.take(page);
  const csrf = /name="csrf" value="([^"]+)"/.exec(await page.text())?.[1] ?? '';
  const submit = (form: Record<string, string>) =>
    api.fetch('/register', {
      method: 'POST',
      headers: { cookie: cookies.header(), 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ csrf, ...form }),
    });
  const fields = {
    email: 'Fresh@Example.test',
    password: 'a good long password',
    first_name: 'Fresh',
    last_name: 'User',
    country: 'de',
    birth_date: '1985-01-31',
    gender: '1',
  };
  const ok = await submit(fields);
  t.is(ok.status, 200);
  const okPage = await ok.text();
  // The page speaks to the person: where to go next, no developer documentation.
  t.regex(okPage, /Go back to the app or site you came from and sign in there/);
  t.notRegex(okPage, /docs\/|\.md\b|token/);
  const row = await api.database.db
    .selectFrom('accounts')
    .select(['email', 'password_hash', 'country', 'gender', sql<string>`birth_date::text`.as('birth')])
    .where('email', '=', 'fresh@example.test')
    .executeTakeFirstOrThrow();
  t.regex(row.password_hash ?? '', /^scrypt\$32768\$8\$1\$/);
  t.like(row, { country: 'DE', gender: 1, birth: '1985-01-31' });
  // The attack: registering a taken email told it had an account (409). Now the answer is the
  // same, byte for byte, and the existing account keeps its password.
  const dup = await submit({ ...fields, email: 'fresh@example.test', password: 'the attacker password' });
  t.is(dup.status, 200);
  t.is(await dup.text(), okPage);
  const after = await api.database.db
    .selectFrom('accounts')
    .select('password_hash')
    .where('email', '=', 'fresh@example.test')
    .executeTakeFirstOrThrow();
  t.is(after.password_hash, row.password_hash);
  const bad = await submit({
    ...fields,
    email: 'other@example.test',
    password: 'short',
    country: 'ZZ',
    birth_date: '2999-01-01',
  });
  t.is(bad.status, 422);
  const html = await bad.text();
  t.regex(html, /id="f-password-error"/);
  t.regex(html, /id="f-country-error"/);
  t.regex(html, /id="f-birth_date-error"/);
  t.notRegex(html, /short/, 'the password is never echoed');
});

test('provider and page errors are 4xx pages, never 500', async (t) => {
  const c = await newClient();
  const cases = [
    `/authorize?${new URLSearchParams({ client_id: 'cl_nope', redirect_uri: 'https://app.example.test/cb', response_type: 'code', scope: 'openid' })}`,
    `/authorize?${new URLSearchParams({ client_id: c.client_id, redirect_uri: 'https://evil.example.test/cb', response_type: 'code', scope: 'openid' })}`,
    '/authorize',
    '/oauth/authorize',
    '/interaction/not-a-real-uid',
    '/interaction/not-a-real-uid/register',
  ];
  for (const path of cases) {
    // /oauth/authorize redirects to /authorize, which answers the error.
    const res = await api.fetch(path, { redirect: path.startsWith('/oauth') ? 'follow' : 'manual' });
    t.true(res.status >= 400 && res.status < 500, `${path} -> ${res.status}`);
  }
  // An unsupported response type for a valid client goes back to the client as an OAuth error.
  const res = await api.fetch(
    `/authorize?${new URLSearchParams({ client_id: c.client_id, redirect_uri: 'https://app.example.test/cb', response_type: 'token', scope: 'openid' })}`,
    { redirect: 'manual' },
  );
  t.true(res.status === 303 || res.status === 400, String(res.status));
  const token = await api.fetch('/token', {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: 'grant_type=authorization_code&code=x',
  });
  t.true(token.status === 400 || token.status === 401, String(token.status));
  const form = await api.fetch('/interaction/x/login', {
    method: 'POST',
    headers: { 'content-type': 'text/plain' },
    body: 'x',
  });
  t.is(form.status, 415);
});
