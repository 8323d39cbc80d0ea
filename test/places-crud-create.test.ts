import test from 'ava';
import fc from 'fast-check';
import { startTestApi } from './helpers/app.ts';
import { call, createPlace, paths, placeBody } from './helpers/places.ts';

// Creating places: POST variants A and B, what is stored and read back, and the 401s and 422s
// of a bad request (changing, moderating and deleting them is in test/places-crud-edit.test.ts).
const api = await startTestApi(null);
const staff = await api.account(['staff'], { first_name: 'Sam', last_name: 'Staff' });
const user = await api.account(['user'], { first_name: 'Uma', last_name: 'User' });
test.after.always(api.close);

test('POST variant B by staff: 201, approved, spec shape, city and province from the nearest city', async (t) => {
  const res = await call(api, 'POST', '/places', {
    token: staff.token,
    body: placeBody({ name: 'Stade Lille Métropole' }),
  });
  t.is(res.status, 201);
  t.regex(res.headers.get('content-type') ?? '', /json/);
  const f = res.body;
  t.is(f.type, 'Feature');
  t.deepEqual(f.geometry, { type: 'Point', coordinates: [3.0573, 50.6292] });
  const p = f.properties;
  t.regex(p.uuid, /^[0-9a-f-]{36}$/);
  t.is(p.slug, 'stade-lille-metropole');
  t.is(p.name, 'Stade Lille Métropole');
  t.is(p.proximity, null);
  t.is(p.partner, null);
  t.false(p.featured);
  t.is(p.status, 'approved');
  t.regex(p.created_at, /^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2} UTC$/);
  t.deepEqual(p.user, { identifier: staff.id, first_name: 'Sam', last_name: 'Staff', staff: true });
  t.deepEqual(p.address_components, { address: null, city: 'Lille', province: '32', country: 'FR' });
  t.deepEqual(p.contact_details, { email: null, phone: null, website: null, booking_url: null, social_username: null });
  t.is(p.activities.length, 1);
  t.like(p.activities[0], {
    sport_id: 357,
    tags: ['floodlight'],
    attributes: { surface: 'clay', courts: 4 },
    image: {},
  });
  t.is(res.headers.get('location'), `${api.config.PUBLIC_URL}/api/v1/places/${p.uuid}`);
});

test('GET by uuid and by slug; unknown → 404 problem+json', async (t) => {
  const p = await createPlace(api, staff.token);
  const a = await call(api, 'GET', `/places/${p.uuid}`);
  const b = await call(api, 'GET', `/places/${p.slug}`);
  t.is(a.status, 200);
  t.deepEqual(a.body, b.body);
  const missing = await call(api, 'GET', '/places/00000000-0000-4000-8000-000000000000');
  t.is(missing.status, 404);
  t.regex(missing.headers.get('content-type') ?? '', /application\/problem\+json/);
  t.is((await call(api, 'GET', '/places/no-such-slug')).status, 404);
});

test('city and province from the request are kept; sport_id accepted as a string', async (t) => {
  const res = await call(api, 'POST', '/places', {
    token: staff.token,
    body: placeBody({ city: 'Lomme', province: 'Nord', address: '1 rue X', activities: [{ sport_id: '357' }] }),
  });
  t.is(res.status, 201);
  t.like(res.body.properties.address_components, { city: 'Lomme', province: 'Nord', address: '1 rue X' });
  t.is(res.body.properties.activities[0].sport_id, 357);
});

test('slugs are unique', async (t) => {
  const a = await createPlace(api, staff.token, { name: 'Same Name' });
  const b = await createPlace(api, staff.token, { name: 'Same Name' });
  t.is(a.slug, 'same-name');
  t.regex(b.slug, /^same-name-[0-9a-f]{8}$/);
  const c = await createPlace(api, staff.token, { name: '東京' });
  t.regex(c.slug, /^place-[0-9a-f]{8}$/);
  const d = await createPlace(api, staff.token, { name: 'Pending' });
  t.not(d.slug, 'pending');
});

