import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import test from 'ava';
import { decodeJwt } from 'jose';
import { sql } from 'kysely';
import { accountsService } from '../api/accounts/index.ts';
import { createAccount } from '../shared/accounts/accounts.ts';
import { recordConsent } from '../shared/accounts/consents.ts';
import { hashSecret } from '../shared/accounts/secrets.ts';
import { startTestApi, type TestApi } from './helpers/app.ts';
import { guardedTestService, mintToken } from './helpers/tokens.ts';

const run = promisify(execFile);

// Client registration, API keys, the HTML forms' protections, login rate limits and the CLI.
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

const json = (body: unknown, headers: Record<string, string> = {}) => ({
  method: 'POST',
  headers: { 'content-type': 'application/json', ...headers },
  body: JSON.stringify(body),
});

async function register(body: unknown) {
  return api.fetch('/api/v1/clients', json(body));
}

async function newClient() {
  const res = await register({ client_name: `App ${Math.random()}`, redirect_uris: ['https://app.example.test/cb'] });
  const c = (await res.json()) as { client_id: string; client_secret: string };
  return { ...c, basic: `Basic ${Buffer.from(`${c.client_id}:${c.client_secret}`).toString('base64')}` };
}

test('POST /api/v1/clients returns an id and a secret shown once, stored hashed', async (t) => {
  const res = await register({
    client_name: 'My app',
    redirect_uris: [
      'https://app.example.test/cb',
      'http://127.0.0.1:8080/cb',
      'http://localhost/cb',
      'http://[::1]:3000/x',
    ],
  });
  t.is(res.status, 201);
  t.is(res.headers.get('cache-control'), 'no-store');
  const body = (await res.json()) as Record<string, unknown>;
  t.like(body, { client_name: 'My app', client_secret_expires_at: 0 });
  t.regex(String(body.client_id), /^cl_/);
  t.regex(String(body.client_secret), /^cs_.{40,}/);
  const row = await api.database.db
    .selectFrom('oauth_clients')
    .selectAll()
    .where('id', '=', String(body.client_id))
    .executeTakeFirstOrThrow();
  t.not(row.secret_hash, body.client_secret);
  t.is(row.secret_hash, hashSecret(String(body.client_secret)));
  t.false(JSON.stringify(row).includes(String(body.client_secret)));
});

test('the client name cannot change', async (t) => {
  const c = await newClient();
  const error = await t.throwsAsync(
    api.database.db.updateTable('oauth_clients').set({ name: 'Renamed' }).where('id', '=', c.client_id).execute(),
  );
  t.regex(error?.message ?? '', /cannot be changed/);
  for (const method of ['PUT', 'PATCH']) {
    const res = await api.fetch(`/api/v1/clients/${c.client_id}`, { ...json({ client_name: 'Renamed' }), method });
    t.true(res.status === 404 || res.status === 405, `${method} ${res.status}`);
  }
});

test('redirect URIs must be https or loopback; bad input is a 4xx naming the field', async (t) => {
  const cases: Array<[unknown, string]> = [
    [{ client_name: 'x', redirect_uris: ['http://app.example.test/cb'] }, 'body.redirect_uris[0]'],
    [
      { client_name: 'x', redirect_uris: ['https://ok.example.test', 'ftp://x.example.test/'] },
      'body.redirect_uris[1]',
    ],
    [{ client_name: 'x', redirect_uris: ['https://app.example.test/cb#frag'] }, 'body.redirect_uris[0]'],
    [{ client_name: 'x', redirect_uris: ['not a url'] }, 'body.redirect_uris[0]'],
    [{ client_name: 'x', redirect_uris: ['javascript:alert(1)'] }, 'body.redirect_uris[0]'],
    [{ client_name: 'x', redirect_uris: [] }, 'body.redirect_uris'],
    [{ client_name: '', redirect_uris: ['https://a.example.test'] }, 'body.client_name'],
    [{ redirect_uris: ['https://a.example.test'] }, 'body.client_name'],
    [{ client_name: 'x' }, 'body.redirect_uris'],
    [{ client_name: 'x', redirect_uris: 'https://a.example.test' }, 'body.redirect_uris'],
  ];
  for (const [body, path] of cases) {
    const res = await register(body);
    t.is(res.status, 422, JSON.stringify(body));
    t.regex(res.headers.get('content-type') ?? '', /problem\+json/);
    const problem = (await res.json()) as { errors: Array<{ path: string }> };
    t.true(
      problem.errors.some((e) => e.path === path),
      `${JSON.stringify(body)} -> ${JSON.stringify(problem.errors)}`,
    );
  }
  const bad = await api.fetch('/api/v1/clients', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: '{"client_name":',
  });
  t.is(bad.status, 400);
});

