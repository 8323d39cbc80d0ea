import test from 'ava';
import { sql } from 'kysely';
import { startTestApi } from './helpers/app.ts';
import { call, createPlace } from './helpers/places.ts';

/**
 * place_activities carries copies of its place's geography and approval (place_geog,
 * place_approved; migration 0022) for one-sport searches. These tests drive every write path
 * and check both the copies and what one-sport searches return.
 */
const api = await startTestApi(null);
const staff = await api.account(['staff']);
const user = await api.account(['user']);
test.after.always(api.close);

const pt = (lng: number, lat: number) => ({ type: 'Point', coordinates: [lng, lat] });
const search = async (qs: string): Promise<string[]> => {
  const res = await call(api, 'GET', `/places?${qs}`);
  if (res.status !== 200) throw new Error(`search ${qs}: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.data.features.map((f: { properties: { name: string } }) => f.properties.name);
};

/** Activities whose copies differ from their place (0 when the triggers did their job). */
async function staleCopies(): Promise<number> {
  const r = await sql<{ n: number }>`
    select count(*)::int as n from place_activities a join places p on p.id = a.place_id
    where st_asbinary(a.place_geog) is distinct from st_asbinary(p.geom::geography)
       or a.place_approved is distinct from (p.status = 'approved')`.execute(api.database.db);
  return r.rows[0]?.n ?? -1;
}

test.serial('copies follow place creation, approval, rejection and deletion', async (t) => {
  const res = await call(api, 'POST', '/places', {
    token: user.token,
    body: {
      geometry: pt(5.0, 45.0),
      name: 'Pending run',
      country: 'FR',
      activities: [{ sport_id: 121, difficulty: 1 }],
    },
  });
  t.is(res.status, 201);
  const uuid = res.body.properties.uuid as string;
  t.is(await staleCopies(), 0);
  const qs = 'origin=5.0,45.0&radius=5&sports=121';
  t.deepEqual(await search(qs), []);
  t.is((await call(api, 'POST', `/places/${uuid}/approve`, { token: staff.token })).status, 200);
  t.is(await staleCopies(), 0);
  t.deepEqual(await search(qs), ['Pending run']);
  t.deepEqual(await search(`${qs}&min_difficulty=1`), ['Pending run']);
  t.is((await call(api, 'POST', `/places/${uuid}/reject`, { token: staff.token })).status, 200);
  t.is(await staleCopies(), 0);
  t.deepEqual(await search(qs), []);
  await call(api, 'POST', `/places/${uuid}/approve`, { token: staff.token });
  t.deepEqual(await search(qs), ['Pending run']);
  t.is((await call(api, 'DELETE', `/places/${uuid}`, { token: user.token })).status, 200);
  t.deepEqual(await search(qs), []);
  const left = await api.database.db
    .selectFrom('place_activities as a')
    .innerJoin('places as p', 'p.id', 'a.place_id')
    .select('a.id')
    .where('p.uuid', '=', uuid)
    .execute();
  t.deepEqual(left, []);
});

test.serial('copies follow a change of geometry or status written in SQL', async (t) => {
  const place = await createPlace(api, staff.token, {
    name: 'Moved court',
    geometry: pt(6.0, 46.0),
    activities: [{ sport_id: 357, tags: ['indoor'] }],
  });
  t.deepEqual(await search('origin=6.0,46.0&radius=2&sports=357'), ['Moved court']);
  await api.database.db
    .updateTable('places')
    .set({ geom: sql`st_setsrid(st_makepoint(6.5, 46.0), 4326)` })
    .where('uuid', '=', place.uuid)
    .execute();
  t.is(await staleCopies(), 0);
  t.deepEqual(await search('origin=6.0,46.0&radius=2&sports=357'), []);
  t.deepEqual(await search('origin=6.5,46.0&radius=2&sports=357'), ['Moved court']);
  await api.database.db.updateTable('places').set({ status: 'pending' }).where('uuid', '=', place.uuid).execute();
  t.is(await staleCopies(), 0);
  t.deepEqual(await search('origin=6.5,46.0&radius=2&sports=357'), []);
  await api.database.db.updateTable('places').set({ status: 'approved' }).where('uuid', '=', place.uuid).execute();
  t.deepEqual(await search('origin=6.5,46.0&radius=2&sports=357&tags=indoor'), ['Moved court']);
  // The copies cannot be written apart from their place: the trigger takes them from the place.
  await sql`update place_activities a set place_geog = st_makepoint(0, 0)::geography, place_approved = false
            from places p where p.id = a.place_id and p.uuid = ${place.uuid}`.execute(api.database.db);
  t.is(await staleCopies(), 0);
  t.deepEqual(await search('origin=6.5,46.0&radius=2&sports=357'), ['Moved court']);
});

test.serial('one-sport searches follow activity and tag writes', async (t) => {
  const place = await createPlace(api, staff.token, {
    name: 'Busy place',
    geometry: pt(7.0, 47.0),
    activities: [{ sport_id: 357, tags: ['indoor'] }],
  });
  const base = 'origin=7.0,47.0&radius=3';
  const path = `/places/${place.uuid}/activities`;
  t.deepEqual(await search(`${base}&sports=121`), []);
  // add
  t.is(
    (await call(api, 'POST', path, { token: staff.token, body: { sport_id: '121', tags: ['flat'], difficulty: 1 } }))
      .status,
    201,
  );
  t.is(await staleCopies(), 0);
  t.deepEqual(await search(`${base}&sports=121&tags=flat&min_difficulty=1`), ['Busy place']);
  // update: tags replaced, filter value removed
  t.is(
    (await call(api, 'PUT', `${path}/121`, { token: staff.token, body: { tags: ['outdoor'], difficulty: null } }))
      .status,
    200,
  );
  t.deepEqual(await search(`${base}&sports=121&tags=flat`), []);
  t.deepEqual(await search(`${base}&sports=121&min_difficulty=1`), []);
  t.deepEqual(await search(`${base}&sports=121&tags=outdoor`), ['Busy place']);
  // tag add / delete through the tag routes
  t.is((await call(api, 'POST', `${path}/121/tags`, { token: staff.token, body: { slug: 'toilets' } })).status, 200);
  t.deepEqual(await search(`${base}&sports=121&tags=outdoor,toilets`), ['Busy place']);
  t.is((await call(api, 'DELETE', `${path}/121/tags/toilets`, { token: staff.token })).status, 200);
  t.deepEqual(await search(`${base}&sports=121&tags=outdoor,toilets`), []);
  t.is(
    (
      await call(api, 'POST', `/places/${place.uuid}/tags`, {
        token: staff.token,
        body: { slug: 'shower', sport_id: 121 },
      })
    ).status,
    200,
  );
  t.deepEqual(await search(`${base}&sports=121&tags=shower`), ['Busy place']);
  // several at once: one updated, one created
  t.is(
    (
      await call(api, 'PUT', path, {
        token: staff.token,
        body: {
          activities: [
            { sport_id: 121, tags: ['free'] },
            { sport_id: 168, difficulty: 2 },
          ],
        },
      })
    ).status,
    200,
  );
  t.is(await staleCopies(), 0);
  t.deepEqual(await search(`${base}&sports=121&tags=outdoor`), []);
  t.deepEqual(await search(`${base}&sports=121&tags=free`), ['Busy place']);
  t.deepEqual(await search(`${base}&sports=168&min_difficulty=2`), ['Busy place']);
  // delete
  t.is((await call(api, 'DELETE', `${path}/168`, { token: staff.token })).status, 200);
  t.deepEqual(await search(`${base}&sports=168`), []);
  t.deepEqual(await search(`${base}&sports=357&tags=indoor`), ['Busy place']);
  t.is(await staleCopies(), 0);
});

test.serial('one sport and several sports give the same places in the same order', async (t) => {
  for (let i = 0; i < 6; i++)
    await createPlace(api, staff.token, {
      name: `Ring ${i}`,
      geometry: pt(8.0 + i * 0.01, 48.0),
      activities: [{ sport_id: i % 2 ? 121 : 357 }, ...(i % 3 === 0 ? [{ sport_id: 168 }] : [])],
    });
  const base = 'origin=8.0,48.0&radius=20&limit=2';
  const all = async (qs: string) => [
    ...(await search(`${qs}&page=1`)),
    ...(await search(`${qs}&page=2`)),
    ...(await search(`${qs}&page=3`)),
  ];
  t.deepEqual(await all(`${base}&sports=121`), ['Ring 1', 'Ring 3', 'Ring 5']);
  // sports=121,121 takes the other plan (several sports): same answer.
  t.deepEqual(await all(`${base}&sports=121,121`), await all(`${base}&sports=121`));
  t.deepEqual(await all(`${base}&sports=168`), ['Ring 0', 'Ring 3']);
  const one = await call(api, 'GET', `/places?${base}&sports=121`);
  const many = await call(api, 'GET', `/places?${base}&sports=121,999999`);
  t.deepEqual(one.body.data, many.body.data);
  t.is(one.body.count, 2);
});
