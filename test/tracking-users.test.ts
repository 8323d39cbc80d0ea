import test from 'ava';
import {
  ensureTrackingUser,
  isBirthDate,
  isImageUrl,
  isLanguageCode,
  latestToday,
  profileFromClaims,
  userChangeErrors,
} from '../shared/tracking/users/store.ts';
import { mintToken } from './helpers/tokens.ts';
import { startTrackingApi, type TrackingTestUser } from './helpers/tracking.ts';

const api = await startTrackingApi();
test.after.always(() => api.close());

const USER_FIELDS = [
  '@context',
  '@id',
  '@type',
  'id',
  'oneId',
  'gender',
  'roles',
  'language',
  'country',
  'imageUrl',
  'birthDate',
  'createdAt',
  'updatedAt',
  'scheduleDelete',
  'timezone',
  'defaultVisibility',
  'defaultMapVisibility',
  'defaultMapHiddenEnds',
].sort();

/** A token for the account carrying extra claims, as the accounts service's requestKey does. */
async function tokenWithClaims(user: TrackingTestUser, claims: Record<string, unknown>): Promise<string> {
  return mintToken(api.database.db, api.config, user, { claims });
}

const violations = (body: { violations: { propertyPath: string }[] }) =>
  body.violations.map((v) => v.propertyPath).sort();

test('every call needs both an x-api-key and a valid bearer token: 401 in the Hydra format otherwise', async (t) => {
  const u = await api.user();
  const cases: [string, Record<string, string>][] = [
    ['no key', { authorization: `Bearer ${u.token}`, 'x-api-key': '' }],
    ['revoked or unknown key', { authorization: `Bearer ${u.token}`, 'x-api-key': 'sk_not-a-key' }],
    ['no token', {}],
    ['bad token', { authorization: 'Bearer not.a.jwt' }],
    ['not a bearer', { authorization: `Basic ${u.token}` }],
  ];
  for (const [what, headers] of cases) {
    for (const path of ['/me', `/users/${u.ldid}`]) {
      const res = await api.call('GET', path, null, { headers });
      t.is(res.status, 401, `${what} ${path}`);
      t.is(res.body['@type'], 'hydra:Error', what);
      t.regex(res.headers.get('content-type') ?? '', /^application\/ld\+json/);
    }
  }
  const put = await api.call('PUT', `/users/${u.ldid}`, null, { body: { gender: 1 } });
  t.is(put.status, 401);
  // A refused call creates no tracking user.
  const row = await api.database.db
    .selectFrom('tracking_users')
    .select('id')
    .where('id', '=', u.ldid)
    .executeTakeFirst();
  t.is(row, undefined);
});

test('an expired token is refused', async (t) => {
  const u = await api.user();
  const expired = await mintToken(api.database.db, api.config, u, { ttlSeconds: -120 });
  const res = await api.call('GET', '/me', null, { headers: { authorization: `Bearer ${expired}` } });
  t.is(res.status, 401);
  t.regex(res.body['hydra:description'], /expired/);
});

test('a token minted for another issuer (PUBLIC_URL mismatch) is refused in the Hydra format, naming the claim', async (t) => {
  const u = await api.user();
  const elsewhere = await mintToken(api.database.db, api.config, u, { issuer: 'http://localhost:3100' });
  const res = await api.call('GET', '/me', null, { headers: { authorization: `Bearer ${elsewhere}` } });
  t.is(res.status, 401);
  t.is(res.body['@type'], 'hydra:Error');
  t.regex(res.body['hydra:description'], /issued by "http:\/\/localhost:3100".*"iss" claim.*PUBLIC_URL/);
  t.true(res.body['hydra:description'].includes(`"${api.config.issuer}"`));
});

