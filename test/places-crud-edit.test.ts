import test from 'ava';
import { startTestApi } from './helpers/app.ts';
import { call, createPartner, createPlace, paths, placeBody } from './helpers/places.ts';
import { mintToken } from './helpers/tokens.ts';

// Changing places once created: pending places and their moderation, PUT (and its POST alias),
// featured, DELETE, notes per locale and the OpenAPI routes (creating them is in
// test/places-crud-create.test.ts).
const api = await startTestApi(null);
const staff = await api.account(['staff'], { first_name: 'Sam', last_name: 'Staff' });
const user = await api.account(['user'], { first_name: 'Uma', last_name: 'User' });
const other = await api.account(['user']);
const partner = await api.account(['partner']);
test.after.always(api.close);

test('places added by users are pending: hidden from others, listed by /places/pending, shown to creator and staff', async (t) => {
  const res = await call(api, 'POST', '/places', { token: user.token, body: placeBody() });
  t.is(res.status, 201);
  const p = res.body.properties;
  t.is(p.status, 'pending');
  t.false(p.user.staff);
  t.is((await call(api, 'GET', `/places/${p.uuid}`)).status, 404);
  t.is((await call(api, 'GET', `/places/${p.uuid}`, { token: other.token })).status, 404);
  t.is((await call(api, 'GET', `/places/${p.uuid}`, { token: user.token })).status, 200);
  t.is((await call(api, 'GET', `/places/${p.uuid}`, { token: staff.token })).status, 200);
  const mine = await call(api, 'GET', '/places/pending', { token: user.token });
  t.is(mine.status, 200);
  t.true(mine.body.some((f: { properties: { uuid: string } }) => f.properties.uuid === p.uuid));
  const theirs = await call(api, 'GET', '/places/pending', { token: other.token });
  t.deepEqual(theirs.body, []);
  const queue = await call(api, 'GET', '/places/pending?all=true', { token: staff.token });
  t.true(queue.body.some((f: { properties: { uuid: string } }) => f.properties.uuid === p.uuid));
  t.is((await call(api, 'GET', '/places/pending')).status, 401);
});

test('moderation: staff approve and reject; others 403; approved places leave /places/pending', async (t) => {
  const p = (await call(api, 'POST', '/places', { token: user.token, body: placeBody() })).body.properties;
  t.is((await call(api, 'POST', `/places/${p.uuid}/approve`, { token: user.token })).status, 403);
  t.is((await call(api, 'POST', `/places/${p.uuid}/approve`)).status, 401);
  t.is(
    (await call(api, 'POST', '/places/00000000-0000-4000-8000-000000000000/approve', { token: staff.token })).status,
    404,
  );
  const ok = await call(api, 'POST', `/places/${p.uuid}/approve`, { token: staff.token });
  t.is(ok.status, 200);
  t.is(ok.body.properties.status, 'approved');
  t.is((await call(api, 'GET', `/places/${p.uuid}`)).status, 200);
  const pending = await call(api, 'GET', '/places/pending', { token: user.token });
  t.false(pending.body.some((f: { properties: { uuid: string } }) => f.properties.uuid === p.uuid));
  const q = (await call(api, 'POST', '/places', { token: user.token, body: placeBody() })).body.properties;
  const rej = await call(api, 'POST', `/places/${q.uuid}/reject`, { token: staff.token });
  t.is(rej.body.properties.status, 'rejected');
  t.is((await call(api, 'GET', `/places/${q.uuid}`)).status, 404);
  t.is((await call(api, 'GET', `/places/${q.uuid}`, { token: user.token })).status, 200);
});

