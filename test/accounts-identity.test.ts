import test from 'ava';
import {
  createAccount,
  ensureAccountWithRoles,
  oidcClaims,
  partnersUserId,
  placesUser,
  trackingMe,
  trackingUser,
} from '../shared/accounts/accounts.ts';
import { hashPassword, verifyPassword } from '../shared/accounts/passwords.ts';
import { redirectUriProblem } from '../shared/accounts/clients.ts';
import { createProvider } from '../api/accounts/provider.ts';
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

test('production refuses the public default COOKIE_KEYS', async (t) => {
  const config = testConfig({ NODE_ENV: 'production', DATABASE_URL: database.url });
  await t.throwsAsync(createProvider(database.db, config), { message: /COOKIE_KEYS/ });
  const ok = testConfig({
    NODE_ENV: 'production',
    DATABASE_URL: database.url,
    COOKIE_KEYS: 'a-real-secret-of-some-length',
  });
  t.truthy(await createProvider(database.db, ok));
});