test('LineString and Polygon are stored', async (t) => {
  const line = {
    type: 'LineString',
    coordinates: [
      [3.05, 50.62],
      [3.06, 50.63, 20],
    ],
  };
  const poly = {
    type: 'Polygon',
    coordinates: [
      [
        [3, 50],
        [3.1, 50],
        [3.1, 50.1],
        [3, 50],
      ],
    ],
  };
  const a = await createPlace(api, staff.token, { geometry: line });
  const b = await createPlace(api, staff.token, { geometry: { ...poly, type: 'Polygon' } });
  t.deepEqual((await call(api, 'GET', `/places/${a.uuid}`)).body.geometry, line);
  t.deepEqual((await call(api, 'GET', `/places/${b.uuid}`)).body.geometry, poly);
  // The spec's spelling "Linestring" is accepted and normalized.
  const c = await createPlace(api, staff.token, { geometry: { ...line, type: 'Linestring' } });
  t.is((await call(api, 'GET', `/places/${c.uuid}`)).body.geometry.type, 'LineString');
});

test('POST needs a token (401) and a valid one', async (t) => {
  t.is((await call(api, 'POST', '/places', { body: placeBody() })).status, 401);
  t.is((await call(api, 'POST', '/places', { token: 'not.a.jwt', body: placeBody() })).status, 401);
});

test('POST variant B: 422 names each missing or invalid field', async (t) => {
  const r1 = await call(api, 'POST', '/places', {
    token: user.token,
    body: { geometry: { type: 'Point', coordinates: [3, 50] }, activities: [{ sport_id: 357 }] },
  });
  t.is(r1.status, 422);
  t.deepEqual(paths(r1).sort(), ['body.country', 'body.name']);
  const r2 = await call(api, 'POST', '/places', { token: user.token, body: placeBody({ country: 'XX' }) });
  t.deepEqual(paths(r2), ['body.country']);
  const r3 = await call(api, 'POST', '/places', { token: user.token, body: placeBody({ country: 'fr' }) });
  t.deepEqual(paths(r3), ['body.country']);
  const r4 = await call(api, 'POST', '/places', { token: user.token, body: placeBody({ activities: [] }) });
  t.deepEqual(paths(r4), ['body.activities']);
  const r5 = await call(api, 'POST', '/places', { token: user.token, body: placeBody({ activities: undefined }) });
  t.deepEqual(paths(r5), ['body.activities']);
  const r6 = await call(api, 'POST', '/places', { token: user.token, body: placeBody({ slug: 'mine' }) });
  t.is(r6.status, 422);
  const r7 = await call(api, 'POST', '/places', { token: user.token, body: { activities: [{ sport_id: 357 }] } });
  t.deepEqual(paths(r7), ['body.geometry']);
  const r8 = await call(api, 'POST', '/places', {
    token: user.token,
    body: placeBody({ activities: [{ sport_id: 357 }, { sport_id: '357' }] }),
  });
  t.deepEqual(paths(r8), ['body.activities[1].sport_id']);
  const r9 = await call(api, 'POST', '/places', {
    token: user.token,
    body: placeBody({ activities: [{ sport_id: 999999 }] }),
  });
  t.deepEqual(paths(r9), ['body.activities[0].sport_id']);
});

test('malformed JSON is a 400', async (t) => {
  const res = await api.fetch('/api/v1/places', {
    method: 'POST',
    headers: { authorization: `Bearer ${user.token}`, 'content-type': 'application/json' },
    body: '{"name":',
  });
  t.is(res.status, 400);
});