test('PUT updates fields (creator), returns user as a list with user_id; 422s, 403s and 404s', async (t) => {
  const p = (await call(api, 'POST', '/places', { token: user.token, body: placeBody() })).body.properties;
  const res = await call(api, 'PUT', `/places/${p.uuid}`, {
    token: user.token,
    body: {
      name: 'Renamed',
      email: 'club@example.test',
      phone: '+33 3 20 00 00 00',
      website: 'https://club.example.test',
      booking_url: 'https://club.example.test/book',
      social_username: '@club',
      address: '2 rue Y',
      city: 'Roubaix',
      province: 'Hauts-de-France',
      country: 'BE',
    },
  });
  t.is(res.status, 200);
  const q = res.body.properties;
  t.is(q.name, 'Renamed');
  t.is(q.slug, p.slug, 'slug is stable');
  t.deepEqual(q.contact_details, {
    email: 'club@example.test',
    phone: '+33 3 20 00 00 00',
    website: 'https://club.example.test',
    booking_url: 'https://club.example.test/book',
    social_username: '@club',
  });
  t.deepEqual(q.address_components, {
    address: '2 rue Y',
    city: 'Roubaix',
    province: 'Hauts-de-France',
    country: 'BE',
  });
  t.deepEqual(q.user, [{ user_id: user.id, first_name: 'Uma', last_name: 'User', staff: false }]);

  t.is((await call(api, 'PUT', `/places/${p.uuid}`, { body: { name: 'x' } })).status, 401);
  t.deepEqual(paths(await call(api, 'PUT', `/places/${p.uuid}`, { token: user.token, body: {} })), ['body']);
  t.deepEqual(paths(await call(api, 'PUT', `/places/${p.uuid}`, { token: user.token, body: { country: 'ZZ' } })), [
    'body.country',
  ]);
  t.deepEqual(paths(await call(api, 'PUT', `/places/${p.uuid}`, { token: user.token, body: { email: 'nope' } })), [
    'body.email',
  ]);
  t.deepEqual(paths(await call(api, 'PUT', `/places/${p.uuid}`, { token: user.token, body: { geometry: {} } })), [
    'body',
  ]);
  t.is(
    (await call(api, 'PUT', `/places/${p.uuid}`, { token: other.token, body: { name: 'x' } })).status,
    404,
    'pending of someone else',
  );
  await call(api, 'POST', `/places/${p.uuid}/approve`, { token: staff.token });
  t.is((await call(api, 'PUT', `/places/${p.uuid}`, { token: other.token, body: { name: 'x' } })).status, 403);
  t.is((await call(api, 'PUT', `/places/${p.uuid}`, { token: staff.token, body: { name: 'By staff' } })).status, 200);
  t.is(
    (
      await call(api, 'PUT', '/places/00000000-0000-4000-8000-000000000000', {
        token: staff.token,
        body: { name: 'x' },
      })
    ).status,
    404,
  );
});

test('featured: only partners may change it (403 for others, creator and staff included)', async (t) => {
  const p = await createPlace(api, staff.token);
  for (const who of [user, staff, other]) {
    const r = await call(api, 'PUT', `/places/${p.uuid}`, { token: who.token, body: { featured: true } });
    t.is(r.status, 403);
    t.regex(r.body.detail, /partner/);
  }
  const on = await call(api, 'PUT', `/places/${p.uuid}`, { token: partner.token, body: { featured: true } });
  t.is(on.status, 200);
  t.true(on.body.properties.featured);
  const off = await call(api, 'PUT', `/places/${p.uuid}`, { token: partner.token, body: { featured: false } });
  t.false(off.body.properties.featured);
  t.is((await call(api, 'PUT', `/places/${p.uuid}`, { token: partner.token, body: { name: 'x' } })).status, 403);
  t.deepEqual(paths(await call(api, 'PUT', `/places/${p.uuid}`, { token: partner.token, body: { featured: 'yes' } })), [
    'body.featured',
  ]);
  const unknown = await call(api, 'PUT', `/places/${p.uuid}`, { token: partner.token, body: { partner: 'acme' } });
  t.deepEqual(paths(unknown), ['body.partner']);
  await createPartner(api, 'acme');
  const withPartner = await call(api, 'PUT', `/places/${p.uuid}`, { token: partner.token, body: { partner: 'acme' } });
  t.is(withPartner.body.properties.partner, 'acme');
});

test('DELETE: creator only; others 403 when they can see it, 404 when they cannot; 401 without token', async (t) => {
  const p = (await call(api, 'POST', '/places', { token: user.token, body: placeBody() })).body.properties;
  t.is((await call(api, 'DELETE', `/places/${p.uuid}`)).status, 401);
  t.is((await call(api, 'DELETE', `/places/${p.uuid}`, { token: other.token })).status, 404);
  t.is((await call(api, 'DELETE', `/places/${p.uuid}`, { token: staff.token })).status, 403);
  await call(api, 'POST', `/places/${p.uuid}/approve`, { token: staff.token });
  t.is((await call(api, 'DELETE', `/places/${p.uuid}`, { token: other.token })).status, 403);
  const del = await call(api, 'DELETE', `/places/${p.uuid}`, { token: user.token });
  t.is(del.status, 200);
  t.deepEqual(del.body, { message: 'Deleted' });
  t.is((await call(api, 'GET', `/places/${p.uuid}`)).status, 404);
  t.is((await call(api, 'DELETE', `/places/${p.uuid}`, { token: user.token })).status, 404);
});

