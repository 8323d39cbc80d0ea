import { createHash, randomBytes } from 'node:crypto';
import test from 'ava';
import { accountsService } from '../api/accounts/index.ts';
import { createAccount } from '../shared/accounts/accounts.ts';
import { startTestApi, type TestApi } from './helpers/app.ts';
import { authorizationCode } from './helpers/tokens.ts';

// RFC 6749 §4.1.2: a code is redeemed once, even by concurrent requests; a code presented again
// revokes what was issued from it.
const PASSWORD = 'correct horse battery';
const REDIRECT_URI = 'https://app.example.test/cb';
const PARALLEL = 8;
let api: TestApi;
let client: { client_id: string; client_secret: string };
let email: string;

test.before(async () => {
  api = await startTestApi(null, { publicUrl: true, services: [accountsService] });
  const res = await api.fetch('/api/v1/clients', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ client_name: 'Replay test app', redirect_uris: [REDIRECT_URI] }),
  });
  client = (await res.json()) as typeof client;
  email = (await createAccount(api.database.db, { email: 'replay@example.test', password: PASSWORD })).email ?? '';
});
test.after.always(() => api?.close());

function pkce() {
  const verifier = randomBytes(32).toString('base64url');
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') };
}

const basic = () => `Basic ${Buffer.from(`${client.client_id}:${client.client_secret}`).toString('base64')}`;

function postToken(code: string, verifier: string): Promise<Response> {
  return api.fetch('/token', {
    method: 'POST',
    headers: { authorization: basic(), 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({
      grant_type: 'authorization_code',
      code,
      redirect_uri: REDIRECT_URI,
      code_verifier: verifier,
    }),
  });
}

function getAccessToken(code: string): Promise<Response> {
  const q = new URLSearchParams({
    client_id: client.client_id,
    client_secret: client.client_secret,
    redirect_uri: REDIRECT_URI,
    code,
    grant_type: 'authorization_code',
  });
  return api.fetch(`/oauth/accessToken?${q}`);
}

async function grantOf(code: string): Promise<string> {
  const row = await api.database.db
    .selectFrom('oidc_payloads')
    .select('grant_id')
    .where('model', '=', 'AuthorizationCode')
    .where('id', '=', code)
    .executeTakeFirstOrThrow();
  return row.grant_id ?? '';
}

/** What is left of a grant: the grant itself and anything issued from it. */
async function grantRows(grantId: string): Promise<number> {
  const rows = await api.database.db
    .selectFrom('oidc_payloads')
    .select('id')
    .where((eb) => eb.or([eb('grant_id', '=', grantId), eb.and([eb('model', '=', 'Grant'), eb('id', '=', grantId)])]))
    .execute();
  return rows.length;
}

/** Exactly one of the concurrent redemptions gets tokens; the others get invalid_grant. */
async function raceOnce(t: import('ava').ExecutionContext, redeem: () => Promise<Response>) {
  const responses = await Promise.all(Array.from({ length: PARALLEL }, redeem));
  const bodies = await Promise.all(responses.map((r) => r.json() as Promise<Record<string, unknown>>));
  const winners = responses.filter((r) => r.status === 200);
  t.is(winners.length, 1, `${winners.length} of ${PARALLEL} concurrent redemptions got tokens`);
  const losers = responses.flatMap((r, i) => (r.status === 200 ? [] : [{ status: r.status, body: bodies[i] }]));
  t.is(losers.length, PARALLEL - 1);
  for (const loser of losers) {
    t.is(loser.status, 400);
    t.is(loser.body?.error, 'invalid_grant');
  }
  return bodies.find((b) => typeof b.access_token === 'string');
}

/** A new authorization code for the test account and client. */
const freshCode = (extra: { codeChallenge?: string; path?: '/authorize' | '/oauth/authorize' }) =>
  authorizationCode(api.url, {
    clientId: client.client_id,
    redirectUri: REDIRECT_URI,
    email,
    password: PASSWORD,
    ...extra,
  });

test('POST /token: one of 8 concurrent redemptions of a code wins, the others get invalid_grant', async (t) => {
  const { verifier, challenge } = pkce();
  const code = await freshCode({ codeChallenge: challenge });
  const grantId = await grantOf(code);
  const tokens = await raceOnce(t, () => postToken(code, verifier));
  t.truthy(tokens?.id_token);
  // The replays revoked the grant: nothing is left of it, and the code is refused from now on.
  t.is(await grantRows(grantId), 0);
  const late = await postToken(code, verifier);
  t.is(late.status, 400);
  t.like(await late.json(), { error: 'invalid_grant' });
});

test('GET /oauth/accessToken: one of 8 concurrent redemptions of a code wins, the others get invalid_grant', async (t) => {
  const code = await freshCode({ path: '/oauth/authorize' });
  const grantId = await grantOf(code);
  const tokens = await raceOnce(t, () => getAccessToken(code));
  t.deepEqual(Object.keys(tokens ?? {}), ['access_token']);
  t.is(await grantRows(grantId), 0);
});

test('a code presented again after a successful exchange is refused and its grant revoked', async (t) => {
  const { verifier, challenge } = pkce();
  const code = await freshCode({ codeChallenge: challenge });
  const grantId = await grantOf(code);
  t.is((await postToken(code, verifier)).status, 200);
  t.true((await grantRows(grantId)) > 0);
  const again = await postToken(code, verifier);
  t.is(again.status, 400);
  t.like(await again.json(), { error: 'invalid_grant' });
  t.is(await grantRows(grantId), 0);
});
