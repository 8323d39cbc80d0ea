import { randomBytes } from 'node:crypto';
import test from 'ava';
import { sql } from 'kysely';
import { createProvider } from '../api/accounts/provider.ts';
import { TokenVerifier } from '../api/http/auth.ts';
import {
  createAccount,
  ensureAccountWithRoles,
  oidcClaims,
  partnersUserId,
  placesUser,
  trackingMe,
  trackingUser,
} from '../shared/accounts/accounts.ts';
import { redirectTarget, redirectUriProblem } from '../shared/accounts/clients.ts';
import { hashPassword, verifyPassword } from '../shared/accounts/passwords.ts';
import { ensureExternalAccount, findExternalAccount, findTokenAccount } from '../shared/accounts/token-accounts.ts';
import { testConfig } from './helpers/app.ts';
import { createTestDatabase, type TestDatabase } from './helpers/db.ts';

// One account carries every identity the services show.
let database: TestDatabase;
test.before(async () => {
  database = await createTestDatabase();
});
test.after.always(async () => {
  await database?.drop();
});

test('an account in the shape of each service', async (t) => {
  const a = await createAccount(database.db, {
    email: 'Ada@Example.test',
    first_name: 'Ada',
    last_name: 'Lovelace',
    gender: 2,
    birth_date: '1815-12-10',
    language: 'en',
    country: 'GB',
    roles: ['user', 'staff'],
  });
  t.is(a.email, 'ada@example.test');
  t.deepEqual(placesUser(a), { identifier: a.id, first_name: 'Ada', last_name: 'Lovelace', staff: true });
  t.is(typeof partnersUserId(a), 'number');
  t.like(trackingUser(a), {
    id: a.ldid,
    gender: 2,
    language: 'en',
    country: 'GB',
    birthDate: '1815-12-10',
    roles: ['ROLE_USER', 'ROLE_STAFF'],
  });
  t.like(trackingMe(a), {
    email: 'ada@example.test',
    firstName: 'Ada',
    lastName: 'Lovelace',
    birthdate: Date.UTC(1815, 11, 10),
    ldid: a.ldid,
  });
  t.like(oidcClaims(a), {
    sub: a.id,
    given_name: 'Ada',
    family_name: 'Lovelace',
    birthdate: '1815-12-10',
    ldid: a.ldid,
  });
});

test('ensureAccountWithRoles adds roles and never removes any', async (t) => {
  const first = await ensureAccountWithRoles(database.db, { email: 'ops@example.test', roles: ['partner'] });
  t.true(first.created);
  t.deepEqual([...first.account.roles].sort(), ['partner', 'user']);
  const second = await ensureAccountWithRoles(database.db, { email: 'OPS@example.test', roles: ['staff'] });
  t.false(second.created);
  t.deepEqual([...second.account.roles].sort(), ['partner', 'staff', 'user']);
});

test.serial('an external user gets an account on first sight only; later lookups write nothing', async (t) => {
  const db = database.db;
  const identity = { issuer: 'https://idp.example.test/', subject: 'auth0|first-sight', email: 'ext1@example.test' };
  t.is(await findExternalAccount(db, identity), undefined);
  // Concurrent first requests of the same user create one account.
  const firsts = await Promise.all(Array.from({ length: 5 }, () => ensureExternalAccount(db, identity)));
  t.is(firsts.filter((r) => r.created).length, 1);
  t.is(new Set(firsts.map((r) => r.account.id)).size, 1);
  const [first] = firsts;
  t.deepEqual(first?.account.roles, ['user']);
  // Serial, so no other test writes meanwhile: a known user costs no row and no account number
  // (an INSERT ... ON CONFLICT DO NOTHING on every request used to burn one).
  const written = async () =>
    sql<{ rows: string; last: string }>`select (select count(*) from accounts) as rows,
      (select last_value from accounts_number_seq) as last`
      .execute(db)
      .then((r) => r.rows[0]);
  const before = await written();
  const again = await ensureExternalAccount(db, identity);
  t.deepEqual(again, { account: first?.account, created: false });
  t.deepEqual(await written(), before);
  // Another provider's user with the same subject is someone else.
  const other = await ensureExternalAccount(db, {
    ...identity,
    issuer: 'https://other.example.test/',
    email: undefined,
  });
  t.true(other.created);
  t.not(other.account.id, first?.account.id);
});

