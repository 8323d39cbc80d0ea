import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import test from 'ava';
import { decodeJwt, importJWK, SignJWT } from 'jose';
import { accountsService } from '../api/accounts/index.ts';
import { ensureAccountWithRoles } from '../shared/accounts/accounts.ts';
import { issueApiKey } from '../shared/accounts/api-keys.ts';
import { ensureSigningKeys } from '../shared/auth/signing-keys.ts';
import { startTestApi, type TestApi } from './helpers/app.ts';
import { createClient, type TestClient } from './helpers/oauth-clients.ts';
import { authorizeUrl, createUser, FetchUserAgent } from './helpers/oauth-user-agent.ts';
import { guardedTestService, mintToken, testClientId } from './helpers/tokens.ts';

// The attacks of "Security defects found from outside" on the login service, replayed over HTTP:
// what the tokens hold and when they end (the consent and account pages are in
// test/accounts-consent-pages.test.ts).
const run = promisify(execFile);
const EVIL_CB = 'https://evil.example.test/cb';
let api: TestApi;
let evil: TestClient;
let evilBasic: string;

test.before(async () => {
  api = await startTestApi(null, {
    publicUrl: true,
    services: [accountsService, guardedTestService(), guardedTestService('places', '/test-places')],
  });
  // Anyone may register a client: the attacker does, with their own redirect URI.
  evil = await createClient(api, 'Totally legit app', [EVIL_CB]);
  evilBasic = evil.basic;
});
test.after.always(() => api?.close());

/** A browser of one user on this file's API. */
class UserAgent extends FetchUserAgent {
  constructor() {
    super(api.url);
  }
}

const user = (roles?: ('user' | 'staff')[]) => createUser(api, roles);

test('/api/me: no token from an id_token, and its requestKey never outlives the access token (was: renew forever)', async (t) => {
  const u = await user();
  const firstParty = await testClientId(api.database.db);
  const token = await mintToken(api.database.db, api.config, u, { ttlSeconds: 120 });
  const me = async (bearer: string) => api.fetch(`/api/me?access_token=${encodeURIComponent(bearer)}`);
  const first = await me(token);
  t.is(first.status, 200);
  const key = String(((await first.json()) as { requestKey: string }).requestKey);
  t.is(decodeJwt(key).exp, decodeJwt(token).exp);
  // Exchanging the requestKey again gives the same expiry: no chain of fresh tokens.
  const second = await me(key);
  const key2 = String(((await second.json()) as { requestKey: string }).requestKey);
  t.is(decodeJwt(key2).exp, decodeJwt(token).exp);
  // An id_token (of a first-party client: a bearer on the places routes) is refused.
  const [signing] = await ensureSigningKeys(api.database.db);
  if (!signing) throw new Error('no key');
  const idToken = await new SignJWT({ sub: u.id, ver: 0, nonce: 'n' })
    .setProtectedHeader({ alg: 'RS256', kid: signing.kid, typ: 'JWT' })
    .setIssuer(api.config.issuer)
    .setAudience(firstParty)
    .setIssuedAt()
    .setExpirationTime('10m')
    .sign(await importJWK(signing.privateJwk, 'RS256'));
  const places = await api.fetch('/test-places/writes', {
    method: 'POST',
    headers: { authorization: `Bearer ${idToken}` },
  });
  t.is(places.status, 201, 'the id_token is a places bearer');
  const refused = await me(idToken);
  t.is(refused.status, 401);
  t.regex(((await refused.json()) as { detail: string }).detail, /not an id_token/);
  // A token without tracking:read is refused.
  const placesOnly = await mintToken(api.database.db, api.config, u, { scopes: ['places:read'] });
  t.is((await me(placesOnly)).status, 403);
});

