import test from 'ava';
import { decodeJwt } from 'jose';
import { TokenVerifier } from '../api/http/auth.ts';
import { findApiKey, issueApiKey, revokeApiKey } from '../shared/accounts/api-keys.ts';
import { registerClient } from '../shared/accounts/clients.ts';
import { endAccountSessions, revokeGrantId, revokeTokenId, setAccountDisabled } from '../shared/accounts/revocation.ts';
import { hashSecret } from '../shared/accounts/secrets.ts';
import { findTokenState } from '../shared/accounts/token-accounts.ts';
import { findTrackingCredentials } from '../shared/tracking/users/credentials.ts';
import { ensureTrackingUser, findTrackingUser } from '../shared/tracking/users/store.ts';
import { mintToken, testClientId } from './helpers/tokens.ts';
import { startTrackingApi, type TrackingTestUser } from './helpers/tracking.ts';

// Tracking calls read their API key, the token's account state and the tracking user in one
// statement (shared/tracking/users/credentials.ts), and each API process remembers the access
// tokens it verified: nothing refused in the database may pass on the next call.

const api = await startTrackingApi();
test.after.always(() => api.close());
const { db } = api.database;

const me = (user: TrackingTestUser, headers: Record<string, string> = {}) => api.call('GET', '/me', user, { headers });

test('the one statement reads what the key, token and user lookups read on their own', async (t) => {
  const u = await api.user();
  const clientId = await testClientId(db);
  const token = { sub: u.id, clientId, jti: 'some-jti', grantId: 'some-grant' };
  const keyHash = hashSecret(api.apiKey);
  const before = await findTrackingCredentials(db, { keyHash, token });
  t.is(before?.user, null, 'no tracking user before the first call');
  await ensureTrackingUser(db, { accountId: u.id, ldid: u.ldid, claims: {} });
  const found = await findTrackingCredentials(db, { keyHash, token });
  t.deepEqual(found?.user, await findTrackingUser(db, u.ldid));
  t.deepEqual(found?.state, await findTokenState(db, token));
  t.is(found?.key?.id, (await findApiKey(db, api.apiKey))?.id);
  t.is(found?.key?.clientId, clientId);
  const other = await issueApiKey(db, clientId, 'revoked at once');
  t.true(await revokeApiKey(db, clientId, other.id));
  t.is((await findTrackingCredentials(db, { keyHash: hashSecret(other.api_key), token }))?.key, undefined);
  const unknown = { ...token, sub: '00000000-0000-4000-8000-000000000000' };
  t.is(await findTrackingCredentials(db, { keyHash, token: unknown }), undefined);
});

test('a token refused after a call that passed is refused on the next call (revoked, its grant revoked, sessions ended)', async (t) => {
  const u = await api.user();
  t.is((await me(u)).status, 200);
  const { jti, exp } = decodeJwt(u.token);
  await revokeTokenId(db, String(jti), new Date(Number(exp) * 1000));
  const revoked = await me(u);
  t.is(revoked.status, 401);
  t.regex(revoked.body['hydra:description'], /revoked/);

  const withGrant = { ...u, token: await mintToken(db, api.config, u, { claims: { grant_id: 'grant-1' } }) };
  t.is((await me(withGrant)).status, 200);
  await revokeGrantId(db, 'grant-1', 900);
  const grantRevoked = await me(withGrant);
  t.is(grantRevoked.status, 401);
  t.regex(grantRevoked.body['hydra:description'], /sign-in this token came from was revoked/);

  const fresh = { ...u, token: await mintToken(db, api.config, u) };
  t.is((await me(fresh)).status, 200);
  await endAccountSessions(db, u.id);
  const ended = await me(fresh);
  t.is(ended.status, 401);
  t.regex(ended.body['hydra:description'], /sessions were ended/);
});

test('a disabled account is refused on the next call, and served again once enabled', async (t) => {
  const u = await api.user();
  t.is((await me(u)).status, 200);
  await setAccountDisabled(db, u.id, true);
  const disabled = await me(u);
  t.is(disabled.status, 401);
  t.regex(disabled.body['hydra:description'], /disabled/);
  await setAccountDisabled(db, u.id, false);
  // Disabling ended the account's sessions: a token issued now passes.
  t.is((await me({ ...u, token: await mintToken(db, api.config, u) })).status, 200);
});

test('an API key revoked after a call that passed is refused on the next call, before the token is looked at', async (t) => {
  const u = await api.user();
  const clientId = await testClientId(db);
  const key = await issueApiKey(db, clientId, 'revoked later');
  t.is((await me(u, { 'x-api-key': key.api_key })).status, 200);
  t.true(await revokeApiKey(db, clientId, key.id));
  const refused = await me(u, { 'x-api-key': key.api_key });
  t.is(refused.status, 401);
  t.regex(refused.body['hydra:description'], /API key is invalid or revoked/);
  // The key's refusal comes first even when the token is refused too.
  await setAccountDisabled(db, u.id, true);
  t.regex((await me(u, { 'x-api-key': key.api_key })).body['hydra:description'], /API key/);
  t.regex((await me(u)).body['hydra:description'], /disabled/);
});

test("a token of another application than the key's is refused", async (t) => {
  const u = await api.user();
  const client = await registerClient(db, { client_name: 'another app', redirect_uris: ['https://other.test/cb'] });
  const other = await issueApiKey(db, client.client_id, 'another app');
  const refused = await me(u, { 'x-api-key': other.api_key });
  t.is(refused.status, 401);
  t.regex(refused.body['hydra:description'], /another application/);
});

// Serial: it replaces the global Date for a moment, which the other tests' rows (pg's Date parser) must not see.
test.serial('a remembered token is refused once it expired (the time window is checked on every use)', async (t) => {
  const u = await api.user();
  const verifier = new TokenVerifier(db, api.config);
  const token = await mintToken(db, api.config, u, { ttlSeconds: 60 });
  t.is((await verifier.signedClaims(token)).kind, 'access');
  t.is((await verifier.signedClaims(token)).kind, 'access', 'remembered');
  // Both clocks (ours and jose's `new Date()`) moved past the expiry and the clock tolerance.
  const RealDate = Date;
  const shiftMs = (61 + api.config.AUTH_CLOCK_TOLERANCE_S) * 1000;
  class Later extends RealDate {
    constructor(...args: [] | [number | string | Date]) {
      if (args.length === 0) super(RealDate.now() + shiftMs);
      else super(args[0]);
    }
    static override now = () => RealDate.now() + shiftMs;
  }
  globalThis.Date = Later as DateConstructor;
  try {
    const error = await t.throwsAsync(verifier.signedClaims(token));
    t.regex(String(error?.message), /expired/);
  } finally {
    globalThis.Date = RealDate;
  }
});
