import test from 'ava';
import { startTestApi } from './helpers/app.ts';
import { call, createPlace, paths } from './helpers/places.ts';

const api = await startTestApi(null);
const staff = await api.account(['staff']);
const user = await api.account(['user']);
const partnerAccount = await api.account(['partner']);
test.after.always(api.close);

const body = (overrides: Record<string, unknown> = {}) => ({
  partner: {
    user_id: Number(staff.number),
    title: 'Lille Running Club',
    source: 'website',
    link: 'https://example.org/lrc',
    lat: 50.6292,
    lng: 3.0573,
    country: 'FR',
    sports_attributes: [{ sport: 121 }],
    ...overrides,
  },
});
const post = (b: unknown, token: string | undefined = staff.token) =>
  call(api, 'POST', '/partners', { ...(token ? { token } : {}), body: b });

test('POST by staff: 201, the created partner with lat/lng strings and sports [{sport}]', async (t) => {
  const res = await post(body({ title: 'Créé Club', description: 'Runs', radius: 10, sport_attributes: undefined }));
  t.is(res.status, 201);
  const p = res.body;
  t.regex(p.uuid, /^[0-9a-f-]{36}$/);
  t.is(res.headers.get('location'), `${api.config.PUBLIC_URL}/api/v1/partners/${p.uuid}`);
  t.like(p, {
    slug: 'cree-club',
    title: 'Créé Club',
    source: 'website',
    description: 'Runs',
    link: 'https://example.org/lrc',
    featured: false,
    partner: false,
    country: 'FR',
    lat: '50.6292',
    lng: '3.0573',
    radius: 10,
    image_ref: null,
    user_id: Number(staff.number),
  });
  t.deepEqual(p.sports, [{ sport: 121 }]);
  const again = await post(body({ title: 'Créé Club' }));
  t.is(again.body.slug, 'cree-club-2');
  t.deepEqual((await call(api, 'GET', `/partners/${p.uuid}`)).body, p);
  t.deepEqual((await call(api, 'GET', '/partners/cree-club')).body, p);
});

test('POST accepts sport_attributes too, lat/lng as strings, and dedupes sports', async (t) => {
  const res = await post(
    body({
      sports_attributes: undefined,
      sport_attributes: [{ sport: 357 }, { sport: '121' }, { sport: 357 }],
      lat: '45.5',
      lng: '-73.56',
    }),
  );
  t.is(res.status, 201);
  t.deepEqual(res.body.sports, [{ sport: 121 }, { sport: 357 }]);
  t.is(res.body.lat, '45.5');
  t.is(res.body.lng, '-73.56');
});

test('POST validation: each rule is a 422 naming its field', async (t) => {
  const cases: [Record<string, unknown>, string[]][] = [
    [
      { partner: {} },
      [
        'body.partner.user_id',
        'body.partner.title',
        'body.partner.source',
        'body.partner.link',
        'body.partner.lat',
        'body.partner.lng',
        'body.partner.sports_attributes',
      ],
    ],
    [body({ sports_attributes: [] }), ['body.partner.sports_attributes']],
    [body({ sports_attributes: [{ sport: 999999 }] }), ['body.partner.sports_attributes[0].sport']],
    [body({ sports_attributes: [{ sport: 'x' }] }), ['body.partner.sports_attributes[0].sport']],
    [body({ sport_attributes: [{ sport: 121 }] }), ['body.partner.sports_attributes']],
    [body({ country: 'XX' }), ['body.partner.country']],
    [body({ country: 'fra' }), ['body.partner.country']],
    [body({ lat: 91, lng: -181 }), ['body.partner.lat', 'body.partner.lng']],
    [body({ lat: 'north' }), ['body.partner.lat']],
    [body({ link: 'ftp://example.org' }), ['body.partner.link']],
    [body({ link: 'not a url' }), ['body.partner.link']],
    [body({ user_id: 987654321 }), ['body.partner.user_id']],
    [body({ user_id: -1 }), ['body.partner.user_id']],
    [body({ title: '  ' }), ['body.partner.title']],
    [body({ radius: 1.5 }), ['body.partner.radius']],
    [body({ slug: 'Bad Slug' }), ['body.partner.slug']],
    [body({ featured: 'yes' }), ['body.partner.featured']],
    [body({ unknown: 1 }), ['body.partner']],
    [{ title: 'no envelope' }, ['body', 'body.partner']],
  ];
  for (const [b, expected] of cases) {
    const res = await post(b);
    t.is(res.status, 422, JSON.stringify(b));
    t.deepEqual(paths(res).sort(), [...expected].sort(), JSON.stringify(b));
  }
});

test('POST with an explicit slug; a taken slug is 409', async (t) => {
  t.is((await post(body({ slug: 'acme-club' }))).body.slug, 'acme-club');
  const res = await post(body({ slug: 'acme-club' }));
  t.is(res.status, 409);
  t.deepEqual(paths(res), ['body.partner.slug']);
});

test('writes: 401 without token, 403 for non-staff (partner accounts included), reads are public', async (t) => {
  const p = (await post(body())).body;
  t.is((await post(body(), '')).status, 401);
  for (const who of [user, partnerAccount]) {
    t.is((await post(body(), who.token)).status, 403);
    t.is(
      (await call(api, 'PUT', `/partners/${p.uuid}`, { token: who.token, body: { partner: { title: 'x' } } })).status,
      403,
    );
    t.is((await call(api, 'DELETE', `/partners/${p.uuid}`, { token: who.token })).status, 403);
  }
  t.is((await call(api, 'PUT', `/partners/${p.uuid}`, { body: { partner: { title: 'x' } } })).status, 401);
  t.is((await call(api, 'DELETE', `/partners/${p.uuid}`)).status, 401);
  t.is((await call(api, 'GET', `/partners/${p.uuid}`)).status, 200);
});