test('revocation at /oauth/revoke ends the access token and its requestKey at once (was: a no-op)', async (t) => {
  const u = await user();
  const token = await mintToken(api.database.db, api.config, u, {
    clientId: evil.client_id,
    scopes: ['tracking:read'],
  });
  // A third-party client's token needs the user's consent to hold anything.
  await api.database.db
    .insertInto('oauth_consents')
    .values({ account_id: u.id, client_id: evil.client_id, scopes: ['tracking:read'], granted_at: new Date(0) })
    .execute();
  const key = ((await (await api.fetch(`/api/me?access_token=${token}`)).json()) as { requestKey: string }).requestKey;
  const call = (bearer: string) => api.fetch('/test/me', { headers: { authorization: `Bearer ${bearer}` } });
  t.is((await call(token)).status, 200);
  t.is((await call(key)).status, 200);
  // Another client cannot revoke it (answered 200, left alone).
  const other = await api.fetch('/api/v1/clients', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ client_name: 'Other', redirect_uris: ['https://other.test/cb'] }),
  });
  const o = (await other.json()) as { client_id: string; client_secret: string };
  const revoke = (basic: string) =>
    api.fetch('/oauth/revoke', {
      method: 'POST',
      headers: { authorization: basic, 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ token }),
    });
  t.is((await revoke(`Basic ${Buffer.from(`${o.client_id}:${o.client_secret}`).toString('base64')}`)).status, 200);
  t.is((await call(token)).status, 200);
  const res = await revoke(evilBasic);
  t.is(res.status, 200);
  for (const bearer of [token, key]) {
    const after = await call(bearer);
    t.is(after.status, 401);
    t.regex(((await after.json()) as { detail: string }).detail, /revoked/);
  }
  const discovery = (await (await api.fetch('/.well-known/openid-configuration')).json()) as Record<string, string>;
  t.is(discovery.revocation_endpoint, `${api.config.issuer}/oauth/revoke`);
});

test('a role change, a password change, ending sessions and disabling end the tokens already issued', async (t) => {
  const ops = await ensureAccountWithRoles(api.database.db, { email: 'ops-made@example.test', roles: ['user'] });
  const call = (bearer: string) => api.fetch('/test/me', { headers: { authorization: `Bearer ${bearer}` } });
  const before = await mintToken(api.database.db, api.config, ops.account);
  t.is((await call(before)).status, 200);
  const changed = await ensureAccountWithRoles(api.database.db, {
    email: 'ops-made@example.test',
    roles: ['partner'],
  });
  t.deepEqual(changed.rolesAdded, ['partner']);
  t.is((await call(before)).status, 401, 'a role change ends earlier tokens');
  const afterRoles = await mintToken(api.database.db, api.config, ops.account);
  t.is((await call(afterRoles)).status, 200);
  await ensureAccountWithRoles(api.database.db, {
    email: 'ops-made@example.test',
    roles: [],
    password: 'a brand new password',
  });
  t.is((await call(afterRoles)).status, 401, 'a password change ends earlier tokens');

  // Staff (a token holding admin) disable and enable an account, and end its sessions.
  const staff = await api.account(['user', 'staff']);
  const target = await user();
  const targetToken = await mintToken(api.database.db, api.config, target);
  const admin = (path: string, method = 'POST', bearer = staff.token) =>
    api.fetch(`/api/v1/accounts/${target.id}${path}`, { method, headers: { authorization: `Bearer ${bearer}` } });
  t.is((await admin('/disable', 'POST', targetToken)).status, 403, 'not staff');
  const noAdmin = await mintToken(api.database.db, api.config, staff, { scopes: ['tracking:read'] });
  t.is((await admin('/disable', 'POST', noAdmin)).status, 403, 'staff without the admin scope');
  t.is((await admin('/disable')).status, 204);
  const refused = await call(targetToken);
  t.is(refused.status, 401);
  t.regex(((await refused.json()) as { detail: string }).detail, /disabled/);
  t.is((await call(await mintToken(api.database.db, api.config, target))).status, 401, 'no new token works');
  const ua = new UserAgent();
  const page = await ua.follow(authorizeUrl(await testClientId(api.database.db), 'https://app.test/cb'));
  t.is((await ua.signIn(page, target.email)).status, 401, 'a disabled account cannot sign in');
  t.is((await admin('/enable')).status, 204);
  const fresh = await mintToken(api.database.db, api.config, target);
  t.is((await call(fresh)).status, 200);
  t.is((await admin('/sessions', 'DELETE')).status, 204);
  t.is((await call(fresh)).status, 401);
  const unknown = await api.fetch('/api/v1/accounts/00000000-0000-4000-8000-000000000000/disable', {
    method: 'POST',
    headers: { authorization: `Bearer ${staff.token}` },
  });
  t.is(unknown.status, 404);
});

