import test from 'ava';
import { startTestApi } from './helpers/app.ts';
import { call, createPlace, paths } from './helpers/places.ts';

const api = await startTestApi(null);
const staff = await api.account(['staff'], { first_name: 'Sam', last_name: 'Staff' });
const user = await api.account(['user'], { first_name: 'Uma', last_name: 'User' });
const other = await api.account(['user']);
test.after.always(api.close);

const place = () => createPlace(api, staff.token);

test('GET activities: filter values flat beside sport_id and tags', async (t) => {
  const p = await place();
  const res = await call(api, 'GET', `/places/${p.uuid}/activities`);
  t.is(res.status, 200);
  t.deepEqual(res.body, [
    {
      sport_id: 357,
      tags: ['floodlight'],
      surface: 'clay',
      courts: 4,
      photo_reference: null,
      user: { identifier: staff.id, first_name: 'Sam', last_name: 'Staff', staff: true },
      image: {},
    },
  ]);
  t.is((await call(api, 'GET', '/places/00000000-0000-4000-8000-000000000000/activities')).status, 404);
});

test('POST one activity: 201 Activity shape; 409 for a second of the same sport; 401; 404', async (t) => {
  const p = await place();
  const res = await call(api, 'POST', `/places/${p.uuid}/activities`, {
    token: user.token,
    body: {
      sport_id: '121',
      tags: ['flat', 'toilets'],
      difficulty: 2,
      distance: 10000,
      season: 'Summer',
      photo_reference: 'ref-1',
    },
  });
  t.is(res.status, 201);
  t.deepEqual(res.body, {
    sport_id: 121,
    tags: ['flat', 'toilets'],
    photo_reference: 'ref-1',
    user: { identifier: user.id, first_name: 'Uma', last_name: 'User', staff: false },
    attributes: { difficulty: 2, distance: 10000, season: 'Summer' },
    image: {},
  });
  const again = await call(api, 'POST', `/places/${p.uuid}/activities`, { token: user.token, body: { sport_id: 121 } });
  t.is(again.status, 409);
  t.is((await call(api, 'POST', `/places/${p.uuid}/activities`, { body: { sport_id: 168 } })).status, 401);
  t.is(
    (
      await call(api, 'POST', '/places/00000000-0000-4000-8000-000000000000/activities', {
        token: user.token,
        body: { sport_id: 168 },
      })
    ).status,
    404,
  );
});

test('tags and filter values must be allowed for the sport and of the right type (422 with paths)', async (t) => {
  const p = await place();
  const post = (body: unknown) => call(api, 'POST', `/places/${p.uuid}/activities`, { token: user.token, body });
  const cases: [unknown, string[]][] = [
    [{ sport_id: 121, tags: ['wave'] }, ['body.tags[0]']],
    [{ sport_id: 121, tags: ['not-a-tag'] }, ['body.tags[0]']],
    [{ sport_id: 121, tags: 'flat' }, ['body.tags']],
    [{ sport_id: 121, pool_size: 25 }, ['body.pool_size']],
    [{ sport_id: 121, nonsense: 1 }, ['body.nonsense']],
    [{ sport_id: 121, difficulty: 3 }, ['body.difficulty']],
    [{ sport_id: 121, difficulty: 1.5 }, ['body.difficulty']],
    [{ sport_id: 121, distance: 'far' }, ['body.distance']],
    [{ sport_id: 121, distance: -1 }, ['body.distance']],
    [{ sport_id: 121, season: 'Monsoon' }, ['body.season']],
    [{ sport_id: 121, surface: 'lava' }, ['body.surface']],
    [{ sport_id: 121, attributes: { quality: 5 } }, ['body.attributes.quality']],
    [{ sport_id: 121, user: { identifier: 'x' } }, ['body.user']],
    [{ sport_id: 999999 }, ['body.sport_id']],
    [{ sport_id: 'abc' }, ['body.sport_id']],
    [{ tags: [] }, ['body.sport_id']],
    [{ sport_id: 121, photo_reference: 5 }, ['body.photo_reference']],
  ];
  for (const [body, expected] of cases) {
    const res = await post(body);
    t.is(res.status, 422, JSON.stringify(body));
    t.deepEqual(paths(res), expected, JSON.stringify(body));
  }
  const msg = (await post({ sport_id: 121, tags: ['wave'] })).body.errors[0].message;
  t.regex(msg, /not allowed for sport 121/);
  // A sport without any allowed list accepts no tags and no filters.
  t.is((await post({ sport_id: 7, tags: ['free'] })).status, 422);
  t.is((await post({ sport_id: 7 })).status, 201);
});

test('PUT one activity: tags replaced, filters merged, null removes; 404 when absent; sport_id and user immutable', async (t) => {
  const p = await place();
  const url = `/places/${p.uuid}/activities/357`;
  const res = await call(api, 'PUT', url, {
    token: other.token,
    body: { tags: ['indoor', 'shower'], courts: 6, surface: null, photo_reference: 'r' },
  });
  t.is(res.status, 200);
  t.like(res.body, { sport_id: 357, tags: ['indoor', 'shower'], attributes: { courts: 6 }, photo_reference: 'r' });
  t.is(res.body.user.identifier, staff.id, 'user stays the creator');
  t.deepEqual(paths(await call(api, 'PUT', url, { token: other.token, body: { sport_id: 121 } })), ['body.sport_id']);
  t.is(
    (await call(api, 'PUT', url, { token: other.token, body: { sport_id: '357', courts: 1 } })).status,
    200,
    'same sport_id is fine',
  );
  t.deepEqual(paths(await call(api, 'PUT', url, { token: other.token, body: { user: { identifier: other.id } } })), [
    'body.user',
  ]);
  t.deepEqual(paths(await call(api, 'PUT', url, { token: other.token, body: { tags: ['wave'] } })), ['body.tags[0]']);
  t.deepEqual(paths(await call(api, 'PUT', url, { token: other.token, body: { quality: 'good' } })), ['body.quality']);
  const missing = await call(api, 'PUT', `/places/${p.uuid}/activities/121`, {
    token: other.token,
    body: { tags: [] },
  });
  t.is(missing.status, 404);
  t.is((await call(api, 'PUT', `/places/${p.uuid}/activities/abc`, { token: other.token, body: {} })).status, 404);
  t.is((await call(api, 'PUT', url, { body: {} })).status, 401);
});