test('GET /me and /me/ answer the caller, created on the first call with the fields of the spec', async (t) => {
  const u = await api.user();
  const res = await api.call('GET', '/me', u);
  t.is(res.status, 200);
  t.regex(res.headers.get('content-type') ?? '', /^application\/ld\+json/);
  t.deepEqual(Object.keys(res.body).sort(), USER_FIELDS);
  t.like(res.body, {
    '@context': '/v2/contexts/User',
    '@id': `/v2/users/${u.ldid}`,
    '@type': 'User',
    id: u.ldid,
    oneId: null,
    gender: null,
    roles: ['ROLE_USER'],
    language: null,
    country: null,
    imageUrl: null,
    birthDate: null,
    scheduleDelete: null,
  });
  t.regex(res.body.createdAt, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\+00:00$/);
  t.regex(res.body.updatedAt, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\+00:00$/);

  const slash = await api.call('GET', '/me/', u);
  t.is(slash.status, 200);
  t.deepEqual(slash.body, res.body, 'the same user, not created again');
  const byId = await api.call('GET', `/users/${u.ldid}`, u);
  t.deepEqual(byId.body, res.body);
});

test('concurrent first calls make one tracking user', async (t) => {
  const u = await api.user();
  const all = await Promise.all(Array.from({ length: 6 }, () => api.call('GET', '/me', u)));
  t.deepEqual(
    all.map((r) => r.status),
    [200, 200, 200, 200, 200, 200],
  );
  t.is(new Set(all.map((r) => r.body.createdAt)).size, 1);
  const rows = await api.database.db.selectFrom('tracking_users').select('id').where('id', '=', u.ldid).execute();
  t.is(rows.length, 1);
});

test('ensureTrackingUser: many concurrent first calls for many users never fail (a conflict on either unique index)', async (t) => {
  for (let n = 0; n < 20; n++) {
    const u = await api.user();
    const identity = { accountId: u.id, ldid: u.ldid, claims: {} };
    const users = await Promise.all(Array.from({ length: 8 }, () => ensureTrackingUser(api.database.db, identity)));
    t.is(new Set(users.map((x) => x.id)).size, 1);
  }
});

test("the first call takes the profile from the token's claims, else from the account; invalid values are left out", async (t) => {
  const fromClaims = await api.user();
  await api.database.db
    .updateTable('accounts')
    .set({ gender: 1, country: 'DE', language: 'de', birth_date: '1970-01-01' })
    .where('id', '=', fromClaims.id)
    .execute();
  const token = await tokenWithClaims(fromClaims, {
    gender: 2,
    birthdate: '1990-04-21',
    country: 'fr',
    language: 'fr-FR',
  });
  const a = await api.call('GET', '/me', null, { headers: { authorization: `Bearer ${token}` } });
  t.is(a.status, 200);
  t.like(a.body, { gender: 2, birthDate: '1990-04-21', country: 'FR', language: 'fr' });

  const fromAccount = await api.user();
  await api.database.db
    .updateTable('accounts')
    .set({ gender: 3, country: 'BE', language: 'nl', birth_date: '1985-12-31', image_url: 'https://img.test/a.png' })
    .where('id', '=', fromAccount.id)
    .execute();
  const b = await api.call('GET', '/me', fromAccount);
  t.like(b.body, {
    gender: 3,
    birthDate: '1985-12-31',
    country: 'BE',
    language: 'nl',
    imageUrl: 'https://img.test/a.png',
  });

  const invalid = await api.user();
  const bad = await tokenWithClaims(invalid, { gender: 7, birthdate: '2023-02-30', country: 'XX', language: 'zz' });
  const c = await api.call('GET', '/me', null, { headers: { authorization: `Bearer ${bad}` } });
  t.is(c.status, 200);
  t.like(c.body, { gender: null, birthDate: null, country: null, language: null });
});

test("another user's id, or an unknown one, is 404 (never 403) for GET and PUT", async (t) => {
  const me = await api.user();
  const other = await api.user();
  await api.call('GET', '/me', other);
  for (const id of [other.ldid, 'nobody', 'x'.repeat(128)]) {
    const get = await api.call('GET', `/users/${id}`, me);
    t.is(get.status, 404, id);
    t.is(get.body['@type'], 'hydra:Error');
    const put = await api.call('PUT', `/users/${id}`, me, { body: { gender: 1 } });
    t.is(put.status, 404, id);
  }
  t.is((await api.call('GET', `/users/${'x'.repeat(129)}`, me)).status, 404);
  const untouched = await api.call('GET', '/me', other);
  t.is(untouched.body.gender, null);
});