test('npm run account --role staff on a self-registered account refuses without --change-existing (was: silent grant)', async (t) => {
  // The attacker registers the address first and keeps a session (a token).
  const attacker = await user();
  const attackerToken = await mintToken(api.database.db, api.config, attacker);
  const env = { ...process.env, DATABASE_URL: api.database.url, PUBLIC_URL: api.url, LOG_LEVEL: 'silent' };
  const cli = (args: string[]) =>
    run(process.execPath, ['scripts/account.ts', '--email', attacker.email, ...args], { env }).then(
      (r) => ({ code: 0, ...r }),
      (e: { code: number; stdout: string; stderr: string }) => e,
    );
  const refused = await cli(['--role', 'staff']);
  t.is(refused.code, 2);
  t.regex(refused.stderr, /not created by an operator.*self-registration.*--change-existing/s);
  const row = () =>
    api.database.db.selectFrom('accounts').select('roles').where('id', '=', attacker.id).executeTakeFirstOrThrow();
  t.deepEqual((await row()).roles, ['user']);
  const me = (bearer: string) => api.fetch('/test/me', { headers: { authorization: `Bearer ${bearer}` } });
  t.is((await me(attackerToken)).status, 200);

  const granted = await cli(['--role', 'staff', '--change-existing']);
  t.is(granted.code, 0, granted.stderr);
  const out = JSON.parse(granted.stdout) as { done: string[]; access_token: string };
  t.deepEqual((await row()).roles, ['user', 'staff']);
  t.true(out.done.some((d) => /added roles staff/.test(d)));
  t.true(out.done.some((d) => /ended \d+ session/.test(d)));
  t.regex(granted.stderr, /account: added roles staff/);
  // The session the attacker held before the grant is over.
  t.is((await me(attackerToken)).status, 401);
  // The operator's new token carries staff powers.
  const roles = ((await (await me(out.access_token)).json()) as { roles: string[] }).roles;
  t.deepEqual(roles, ['user', 'staff']);
});

test('npm run account --set-roles staff on a self-registered account refuses without --change-existing (was: silent grant)', async (t) => {
  const victim = await user();
  const env = { ...process.env, DATABASE_URL: api.database.url, PUBLIC_URL: api.url, LOG_LEVEL: 'silent' };
  const cli = (args: string[]) =>
    run(process.execPath, ['scripts/account.ts', '--email', victim.email, ...args], { env }).then(
      (r) => ({ code: 0, ...r }),
      (e: { code: number; stdout: string; stderr: string }) => e,
    );
  const roles = async () =>
    (await api.database.db.selectFrom('accounts').select('roles').where('id', '=', victim.id).executeTakeFirstOrThrow())
      .roles;
  const refused = await cli(['--set-roles', 'staff']);
  t.is(refused.code, 2);
  t.regex(refused.stderr, /not created by an operator.*self-registration.*--change-existing/s);
  t.deepEqual(await roles(), ['user']);

  const set = await cli(['--set-roles', 'staff', '--change-existing']);
  t.is(set.code, 0, set.stderr);
  t.deepEqual([...(await roles())].sort(), ['staff', 'user']);
  t.regex(set.stderr, /account: set the roles to staff, user; its sessions, grants and tokens are ended/);
});