test('PUT many: existing updated, missing created, all-or-nothing', async (t) => {
  const p = await place();
  const url = `/places/${p.uuid}/activities`;
  const res = await call(api, 'PUT', url, {
    token: user.token,
    body: {
      activities: [
        { sport_id: 357, courts: 8 },
        { sport_id: 121, difficulty: 0 },
      ],
    },
  });
  t.is(res.status, 200);
  t.deepEqual(
    res.body.map((a: { sport_id: number }) => a.sport_id),
    [121, 357],
  );
  t.like(res.body[1], { attributes: { surface: 'clay', courts: 8 }, tags: ['floodlight'] });
  t.is(res.body[0].user.identifier, user.id);
  const bad = await call(api, 'PUT', url, {
    token: user.token,
    body: { activities: [{ sport_id: 168 }, { sport_id: 357, courts: 'x' }] },
  });
  t.is(bad.status, 422);
  t.deepEqual(paths(bad), ['body.activities[1].courts']);
  t.false(
    (await call(api, 'GET', url)).body.some((a: { sport_id: number }) => a.sport_id === 168),
    'nothing created',
  );
  t.deepEqual(paths(await call(api, 'PUT', url, { token: user.token, body: { activities: [] } })), ['body.activities']);
  t.deepEqual(paths(await call(api, 'PUT', url, { token: user.token, body: {} })), ['body.activities']);
  t.is((await call(api, 'PUT', url, { body: { activities: [{ sport_id: 168 }] } })).status, 401);
});

test('DELETE activity: activity creator, place creator or staff; others 403; 404; 401', async (t) => {
  const p = await place();
  await call(api, 'POST', `/places/${p.uuid}/activities`, { token: user.token, body: { sport_id: 121 } });
  t.is((await call(api, 'DELETE', `/places/${p.uuid}/activities/121`)).status, 401);
  t.is((await call(api, 'DELETE', `/places/${p.uuid}/activities/121`, { token: other.token })).status, 403);
  const del = await call(api, 'DELETE', `/places/${p.uuid}/activities/121`, { token: user.token });
  t.deepEqual([del.status, del.body], [200, { message: 'Deleted' }]);
  t.is((await call(api, 'DELETE', `/places/${p.uuid}/activities/121`, { token: user.token })).status, 404);
  t.is((await call(api, 'DELETE', `/places/${p.uuid}/activities/357`, { token: staff.token })).status, 200);
});

test('activity tags: list, add (allowed only), delete', async (t) => {
  const p = await place();
  const url = `/places/${p.uuid}/activities/357/tags`;
  t.deepEqual((await call(api, 'GET', url)).body, ['floodlight']);
  const add = await call(api, 'POST', url, { token: user.token, body: { slug: 'indoor' } });
  t.deepEqual([add.status, add.body], [200, ['floodlight', 'indoor']]);
  t.deepEqual((await call(api, 'POST', url, { token: user.token, body: { slug: 'indoor' } })).body, [
    'floodlight',
    'indoor',
  ]);
  const bad = await call(api, 'POST', url, { token: user.token, body: { slug: 'wave' } });
  t.is(bad.status, 422);
  t.deepEqual(paths(bad), ['body.slug']);
  t.deepEqual(paths(await call(api, 'POST', url, { token: user.token, body: {} })), ['body.slug']);
  t.is((await call(api, 'POST', url, { body: { slug: 'indoor' } })).status, 401);
  const del = await call(api, 'DELETE', `${url}/indoor`, { token: user.token });
  t.deepEqual(del.body, { message: 'Deleted' });
  t.is((await call(api, 'DELETE', `${url}/indoor`, { token: user.token })).status, 404);
  t.is((await call(api, 'DELETE', `${url}/floodlight`)).status, 401);
  t.is((await call(api, 'GET', `/places/${p.uuid}/activities/121/tags`)).status, 404);
  // Short form.
  t.deepEqual((await call(api, 'GET', `/places/${p.uuid}/tags`)).body, ['floodlight']);
  const short = await call(api, 'POST', `/places/${p.uuid}/tags`, {
    token: user.token,
    body: { slug: 'shower', sport_id: 357 },
  });
  t.deepEqual(short.body, ['floodlight', 'shower']);
});

test('activities of a pending place are visible only to its creator and staff', async (t) => {
  const created = await call(api, 'POST', '/places', {
    token: user.token,
    body: {
      geometry: { type: 'Point', coordinates: [2.35, 48.85] },
      name: 'Paris court',
      country: 'FR',
      activities: [{ sport_id: 357 }],
    },
  });
  const uuid = created.body.properties.uuid;
  t.is(created.body.properties.address_components.city, 'Paris');
  t.is((await call(api, 'GET', `/places/${uuid}/activities`)).status, 404);
  t.is((await call(api, 'GET', `/places/${uuid}/activities`, { token: other.token })).status, 404);
  t.is((await call(api, 'GET', `/places/${uuid}/activities`, { token: user.token })).status, 200);
  t.is(
    (await call(api, 'POST', `/places/${uuid}/activities`, { token: other.token, body: { sport_id: 121 } })).status,
    404,
  );
});