test('PUT changes the editable fields; fields not sent stay; null clears; codes are normalized', async (t) => {
  const u = await api.user();
  const before = (await api.call('GET', '/me', u)).body;
  await new Promise((r) => setTimeout(r, 1100));
  const res = await api.call('PUT', `/users/${u.ldid}`, u, {
    body: {
      gender: 2,
      language: 'FR',
      country: 'be',
      imageUrl: 'https://cdn.example.com/me.jpg',
      birthDate: '1988-02-29',
      scheduleDelete: '2030-01-01T10:00:00+02:00',
    },
  });
  t.is(res.status, 200);
  t.like(res.body, {
    '@id': `/v2/users/${u.ldid}`,
    gender: 2,
    language: 'fr',
    country: 'BE',
    imageUrl: 'https://cdn.example.com/me.jpg',
    birthDate: '1988-02-29',
    scheduleDelete: '2030-01-01T08:00:00+00:00',
    createdAt: before.createdAt,
  });
  t.true(res.body.updatedAt > before.updatedAt);
  t.deepEqual((await api.call('GET', '/me', u)).body, res.body, 'stored');

  const partial = await api.call('PUT', `/users/${u.ldid}`, u, { body: { country: 'ES', imageUrl: null } });
  t.is(partial.status, 200);
  t.like(partial.body, { gender: 2, language: 'fr', country: 'ES', imageUrl: null, birthDate: '1988-02-29' });

  const cleared = await api.call('PUT', `/users/${u.ldid}`, u, {
    body: { gender: null, language: null, country: null, birthDate: null, scheduleDelete: null },
  });
  t.like(cleared.body, { gender: null, language: null, country: null, birthDate: null, scheduleDelete: null });

  const empty = await api.call('PUT', `/users/${u.ldid}`, u, { body: {} });
  t.is(empty.status, 200, 'nothing to change is fine');
});

test('PUT ignores the read-only fields (a client may send back what it read)', async (t) => {
  const u = await api.user();
  const read = (await api.call('GET', '/me', u)).body;
  const res = await api.call('PUT', `/users/${u.ldid}`, u, {
    body: {
      ...read,
      id: 'someone-else',
      oneId: 'forged',
      roles: ['ROLE_ADMIN'],
      createdAt: '2000-01-01T00:00:00+00:00',
      gender: 1,
    },
  });
  t.is(res.status, 200);
  t.like(res.body, { id: u.ldid, oneId: null, roles: ['ROLE_USER'], createdAt: read.createdAt, gender: 1 });
});

