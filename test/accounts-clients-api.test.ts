import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import test from 'ava';
import { decodeJwt } from 'jose';
import { accountsService } from '../api/accounts/index.ts';
import { recordConsent } from '../shared/accounts/consents.ts';
import { hashSecret } from '../shared/accounts/secrets.ts';
import { startTestApi, type TestApi } from './helpers/app.ts';
import { createClient, json, registerClient } from './helpers/oauth-clients.ts';
import { guardedTestService, mintToken } from './helpers/tokens.ts';

const run = promisify(execFile);

// Client registration, API keys, the token endpoint, /api/me, discovery and the CLI
// (the HTML forms are in test/accounts-clients-forms.test.ts).
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

const register = (body: unknown) => registerClient(api, body);
const newClient = () => createClient(api);

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
  // redirect_uri and code go with grant_type=authorization_code only (not with refresh_token).
  t.deepEqual(required(op('/oauth/accessToken')), ['client_id', 'client_secret', 'grant_type']);
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