test('notes per locale: written under Accept-Language, read with fallback to en; unsupported locale', async (t) => {
  const res = await call(api, 'POST', '/places', { token: staff.token, body: placeBody({ notes: 'Good courts' }) });
  const uuid = res.body.properties.uuid;
  t.is(res.body.properties.notes, 'Good courts');
  const fr = await call(api, 'PUT', `/places/${uuid}`, {
    token: staff.token,
    body: { notes: 'Bons courts' },
    headers: { 'accept-language': 'fr-FR' },
  });
  t.is(fr.status, 200);
  t.is(fr.body.properties.notes, 'Bons courts');
  const get = (lang?: string) =>
    call(api, 'GET', `/places/${uuid}`, lang ? { headers: { 'accept-language': lang } } : {});
  t.is((await get('fr-FR')).body.properties.notes, 'Bons courts');
  t.is((await get('fr-fr')).body.properties.notes, 'Bons courts', 'case-insensitive');
  t.is((await get('fr-BE,fr;q=0.9')).body.properties.notes, 'Bons courts', 'language match');
  t.is((await get('de')).body.properties.notes, 'Good courts', 'fallback to en');
  t.is((await get()).body.properties.notes, 'Good courts');
  t.is((await get('xx-YY')).body.properties.notes, 'Good courts', 'unsupported: read in en');
  t.is((await get('ja;q=0.5, fr-CA')).body.properties.notes, 'Good courts', 'fr-CA has none: en');
  for (const locale of ['en-GB', 'fr-CA', 'pt-PT', 'pt-BR', 'es-ES', 'es-MX', 'it', 'de', 'ja', 'cn', 'pl']) {
    const r = await call(api, 'PUT', `/places/${uuid}`, {
      token: staff.token,
      body: { notes: `n-${locale}` },
      headers: { 'accept-language': locale },
    });
    t.is(r.status, 200, locale);
    t.is((await get(locale)).body.properties.notes, `n-${locale}`);
  }
  t.is((await get('en')).body.properties.notes, 'Good courts');
  const bad = await call(api, 'PUT', `/places/${uuid}`, {
    token: staff.token,
    body: { notes: 'x' },
    headers: { 'accept-language': 'xx-YY' },
  });
  t.is(bad.status, 422);
  t.deepEqual(paths(bad), ['headers.accept-language']);
  const badPost = await call(api, 'POST', '/places', {
    token: staff.token,
    body: placeBody({ notes: 'x' }),
    headers: { 'accept-language': 'ru' },
  });
  t.deepEqual(paths(badPost), ['headers.accept-language']);
  // Without notes, an unsupported locale does not matter.
  t.is(
    (
      await call(api, 'PUT', `/places/${uuid}`, {
        token: staff.token,
        body: { phone: '1' },
        headers: { 'accept-language': 'ru' },
      })
    ).status,
    200,
  );
});

test('openapi documents the places routes', async (t) => {
  const doc = (await (await api.fetch('/openapi.json')).json()) as { paths: Record<string, unknown> };
  for (const p of [
    '/api/v1/places',
    '/api/v1/places/{place_id}',
    '/api/v1/places/pending',
    '/api/v1/places/{place_id}/approve',
    '/api/v1/places/{place_id}/activities/{sport_id}/tags',
    '/api/v1/sports/{sport_id}/filters/{slug}',
  ])
    t.truthy(doc.paths[p], p);
});

test('an expired token is a 401; POST on the place path is an alias of PUT', async (t) => {
  const expired = await mintToken(api.database.db, api.config, user, { ttlSeconds: -3600 });
  const res = await call(api, 'POST', '/places', { token: expired, body: placeBody() });
  t.is(res.status, 401);
  t.regex(res.headers.get('content-type') ?? '', /problem\+json/);
  const p = await createPlace(api, staff.token);
  const alias = await call(api, 'POST', `/places/${p.uuid}`, { token: staff.token, body: { phone: '42' } });
  t.is(alias.status, 200);
  t.is(alias.body.properties.contact_details.phone, '42');
  const act = await call(api, 'POST', `/places/${p.uuid}/activities/357`, { token: user.token, body: { courts: 9 } });
  t.is(act.status, 200);
  t.is(act.body.attributes.courts, 9);
});