test('API keys: issued per client (Basic auth), stored hashed, listed by prefix, revocable', async (t) => {
  const c = await newClient();
  const issued = await api.fetch(
    `/api/v1/clients/${c.client_id}/api-keys`,
    json({ label: 'iOS app' }, { authorization: c.basic }),
  );
  t.is(issued.status, 201);
  const key = (await issued.json()) as { id: string; api_key: string; prefix: string; label: string };
  t.is(key.label, 'iOS app');
  t.true(key.api_key.startsWith(key.prefix));
  const row = await api.database.db
    .selectFrom('api_keys')
    .selectAll()
    .where('id', '=', key.id)
    .executeTakeFirstOrThrow();
  t.is(row.key_hash, hashSecret(key.api_key));

  // x-api-key alone opens the public share; tracking calls need the bearer too.
  t.is((await api.fetch('/test/share', { headers: { 'x-api-key': key.api_key } })).status, 200);
  t.is((await api.fetch('/test/share')).status, 401);
  t.is((await api.fetch('/test/share', { headers: { 'x-api-key': 'sk_wrong_but_long_enough' } })).status, 401);
  const account = await api.account();
  t.is((await api.fetch('/test/tracking', { headers: { 'x-api-key': key.api_key } })).status, 401);
  t.is((await api.fetch('/test/tracking', { headers: { authorization: `Bearer ${account.token}` } })).status, 401);
  // The key goes with tokens issued to its own client (here, one the user allowed), not others'.
  t.is(
    (
      await api.fetch('/test/tracking', {
        headers: { 'x-api-key': key.api_key, authorization: `Bearer ${account.token}` },
      })
    ).status,
    401,
  );
  await recordConsent(api.database.db, account.id, c.client_id, ['tracking:read']);
  const own = await mintToken(api.database.db, api.config, account, {
    clientId: c.client_id,
    scopes: ['tracking:read'],
  });
  const both = await api.fetch('/test/tracking', {
    headers: { 'x-api-key': key.api_key, authorization: `Bearer ${own}` },
  });
  t.is(both.status, 200);
  t.like(await both.json(), { accountId: account.id, apiKeyClient: c.client_id });

  const list = await api.fetch(`/api/v1/clients/${c.client_id}/api-keys`, { headers: { authorization: c.basic } });
  const listed = (await list.json()) as { api_keys: Array<Record<string, unknown>> };
  t.is(listed.api_keys.length, 1);
  t.false(JSON.stringify(listed).includes(key.api_key));

  const revoke = await api.fetch(`/api/v1/clients/${c.client_id}/api-keys/${key.id}`, {
    method: 'DELETE',
    headers: { authorization: c.basic },
  });
  t.is(revoke.status, 204);
  t.is((await api.fetch('/test/share', { headers: { 'x-api-key': key.api_key } })).status, 401);
  const again = await api.fetch(`/api/v1/clients/${c.client_id}/api-keys/${key.id}`, {
    method: 'DELETE',
    headers: { authorization: c.basic },
  });
  t.is(again.status, 404);
});

test('API key management needs the client credentials of that client', async (t) => {
  const c = await newClient();
  const other = await newClient();
  const path = `/api/v1/clients/${c.client_id}/api-keys`;
  t.is((await api.fetch(path, { method: 'POST' })).status, 401);
  const wrong = `Basic ${Buffer.from(`${c.client_id}:cs_wrong`).toString('base64')}`;
  t.is((await api.fetch(path, { method: 'POST', headers: { authorization: wrong } })).status, 401);
  t.is((await api.fetch(path, { method: 'POST', headers: { authorization: 'Basic !!!' } })).status, 401);
  t.is((await api.fetch(path, { method: 'POST', headers: { authorization: other.basic } })).status, 404);
  t.is((await api.fetch(`${path}/not-a-uuid`, { method: 'DELETE', headers: { authorization: c.basic } })).status, 404);
});

test('GET /oauth/accessToken: missing or wrong credentials and bad codes are OAuth errors, never 500', async (t) => {
  const c = await newClient();
  const call = (q: Record<string, string>) => api.fetch(`/oauth/accessToken?${new URLSearchParams(q)}`);
  const base = {
    client_id: c.client_id,
    redirect_uri: 'https://app.example.test/cb',
    grant_type: 'authorization_code',
  };
  let res = await call({ ...base, code: 'x' });
  t.is(res.status, 401);
  res = await call({ ...base, client_secret: 'cs_wrong', code: 'x' });
  t.is(res.status, 401);
  t.is(((await res.json()) as { error: string }).error, 'invalid_client');
  res = await call({ ...base, client_secret: c.client_secret, code: 'no-such-code' });
  t.is(res.status, 400);
  t.is(((await res.json()) as { error: string }).error, 'invalid_grant');
  res = await call({ ...base, client_secret: c.client_secret, code: 'x', grant_type: 'password' });
  t.is(res.status, 400);
});