test('geometry validation: ranges, closed rings, swapped pairs get a 422 that says so', async (t) => {
  const post = (geometry: unknown) =>
    call(api, 'POST', '/places', { token: user.token, body: placeBody({ geometry }) });
  const swapped = await post({ type: 'Point', coordinates: [50.63, 3.06] });
  t.is(swapped.status, 201, 'both orders in range: cannot be detected');
  const s2 = await post({ type: 'Point', coordinates: [48.85, 120.5] });
  t.is(s2.status, 422);
  t.deepEqual(paths(s2), ['body.geometry.coordinates']);
  t.regex(s2.body.errors[0].message, /swapped.*\[longitude, latitude\]/);
  const out = await post({ type: 'Point', coordinates: [200, 95] });
  t.regex(out.body.errors[0].message, /longitude must be within/);
  const open = await post({
    type: 'Polygon',
    coordinates: [
      [
        [3, 50],
        [3.1, 50],
        [3.1, 50.1],
        [3, 50.1],
      ],
    ],
  });
  t.deepEqual(paths(open), ['body.geometry.coordinates[0]']);
  t.regex(open.body.errors[0].message, /closed/);
  const short = await post({ type: 'LineString', coordinates: [[3, 50]] });
  t.deepEqual(paths(short), ['body.geometry.coordinates']);
  const badType = await post({ type: 'MultiPoint', coordinates: [[3, 50]] });
  t.deepEqual(paths(badType), ['body.geometry.type']);
  const lineSwap = await post({
    type: 'LineString',
    coordinates: [
      [3, 50],
      [45, 100],
    ],
  });
  t.deepEqual(paths(lineSwap), ['body.geometry.coordinates[1]']);
  t.regex(lineSwap.body.errors[0].message, /swapped/);
  t.is((await post({ type: 'Point', coordinates: ['3', 50] })).status, 422);
  t.is((await post({ type: 'Point', coordinates: [3, 50, 10, 1] })).status, 422);
  t.is((await post('POINT(3 50)')).status, 422);
});

test('variant A: adds activities to the place with that external_place_id; 422 when unknown; 409 on a reused id', async (t) => {
  const ext = `ext-${Math.random().toString(36).slice(2)}`;
  const unknown = await call(api, 'POST', '/places', {
    token: user.token,
    body: { external_place_id: ext, activities: [{ sport_id: 357 }] },
  });
  t.is(unknown.status, 422);
  t.deepEqual(paths(unknown), ['body.external_place_id']);
  const p = await createPlace(api, staff.token, { external_place_id: ext });
  t.is(p.external_place_id, ext);
  const dup = await call(api, 'POST', '/places', { token: staff.token, body: placeBody({ external_place_id: ext }) });
  t.is(dup.status, 409);
  const a = await call(api, 'POST', '/places', {
    token: user.token,
    body: { external_place_id: ext, activities: [{ sport_id: 121, difficulty: 1 }], notes: 'Nice' },
  });
  t.is(a.status, 200);
  t.is(a.body.properties.uuid, p.uuid);
  t.deepEqual(
    a.body.properties.activities.map((x: { sport_id: number }) => x.sport_id),
    [121, 357],
  );
  // Notes on an approved place wait for staff (test/places-security.test.ts); activities land at once.
  t.is(a.body.properties.notes, null);
  t.deepEqual(a.body.properties.pending_edits[0].notes, { en: 'Nice' });
  const bad = await call(api, 'POST', '/places', {
    token: user.token,
    body: { external_place_id: ext, activities: [{ sport_id: 121, tags: ['wave'] }] },
  });
  t.deepEqual(paths(bad), ['body.activities[0].tags[0]']);
});

test('property (HTTP): random positions are stored when in range and refused with the position path otherwise', async (t) => {
  await fc.assert(
    fc.asyncProperty(
      fc.double({ min: -400, max: 400, noNaN: true }),
      fc.double({ min: -200, max: 200, noNaN: true }),
      async (lng, lat) => {
        const res = await call(api, 'POST', '/places', {
          token: staff.token,
          body: placeBody({
            geometry: {
              type: 'LineString',
              coordinates: [
                [3, 50],
                [lng, lat],
              ],
            },
          }),
        });
        const valid = Math.abs(lng) <= 180 && Math.abs(lat) <= 90;
        // Stored to 9 decimals (ST_AsGeoJSON), far below GPS precision.
        if (valid) return res.status === 201 && Math.abs(res.body.geometry.coordinates[1][0] - lng) < 1e-8;
        return res.status === 422 && paths(res).join() === 'body.geometry.coordinates[1]';
      },
    ),
    { numRuns: 25 },
  );
  t.pass();
});