test('an external user whose email a local account has gets an account without that email', async (t) => {
  const local = await createAccount(database.db, { email: 'taken@example.test' });
  const { account, created } = await ensureExternalAccount(database.db, {
    issuer: 'https://idp.example.test/',
    subject: 'auth0|taken',
    email: 'TAKEN@example.test',
  });
  t.true(created);
  t.not(account.id, local.id);
  const row = await database.db
    .selectFrom('accounts')
    .select(['email', 'external_subject'])
    .where('id', '=', account.id)
    .executeTakeFirstOrThrow();
  t.deepEqual(row, { email: null, external_subject: 'auth0|taken' });
});

test('our own tokens resolve to an account by id only', async (t) => {
  const a = await createAccount(database.db, { email: 'own@example.test', roles: ['user', 'staff'] });
  t.like(await findTokenAccount(database.db, a.id), {
    id: a.id,
    number: a.number,
    ldid: a.ldid,
    roles: ['user', 'staff'],
  });
  t.is(await findTokenAccount(database.db, 'not-a-uuid'), undefined);
  t.is(await findTokenAccount(database.db, '00000000-0000-4000-8000-000000000000'), undefined);
});

test('scrypt password hashes verify, differ per salt, and refuse other passwords', async (t) => {
  const [h1, h2] = await Promise.all([hashPassword('pässword ok 1'), hashPassword('pässword ok 1')]);
  t.not(h1, h2);
  t.true(await verifyPassword('pässword ok 1', h1));
  t.false(await verifyPassword('pässword ok 2', h1));
  t.false(await verifyPassword('x', 'bcrypt$whatever'));
});

test('redirect URIs: https or loopback only', (t) => {
  for (const ok of ['https://a.example.test/cb', 'http://127.0.0.1:9/cb', 'http://localhost/cb', 'http://[::1]/cb'])
    t.is(redirectUriProblem(ok), undefined, ok);
  for (const bad of [
    'http://a.example.test/cb',
    'https://a.example.test/#x',
    'https://u:p@a.example.test/',
    'myapp:/cb',
    '/relative',
  ])
    t.truthy(redirectUriProblem(bad), bad);
});

test('redirect URIs of public clients (native apps): also private-use schemes in reverse domain notation', (t) => {
  for (const ok of ['com.example.fit:/callback', 'io.github.someone.app:/oauth/cb', 'http://127.0.0.1/cb'])
    t.is(redirectUriProblem(ok, true), undefined, ok);
  t.truthy(redirectUriProblem('com.example.fit:/callback'), 'a confidential client may not');
  for (const bad of ['myapp:/cb', 'com.example.fit://cb', 'com.example.fit:cb', 'javascript:alert(1)', 'data:x'])
    t.truthy(redirectUriProblem(bad, true), bad);
  // What the login pages' CSP and consent page say of where the user goes back to.
  t.deepEqual(redirectTarget('com.example.fit:/callback'), {
    source: 'com.example.fit:',
    label: 'the app com.example.fit',
  });
  t.deepEqual(redirectTarget('http://127.0.0.1:51234/cb'), {
    source: 'http://127.0.0.1:51234',
    label: 'http://127.0.0.1:51234',
  });
  t.is(redirectTarget('myapp:/cb'), undefined);
});

test('production refuses published, short or predictable COOKIE_KEYS, naming how to make one', async (t) => {
  const refused = async (keys: string | undefined, why: RegExp) => {
    const config = testConfig({
      NODE_ENV: 'production',
      DATABASE_URL: database.url,
      ...(keys === undefined ? {} : { COOKIE_KEYS: keys }),
    });
    await t.throwsAsync(createProvider(database.db, config, new TokenVerifier(database.db, config)), {
      message: why,
    });
  };
  await refused(undefined, /COOKIE_KEYS: the key is published.*openssl rand -base64 48/);
  await refused('change-me-to-a-long-random-secret', /published/);
  await refused('a-real-secret-of-some-length', /shorter than 32/);
  await refused('abababababababababababababababababababab', /too predictable/);
  await refused(`${randomBytes(48).toString('base64')},change-me-to-a-long-random-secret`, /key 2 of 2 is published/);
  const ok = testConfig({
    NODE_ENV: 'production',
    DATABASE_URL: database.url,
    COOKIE_KEYS: randomBytes(48).toString('base64'),
  });
  t.truthy(await createProvider(database.db, ok, new TokenVerifier(database.db, ok)));
});