test('GET /api/me needs a valid access token', async (t) => {
  t.is((await api.fetch('/api/me')).status, 401);
  t.is((await api.fetch('/api/me?access_token=abc')).status, 401);
  t.is((await api.fetch('/api/me?access_token=a&access_token=b')).status, 400);
  const account = await api.account(['staff']);
  const res = await api.fetch(`/api/me?access_token=${account.token}`);
  t.is(res.status, 200);
  const me = (await res.json()) as { ldid: string; roles: string[]; requestKey: string };
  t.is(me.ldid, account.ldid);
  t.deepEqual(me.roles, ['ROLE_STAFF']);
  t.is(decodeJwt(me.requestKey).ldid, account.ldid);
});

test('discovery and JWKS publish our asymmetric keys and endpoints', async (t) => {
  const res = await api.fetch('/.well-known/openid-configuration');
  t.is(res.status, 200);
  const d = (await res.json()) as Record<string, unknown>;
  t.is(d.issuer, api.url);
  t.is(d.authorization_endpoint, `${api.url}/authorize`);
  t.is(d.token_endpoint, `${api.url}/token`);
  t.is(d.jwks_uri, `${api.url}/jwks`);
  t.deepEqual(d.id_token_signing_alg_values_supported, ['RS256']);
  t.true((d.response_types_supported as string[]).includes('id_token'));
  const jwks = (await (await api.fetch('/jwks')).json()) as { keys: Array<Record<string, unknown>> };
  t.true(jwks.keys.length >= 1);
  for (const k of jwks.keys) {
    t.is(k.kty, 'RSA');
    t.is(k.d, undefined, 'no private parts');
  }
});

test('/openapi.json documents the tracking flow routes as they answer', async (t) => {
  const { Validator } = await import('@seriousme/openapi-schema-validator');
  const document = (await (await api.fetch('/openapi.json')).json()) as {
    paths: Record<string, Record<string, OpenApiOperation>>;
  };
  t.true((await new Validator().validate(document)).valid);
  const op = (path: string) => document.paths[path]?.get;
  const required = (o: OpenApiOperation | undefined) =>
    (o?.parameters ?? []).filter((p) => p.required).map((p) => p.name);
  t.deepEqual(required(op('/oauth/authorize')), ['response_type', 'client_id', 'redirect_uri']);
  t.truthy(op('/oauth/authorize')?.responses['302']);
  t.deepEqual(required(op('/oauth/accessToken')), ['client_id', 'client_secret', 'redirect_uri', 'code', 'grant_type']);
  // OAuth errors, not problem details.
  const errorSchema = op('/oauth/accessToken')?.responses['400']?.content?.['application/json']?.schema;
  t.deepEqual(errorSchema?.required, ['error']);
  t.deepEqual(
    op('/api/me')?.parameters?.map((p) => p.name),
    ['access_token'],
  );
  const me = op('/api/me')?.responses['200']?.content?.['application/json']?.schema;
  t.true(me?.required?.includes('requestKey'));
  t.true(me?.required?.includes('ldid'));
});

interface OpenApiOperation {
  parameters?: Array<{ name: string; required?: boolean }>;
  responses: Record<string, { content?: Record<string, { schema?: { required?: string[] } }> }>;
}

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

test('npm run account: creates or finds an account with roles, prints a working token and API key', async (t) => {
  const env = { ...process.env, DATABASE_URL: api.database.url, PUBLIC_URL: api.url, LOG_LEVEL: 'silent' };
  const { stdout } = await run(
    process.execPath,
    ['scripts/account.ts', '--email', 'ops@example.test', '--role', 'staff'],
    { env },
  );
  const out = JSON.parse(stdout) as {
    account: { id: string; roles: string[]; created: boolean };
    access_token: string;
    api_key: string;
  };
  t.true(out.account.created);
  t.deepEqual(out.account.roles.sort(), ['staff', 'user']);
  const write = await api.fetch('/test/writes', {
    method: 'POST',
    headers: { authorization: `Bearer ${out.access_token}` },
  });
  t.is(write.status, 201);
  t.like(await write.json(), { accountId: out.account.id });
  const tracked = await api.fetch('/test/tracking', {
    headers: { authorization: `Bearer ${out.access_token}`, 'x-api-key': out.api_key },
  });
  t.is(tracked.status, 200);

  const second = await run(
    process.execPath,
    ['scripts/account.ts', '--email', 'OPS@example.test', '--role', 'partner'],
    { env },
  );
  const again = JSON.parse(second.stdout) as { account: { id: string; roles: string[]; created: boolean } };
  t.false(again.account.created);
  t.is(again.account.id, out.account.id);
  t.deepEqual(again.account.roles.sort(), ['partner', 'staff', 'user']);

  const bad = await t.throwsAsync(
    run(process.execPath, ['scripts/account.ts', '--email', 'x@y.test', '--role', 'admin'], { env }),
  );
  t.regex(String((bad as { stderr?: string }).stderr), /unknown role "admin"/);
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
