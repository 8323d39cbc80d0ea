import { createServer, type Server } from 'node:http';
import test from 'ava';
import { exportJWK, exportSPKI, generateKeyPair, importJWK, type JWK, SignJWT } from 'jose';
import { accountsService } from '../api/accounts/index.ts';
import { ensureSigningKeys } from '../shared/auth/signing-keys.ts';
import { startTestApi, type TestApi } from './helpers/app.ts';
import { guardedTestService, testClientId } from './helpers/tokens.ts';

// Every forged, stale or misdirected token is refused with 401 by the shared verifier.
let api: TestApi;
let external: TestApi;
let jwksServer: Server;
let account: Awaited<ReturnType<TestApi['account']>>;
let ourKey: { kid: string; privateJwk: JWK; publicJwk: JWK };
let clientId: string;
let firstPartyId: string;
const idpKeys = await generateKeyPair('ES256', { extractable: true });
type PrivateKey = Awaited<ReturnType<typeof generateKeyPair>>['privateKey'];
const IDP = 'https://idp.example.test/';

test.before(async () => {
  jwksServer = createServer(async (_req, res) => {
    const jwk = { ...(await exportJWK(idpKeys.publicKey)), kid: 'idp-1', alg: 'ES256', use: 'sig' };
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ keys: [jwk] }));
  });
  await new Promise<void>((resolve) => jwksServer.listen(0, '127.0.0.1', resolve));
  const address = jwksServer.address();
  const jwksUrl = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}/jwks`;
  const services = [accountsService, guardedTestService(), guardedTestService('places', '/test-places')];
  [api, external] = await Promise.all([
    startTestApi(null, { services }),
    startTestApi(null, {
      services,
      env: { AUTH_EXTERNAL_JWKS_URL: jwksUrl, AUTH_EXTERNAL_ISSUER: IDP, AUTH_ACCEPT_ID_TOKENS: 'false' },
    }),
  ]);
  account = await api.account(['user']);
  const [key] = await ensureSigningKeys(api.database.db);
  if (!key) throw new Error('no key');
  ourKey = key;
  const res = await api.fetch('/api/v1/clients', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ client_name: 'Token tests', redirect_uris: ['https://app.example.test/cb'] }),
  });
  clientId = ((await res.json()) as { client_id: string }).client_id;
  firstPartyId = await testClientId(api.database.db);
});
test.after.always(async () => {
  await api?.api.close();
  await api?.database.drop();
  await external?.api.close();
  await external?.database.drop();
  jwksServer?.close();
});

const now = () => Math.floor(Date.now() / 1000);

/** A token signed with our real key, with any claims and header changed. */
async function forge(
  claims: Record<string, unknown> = {},
  header: Record<string, unknown> = {},
  key: { kid: string; privateJwk: JWK } = ourKey,
): Promise<string> {
  const payload = {
    iss: api.config.issuer,
    aud: api.config.AUTH_AUDIENCE,
    sub: account.id,
    roles: account.roles,
    ldid: account.ldid,
    ver: 0,
    client_id: firstPartyId,
    scope: 'tracking:read tracking:write places:read places:write',
    iat: now(),
    exp: now() + 600,
    ...claims,
  };
  return new SignJWT(payload)
    .setProtectedHeader({ alg: 'RS256', kid: key.kid, typ: 'at+jwt', ...header } as { alg: string })
    .sign(await importJWK(key.privateJwk, 'RS256'));
}

const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url');

async function write(token: string, on: TestApi = api) {
  return on.fetch('/test/writes', { method: 'POST', headers: { authorization: `Bearer ${token}` } });
}

async function refused(t: import('ava').ExecutionContext, token: string, on: TestApi = api) {
  const res = await write(token, on);
  t.is(res.status, 401);
  t.is(res.headers.get('www-authenticate'), 'Bearer');
  t.regex(res.headers.get('content-type') ?? '', /^application\/problem\+json/);
  const body = (await res.json()) as { status: number; detail: string };
  t.is(body.status, 401);
  return body;
}

test('a valid token passes (baseline), reads need none', async (t) => {
  const res = await write(await forge());
  t.is(res.status, 201);
  t.like(await res.json(), { accountId: account.id, ldid: account.ldid });
  t.is((await api.fetch('/test/writes')).status, 200);
  t.is((await write(account.token)).status, 201);
});

test('no token, a malformed header or garbage: 401', async (t) => {
  const res = await api.fetch('/test/writes', { method: 'POST' });
  t.is(res.status, 401);
  for (const header of [
    'Bearer',
    'Basic abc',
    'Bearer a.b.c',
    `Token ${account.token}`,
    `Bearer ${'x'.repeat(9000)}`,
  ]) {
    const r = await api.fetch('/test/writes', { method: 'POST', headers: { authorization: header } });
    t.is(r.status, 401, header.slice(0, 20));
  }
});

test('alg none: 401', async (t) => {
  const payload = {
    iss: api.config.issuer,
    aud: api.config.AUTH_AUDIENCE,
    sub: account.id,
    iat: now(),
    exp: now() + 600,
  };
  await refused(t, `${b64({ alg: 'none', typ: 'at+jwt' })}.${b64(payload)}.`);
  await refused(t, `${b64({ alg: 'none', typ: 'at+jwt', kid: ourKey.kid })}.${b64(payload)}.`);
});

test('HS256 signed with our public key (algorithm confusion): 401', async (t) => {
  const pem = await exportSPKI((await importJWK(ourKey.publicJwk, 'RS256')) as PrivateKey);
  const payload = { iss: api.config.issuer, aud: api.config.AUTH_AUDIENCE, sub: account.id, roles: ['staff'] };
  for (const secret of [new TextEncoder().encode(pem), new TextEncoder().encode(JSON.stringify(ourKey.publicJwk))]) {
    const token = await new SignJWT(payload)
      .setProtectedHeader({ alg: 'HS256', kid: ourKey.kid, typ: 'at+jwt' })
      .setIssuedAt()
      .setExpirationTime('10m')
      .sign(secret);
    await refused(t, token);
  }
});

test('another asymmetric algorithm with our key (PS256): 401', async (t) => {
  const token = await new SignJWT({ iss: api.config.issuer, aud: api.config.AUTH_AUDIENCE, sub: account.id })
    .setProtectedHeader({ alg: 'PS256', kid: ourKey.kid, typ: 'at+jwt' })
    .setIssuedAt()
    .setExpirationTime('10m')
    .sign(await importJWK(ourKey.privateJwk, 'PS256'));
  await refused(t, token);
});

test('expired beyond the clock tolerance: 401; within it: accepted', async (t) => {
  const body = await refused(t, await forge({ iat: now() - 1000, exp: now() - api.config.AUTH_CLOCK_TOLERANCE_S - 5 }));
  t.regex(body.detail, /expired \(its "exp" claim/);
  t.is((await write(await forge({ iat: now() - 1000, exp: now() - 5 }))).status, 201);
  // A token without exp never passes.
  await refused(t, await forge({ exp: undefined }));
});

test('wrong issuer: 401 naming the iss claim, both issuers and what to fix', async (t) => {
  const body = await refused(t, await forge({ iss: 'https://evil.example.test' }));
  t.true(body.detail.includes('"https://evil.example.test"'), body.detail);
  t.true(body.detail.includes(`"${api.config.issuer}"`), body.detail);
  t.regex(body.detail, /"iss" claim.*PUBLIC_URL or AUTH_ISSUER/);
  t.regex((await refused(t, await forge({ iss: `${api.config.issuer}/` }))).detail, /"iss" claim/);
  // Another deployment signs with other keys: the issuer is still what the message names.
  const other = await generateKeyPair('RS256', { extractable: true });
  const foreignKey = { kid: 'another-deployment', privateJwk: await exportJWK(other.privateKey) };
  const signedElsewhere = await forge({ iss: 'http://localhost:3100' }, {}, foreignKey);
  t.regex((await refused(t, signedElsewhere)).detail, /issued by "http:\/\/localhost:3100"/);
});

test('wrong audience: 401 naming the aud claim', async (t) => {
  t.regex((await refused(t, await forge({ aud: 'another-api' }))).detail, /"aud" claim.*"sports-api"/);
  t.regex((await refused(t, await forge({ aud: undefined }))).detail, /lacks the "aud" claim/);
  // An id_token for a client we never registered.
  await refused(t, await forge({ aud: 'cl_unknown' }, { typ: 'JWT' }));
});

test('an id_token cannot pose as an access token, nor the reverse', async (t) => {
  // aud = the API but typ is not at+jwt (an id_token-shaped token): 401.
  await refused(t, await forge({}, { typ: 'JWT' }));
  // aud = a registered client with typ at+jwt: 401.
  await refused(t, await forge({ aud: clientId }));
  // A real id_token shape for a first-party client: accepted on the places routes only
  // (AUTH_ACCEPT_ID_TOKENS, the places login), refused elsewhere.
  const idToken = await forge(
    { aud: firstPartyId, nonce: 'n', client_id: undefined, scope: undefined },
    { typ: 'JWT' },
  );
  const places = (token: string) =>
    api.fetch('/test-places/writes', { method: 'POST', headers: { authorization: `Bearer ${token}` } });
  t.is((await places(idToken)).status, 201);
  t.regex((await refused(t, idToken)).detail, /places routes only/);
  // A third-party client's id_token, without the user's consent: refused even on places.
  const foreign = await forge({ aud: clientId, nonce: 'n', client_id: undefined, scope: undefined }, { typ: 'JWT' });
  t.is((await places(foreign)).status, 401);
});

test('tampered signature or payload: 401', async (t) => {
  const token = await forge();
  const [h, p, s] = token.split('.') as [string, string, string];
  const flipped = `${s.slice(0, 10)}${s[10] === 'A' ? 'B' : 'A'}${s.slice(11)}`;
  t.regex((await refused(t, `${h}.${p}.${flipped}`)).detail, /signature does not verify/);
  const elevated = b64({ ...JSON.parse(Buffer.from(p, 'base64url').toString()), roles: ['staff'] });
  await refused(t, `${h}.${elevated}.${s}`);
  await refused(t, `${h}.${p}.`);
});

test('unknown kid, or our kid with another key: 401', async (t) => {
  const other = await generateKeyPair('RS256', { extractable: true });
  const privateJwk = await exportJWK(other.privateKey);
  t.regex((await refused(t, await forge({}, {}, { kid: 'not-a-known-kid', privateJwk }))).detail, /"kid" header/);
  t.regex((await refused(t, await forge({}, {}, { kid: ourKey.kid, privateJwk }))).detail, /signature/);
});

test('a token for an account that does not exist: 401', async (t) => {
  await refused(t, await forge({ sub: '00000000-0000-4000-8000-000000000000' }));
  await refused(t, await forge({ sub: 'not-a-uuid' }));
});

test('external provider through its JWKS URL: valid tokens pass, others 401', async (t) => {
  const sign = (claims: Record<string, unknown>, alg = 'ES256', key: PrivateKey = idpKeys.privateKey) =>
    new SignJWT({
      iss: IDP,
      aud: external.config.AUTH_AUDIENCE,
      sub: 'auth0|123',
      email: 'ext@example.test',
      ...claims,
    })
      .setProtectedHeader({ alg, kid: 'idp-1' })
      .setIssuedAt()
      .setExpirationTime('5m')
      .sign(key);
  const ok = await write(await sign({}), external);
  t.is(ok.status, 201);
  const who = (await ok.json()) as { accountId: string; roles: string[] };
  t.deepEqual(who.roles, ['user']);
  const row = await external.database.db
    .selectFrom('accounts')
    .select(['external_issuer', 'email'])
    .where('id', '=', who.accountId)
    .executeTakeFirstOrThrow();
  t.deepEqual(row, { external_issuer: IDP, email: 'ext@example.test' });
  await refused(t, await sign({ aud: 'someone-else' }), external);
  const stranger = await generateKeyPair('ES256');
  await refused(t, await sign({}, 'ES256', stranger.privateKey), external);
  // With AUTH_ACCEPT_ID_TOKENS=false, id_tokens are not bearers.
  const res = await external.fetch('/api/v1/clients', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ client_name: 'x', redirect_uris: ['https://a.example.test/cb'] }),
  });
  const ext = (await res.json()) as { client_id: string };
  const acc = await external.account(['user']);
  const [key] = await ensureSigningKeys(external.database.db);
  const idToken = await new SignJWT({ iss: external.config.issuer, aud: ext.client_id, sub: acc.id })
    .setProtectedHeader({ alg: 'RS256', kid: key?.kid ?? '' })
    .setIssuedAt()
    .setExpirationTime('5m')
    .sign(await importJWK(key?.privateJwk ?? {}, 'RS256'));
  await refused(t, idToken, external);
});