test('an x-api-key only goes with tokens issued to its own client (was: any token, any key)', async (t) => {
  const u = await user();
  const { api_key: evilKey } = await issueApiKey(api.database.db, evil.client_id, 'attacker');
  const { api_key: ownKey } = await issueApiKey(api.database.db, await testClientId(api.database.db), 'ours');
  const token = await mintToken(api.database.db, api.config, u);
  const tracking = (key: string) =>
    api.fetch('/test/tracking', { headers: { authorization: `Bearer ${token}`, 'x-api-key': key } });
  const res = await tracking(evilKey);
  t.is(res.status, 401);
  t.regex(((await res.json()) as { detail: string }).detail, /another application/);
  t.is((await tracking(ownKey)).status, 200);
});

test('only staff holding admin register first-party clients; tokens hold only their scopes', async (t) => {
  const register = (bearer?: string) =>
    api.fetch('/api/v1/clients', {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(bearer ? { authorization: `Bearer ${bearer}` } : {}) },
      body: JSON.stringify({
        client_name: 'Official app',
        redirect_uris: ['https://official.test/cb'],
        first_party: true,
      }),
    });
  t.is((await register()).status, 403);
  const u = await api.account(['user']);
  t.is((await register(u.token)).status, 403);
  const staff = await api.account(['user', 'staff']);
  const ok = await register(staff.token);
  t.is(ok.status, 201);
  t.is(((await ok.json()) as { first_party: boolean }).first_party, true);
  const plain = await api.fetch('/api/v1/clients', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ client_name: 'Someone', redirect_uris: ['https://someone.test/cb'] }),
  });
  t.is(((await plain.json()) as { first_party: boolean }).first_party, false);

  const readOnly = await mintToken(api.database.db, api.config, u, { scopes: ['tracking:read'] });
  const get = await api.fetch('/test/me', { headers: { authorization: `Bearer ${readOnly}` } });
  t.is(get.status, 200);
  const post = await api.fetch('/test/writes', { method: 'POST', headers: { authorization: `Bearer ${readOnly}` } });
  t.is(post.status, 403);
  t.is(post.headers.get('www-authenticate'), 'Bearer error="insufficient_scope", scope="tracking:write"');
});

test('/api/me shows a third-party app only the profile and email the user allowed it', async (t) => {
  const u = await user();
  await api.database.db
    .updateTable('accounts')
    .set({ first_name: 'Rita', country: 'FR' })
    .where('id', '=', u.id)
    .execute();
  const me = async (scopes: string[]) => {
    await api.database.db
      .insertInto('oauth_consents')
      .values({ account_id: u.id, client_id: evil.client_id, scopes, granted_at: new Date(0) })
      .onConflict((oc) => oc.columns(['account_id', 'client_id']).doUpdateSet({ scopes }))
      .execute();
    const token = await mintToken(api.database.db, api.config, u, {
      clientId: evil.client_id,
      scopes: ['tracking:read'],
    });
    const res = await api.fetch(`/api/me?access_token=${token}`);
    t.is(res.status, 200);
    const body = (await res.json()) as Record<string, unknown>;
    return { body, key: decodeJwt(String(body.requestKey)) };
  };
  // Allowed tracking only: no email, no name, no country, in the answer or in requestKey.
  const bare = await me(['openid', 'tracking:read']);
  t.like(bare.body, { email: null, firstName: '', country: null, ldid: u.ldid });
  t.like(bare.key, { email: null, firstname: '', country: null, ldid: u.ldid });
  // With profile and email allowed, they are shown.
  const full = await me(['openid', 'profile', 'email', 'tracking:read']);
  t.like(full.body, { email: u.email, firstName: 'Rita', country: 'FR' });
  t.like(full.key, { email: u.email, firstname: 'Rita', country: 'FR' });
  // A first-party app reads the whole profile.
  const own = await mintToken(api.database.db, api.config, u, { scopes: ['tracking:read'] });
  const ownMe = (await (await api.fetch(`/api/me?access_token=${own}`)).json()) as Record<string, unknown>;
  t.like(ownMe, { email: u.email, firstName: 'Rita' });
});