test('PUT: changes the fields sent, answers {partner} with every field; POST on the item is an alias', async (t) => {
  const p = (await post(body({ title: 'Put Club' }))).body;
  const res = await call(api, 'PUT', `/partners/${p.uuid}`, {
    token: staff.token,
    body: {
      partner: { title: 'Put Club 2', featured: true, partner: true, lat: '10.5', sports_attributes: [{ sport: 357 }] },
    },
  });
  t.is(res.status, 200);
  t.deepEqual(Object.keys(res.body), ['partner']);
  t.like(res.body.partner, {
    uuid: p.uuid,
    slug: 'put-club',
    title: 'Put Club 2',
    featured: true,
    partner: true,
    lat: '10.5',
    lng: '3.0573',
    source: 'website',
  });
  t.deepEqual(res.body.partner.sports, [{ sport: 357 }]);
  const alias = await call(api, 'POST', `/partners/put-club`, {
    token: staff.token,
    body: { partner: { description: 'd' } },
  });
  t.is(alias.status, 200);
  t.is(alias.body.partner.description, 'd');
  t.deepEqual(alias.body.partner.sports, [{ sport: 357 }]);
});

test('PUT validation: 422 with specific errors; unknown partner 404', async (t) => {
  const p = (await post(body())).body;
  const put = (partner: Record<string, unknown>) =>
    call(api, 'PUT', `/partners/${p.uuid}`, { token: staff.token, body: { partner } });
  for (const [partner, expected] of [
    [{}, ['body.partner']],
    [{ title: '' }, ['body.partner.title']],
    [{ lat: null }, ['body.partner.lat']],
    [{ lng: 200 }, ['body.partner.lng']],
    [{ country: 'ZZ', link: 'mailto:a@b.c' }, ['body.partner.country', 'body.partner.link']],
    [{ sport_attributes: [] }, ['body.partner.sport_attributes']],
    [{ slug: 'new-slug' }, ['body.partner.slug']],
    [{ user_id: 0 }, ['body.partner.user_id']],
  ] as [Record<string, unknown>, string[]][]) {
    const res = await put(partner);
    t.is(res.status, 422, JSON.stringify(partner));
    t.deepEqual(paths(res).sort(), expected.sort(), JSON.stringify(partner));
  }
  const missing = '00000000-0000-4000-8000-000000000000';
  t.is((await call(api, 'GET', `/partners/${missing}`)).status, 404);
  t.is((await call(api, 'GET', '/partners/no-such-partner')).status, 404);
  t.is(
    (await call(api, 'PUT', `/partners/${missing}`, { token: staff.token, body: { partner: { title: 'x' } } })).status,
    404,
  );
  t.is((await call(api, 'DELETE', `/partners/${missing}`, { token: staff.token })).status, 404);
  const res = await call(api, 'GET', `/partners/${missing}`);
  t.regex(res.headers.get('content-type') ?? '', /problem\+json/);
});

test('DELETE by staff: 204, gone, and places naming it lose their partner slug', async (t) => {
  const p = (await post(body({ slug: 'doomed' }))).body;
  const place = await createPlace(api, staff.token);
  const set = await call(api, 'PUT', `/places/${place.uuid}`, {
    token: partnerAccount.token,
    body: { partner: 'doomed' },
  });
  t.is(set.body.properties.partner, 'doomed');
  t.is((await call(api, 'DELETE', `/partners/${p.uuid}`, { token: staff.token })).status, 204);
  t.is((await call(api, 'GET', `/partners/${p.uuid}`)).status, 404);
  t.is((await call(api, 'GET', `/places/${place.uuid}`)).body.properties.partner, null);
});

test('the service is in /openapi.json with its operations', async (t) => {
  const doc = (await (await api.fetch('/openapi.json')).json()) as { paths: Record<string, Record<string, unknown>> };
  t.deepEqual(Object.keys(doc.paths['/api/v1/partners'] ?? {}).sort(), ['get', 'post']);
  t.deepEqual(Object.keys(doc.paths['/api/v1/partners/{partner_id}'] ?? {}).sort(), ['delete', 'get', 'post', 'put']);
});

test('places: the partner field must name a partner of this service (422 body.partner otherwise)', async (t) => {
  await post(body({ slug: 'known-partner' }));
  const place = await createPlace(api, staff.token);
  const bad = await call(api, 'PUT', `/places/${place.uuid}`, {
    token: partnerAccount.token,
    body: { partner: 'nobody-here' },
  });
  t.is(bad.status, 422);
  t.deepEqual(paths(bad), ['body.partner']);
  const ok = await call(api, 'PUT', `/places/${place.uuid}`, {
    token: partnerAccount.token,
    body: { partner: 'known-partner' },
  });
  t.is(ok.body.properties.partner, 'known-partner');
  const cleared = await call(api, 'PUT', `/places/${place.uuid}`, {
    token: partnerAccount.token,
    body: { partner: null },
  });
  t.is(cleared.body.properties.partner, null);
});