test('PUT refuses unknown members and invalid values with a 422 naming each field', async (t) => {
  const u = await api.user();
  const path = `/users/${u.ldid}`;
  const unknown = await api.call('PUT', path, u, { body: { birthdate: '1990-01-01', nickname: 'x', gender: 1 } });
  t.is(unknown.status, 422);
  t.is(unknown.body['@type'], 'ConstraintViolationList');
  t.deepEqual(violations(unknown.body), ['birthdate', 'nickname']);
  t.regex(unknown.body.violations[0].message, /no such field/);

  const cases: [Record<string, unknown>, string][] = [
    [{ gender: 0 }, 'gender'],
    [{ gender: 4 }, 'gender'],
    [{ gender: 1.5 }, 'gender'],
    [{ gender: '1' }, 'gender'],
    [{ language: 'xx' }, 'language'],
    [{ language: 'eng' }, 'language'],
    [{ language: 'iw' }, 'language'],
    [{ language: 'f' }, 'language'],
    [{ country: 'XX' }, 'country'],
    [{ country: 'FRA' }, 'country'],
    [{ country: 1 }, 'country'],
    [{ imageUrl: 'ftp://example.com/a.png' }, 'imageUrl'],
    [{ imageUrl: 'javascript:alert(1)' }, 'imageUrl'],
    [{ imageUrl: 'not a url' }, 'imageUrl'],
    [{ imageUrl: `https://example.com/${'a'.repeat(2048)}` }, 'imageUrl'],
    [{ birthDate: '1990-02-30' }, 'birthDate'],
    [{ birthDate: '21/04/1990' }, 'birthDate'],
    [{ birthDate: '1899-12-31' }, 'birthDate'],
    [{ birthDate: '2999-01-01' }, 'birthDate'],
    [{ scheduleDelete: '2030-01-01T10:00:00' }, 'scheduleDelete'],
    [{ scheduleDelete: 'tomorrow' }, 'scheduleDelete'],
  ];
  for (const [body, field] of cases) {
    const res = await api.call('PUT', path, u, { body });
    t.is(res.status, 422, JSON.stringify(body));
    t.deepEqual(violations(res.body), [field], JSON.stringify(body));
  }
  const several = await api.call('PUT', path, u, { body: { gender: 9, country: 'ZZ', language: 'qq' } });
  t.deepEqual(violations(several.body), ['country', 'gender', 'language']);
  const array = await api.call('PUT', path, u, { raw: '[]', headers: { 'content-type': 'application/ld+json' } });
  t.is(array.status, 422);
  // The JSON body parser takes objects and arrays only: anything else is malformed (400).
  for (const raw of ['{', 'null', '"x"']) {
    const res = await api.call('PUT', path, u, { raw, headers: { 'content-type': 'application/json' } });
    t.is(res.status, 400, raw);
    t.is(res.body['@type'], 'hydra:Error');
  }
  const me = (await api.call('GET', '/me', u)).body;
  t.like(me, { gender: null, country: null, language: null }, 'nothing was changed by a refused PUT');
});

test('rules: language and country codes, birth dates, image URLs', (t) => {
  for (const code of ['en', 'fr', 'de', 'zh', 'pt', 'he', 'id', 'yi']) t.true(isLanguageCode(code), code);
  for (const code of ['xx', 'qq', 'EN', 'eng', 'e', 'iw', 'in', 'ji', 'mo', 'sh', 'jw', ''])
    t.false(isLanguageCode(code), code);
  const now = new Date('2026-03-10T12:00:00Z');
  t.is(latestToday(now), '2026-03-11');
  t.true(isBirthDate('2026-03-11', now), 'today somewhere on Earth');
  t.false(isBirthDate('2026-03-12', now));
  t.true(isBirthDate('1900-01-01', now));
  t.false(isBirthDate('1899-12-31', now));
  t.false(isBirthDate('2023-02-29', now));
  t.true(isBirthDate('2024-02-29', now));
  t.true(isImageUrl('http://a.test/x.png'));
  t.false(isImageUrl('https://'));
  t.false(isImageUrl('//cdn.test/x.png'));
  t.false(isImageUrl('data:image/png;base64,AAAA'));
  t.deepEqual(
    userChangeErrors({ gender: 0, language: 'zz', country: 'XX', imageUrl: 'x', birthDate: '2026-04-01' }, now).map(
      (e) => e.path,
    ),
    ['body.gender', 'body.language', 'body.country', 'body.imageUrl', 'body.birthDate'],
  );
  t.deepEqual(userChangeErrors({ gender: null, language: 'EN', country: 'fr', birthDate: null }, now), []);
});

test('rules: the profile a token gives', (t) => {
  t.deepEqual(profileFromClaims({ gender: 3, birthdate: '1990-01-02', country: 'fr', locale: 'pt_BR' }), {
    gender: 3,
    birth_date: '1990-01-02',
    country: 'FR',
    language: 'pt',
  });
  t.deepEqual(profileFromClaims({ gender: '2' }), { gender: 2 });
  t.deepEqual(profileFromClaims({ gender: 0, birthdate: '3000-01-01', country: 'XX', language: 'english' }), {});
  t.deepEqual(profileFromClaims({ gender: null, birthdate: 631152000000, country: 'FRA' }), {});
});
