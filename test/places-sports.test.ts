import test from 'ava';
import { startTestApi } from './helpers/app.ts';
import { call, paths } from './helpers/places.ts';

const api = await startTestApi(null);
const staff = await api.account(['staff']);
const user = await api.account(['user']);
test.after.always(api.close);

test('GET /sports: object keyed by id with name, tags and filters', async (t) => {
  const res = await call(api, 'GET', '/sports');
  t.is(res.status, 200);
  t.is(Object.keys(res.body).length, 94);
  const tennis = res.body['357'];
  t.like(tennis, { id: 357, name: 'Tennis' });
  t.true(tennis.tags.includes('floodlight'));
  t.true(tennis.filters.includes('surface'));
  t.deepEqual(res.body['284'].filters, ['pool_size', 'quality']);
  t.deepEqual(res.body['7'].tags, []);
});

test('GET /sports/{id}, filters, tags; 404 for unknown sports', async (t) => {
  const one = await call(api, 'GET', '/sports/121');
  t.like(one.body, { id: 121, name: 'Running' });
  t.deepEqual((await call(api, 'GET', '/sports/121/filters')).body, one.body.filters);
  t.deepEqual((await call(api, 'GET', '/sports/121/tags')).body, one.body.tags);
  for (const p of ['/sports/999999', '/sports/abc', '/sports/999999/tags', '/sports/999999/filters'])
    t.is((await call(api, 'GET', p)).status, 404, p);
});

test('allowed filters: staff add and delete; 403 for users, 401 without token, 422 unknown, 404s', async (t) => {
  const add = await call(api, 'POST', '/sports/7/filters', { token: staff.token, body: { slug: 'difficulty' } });
  t.deepEqual([add.status, add.body], [200, ['difficulty']]);
  t.is((await call(api, 'POST', '/sports/7/filters', { token: user.token, body: { slug: 'quality' } })).status, 403);
  t.is((await call(api, 'POST', '/sports/7/filters', { body: { slug: 'quality' } })).status, 401);
  const unknown = await call(api, 'POST', '/sports/7/filters', { token: staff.token, body: { slug: 'colour' } });
  t.deepEqual([unknown.status, paths(unknown)], [422, ['body.slug']]);
  t.deepEqual(paths(await call(api, 'POST', '/sports/7/filters', { token: staff.token, body: {} })), ['body.slug']);
  t.is(
    (await call(api, 'POST', '/sports/999999/filters', { token: staff.token, body: { slug: 'quality' } })).status,
    404,
  );
  // Now an activity of sport 7 may carry difficulty.
  const place = await call(api, 'POST', '/places', {
    token: staff.token,
    body: {
      geometry: { type: 'Point', coordinates: [6.86, 45.92] },
      name: 'Take-off',
      country: 'FR',
      activities: [{ sport_id: 7, difficulty: 2 }],
    },
  });
  t.is(place.status, 201);
  t.is((await call(api, 'DELETE', '/sports/7/filters/difficulty', { token: user.token })).status, 403);
  t.is((await call(api, 'DELETE', '/sports/7/filters/difficulty')).status, 401);
  const del = await call(api, 'DELETE', '/sports/7/filters/difficulty', { token: staff.token });
  t.deepEqual([del.status, del.body], [200, { message: 'Deleted' }]);
  t.is((await call(api, 'DELETE', '/sports/7/filters/difficulty', { token: staff.token })).status, 404);
  t.deepEqual((await call(api, 'GET', '/sports/7/filters')).body, []);
});

test('allowed tags: staff add and delete; 403, 401, 422, 404', async (t) => {
  const add = await call(api, 'POST', '/sports/7/tags', { token: staff.token, body: { slug: 'free_parking' } });
  t.deepEqual([add.status, add.body], [200, ['free_parking']]);
  t.is((await call(api, 'POST', '/sports/7/tags', { token: user.token, body: { slug: 'free' } })).status, 403);
  t.is((await call(api, 'POST', '/sports/7/tags', { body: { slug: 'free' } })).status, 401);
  t.deepEqual(paths(await call(api, 'POST', '/sports/7/tags', { token: staff.token, body: { slug: 'sunny' } })), [
    'body.slug',
  ]);
  t.is((await call(api, 'DELETE', '/sports/7/tags/free_parking', { token: user.token })).status, 403);
  t.deepEqual((await call(api, 'DELETE', '/sports/7/tags/free_parking', { token: staff.token })).body, {
    message: 'Deleted',
  });
  t.is((await call(api, 'DELETE', '/sports/7/tags/free_parking', { token: staff.token })).status, 404);
  t.is((await call(api, 'DELETE', '/sports/7/tags/free_parking')).status, 401);
});
