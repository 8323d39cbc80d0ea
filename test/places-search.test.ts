import test from 'ava';
import fc from 'fast-check';
import { sql } from 'kysely';
import { parseSearchQuery } from '../shared/places/search-query.ts';
import { buildSearchQuery, compileSearchQuery } from '../shared/places/search-sql.ts';
import { startTestApi } from './helpers/app.ts';
import { call, createPartner, createPlace, paths } from './helpers/places.ts';

const api = await startTestApi(null);
const staff = await api.account(['staff']);
const user = await api.account(['user']);
const partner = await api.account(['partner']);

// A small world around Lille (3.06, 50.63): points at growing distances eastwards, a line and a polygon.
const pt = (lng: number, lat = 50.63) => ({ type: 'Point', coordinates: [lng, lat] });
await createPlace(api, staff.token, {
  name: 'Near',
  geometry: pt(3.061),
  activities: [{ sport_id: 357, tags: ['floodlight', 'indoor'], surface: 'clay', courts: 2, quality: 2 }],
});
const mid = await createPlace(api, staff.token, {
  name: 'Mid',
  geometry: pt(3.1),
  activities: [
    { sport_id: 357, tags: ['floodlight'], surface: 'sand', quality: 1 },
    { sport_id: 121, difficulty: 1, distance: 5000, duration: 30, elevation_gain: 50, cellphone_service: 2 },
  ],
});
const far = await createPlace(api, staff.token, {
  name: 'Far',
  geometry: pt(3.3),
  activities: [
    { sport_id: 121, difficulty: 2, distance: 20000, duration: 120, elevation_gain: 600, cellphone_service: 0 },
  ],
});
// A trail whose nearest point is 3.2 but whose start is far outside small areas.
await createPlace(api, staff.token, {
  name: 'Trail',
  geometry: {
    type: 'LineString',
    coordinates: [
      [3.2, 50.63],
      [3.9, 50.63],
    ],
  },
  activities: [{ sport_id: 168, difficulty: 0 }],
});
await createPlace(api, staff.token, {
  name: 'Park',
  geometry: {
    type: 'Polygon',
    coordinates: [
      [
        [2.9, 50.5],
        [2.95, 50.5],
        [2.95, 50.55],
        [2.9, 50.5],
      ],
    ],
  },
  activities: [{ sport_id: 13, surface: 'sand' }],
});
const pendingRes = await call(api, 'POST', '/places', {
  token: user.token,
  body: { geometry: pt(3.0605), name: 'Pending one', country: 'FR', activities: [{ sport_id: 357 }] },
});
await createPartner(api, 'acme');
await call(api, 'PUT', `/places/${mid.uuid}`, { token: partner.token, body: { featured: true, partner: 'acme' } });
await api.database.db
  .updateTable('places')
  .set({ created_at: new Date(Date.now() - 10 * 86_400_000) })
  .where('uuid', '=', far.uuid)
  .execute();
test.after.always(api.close);

const search = (qs: string) => call(api, 'GET', `/places?${qs}`);
const names = (res: { body: { data: { features: { properties: { name: string } }[] } } }) =>
  res.body.data.features.map((f) => f.properties.name);
const ORIGIN = 'origin=3.06,50.63&radius=100';

test('radius search: envelope, approved only, ordered by proximity, lines and polygons by nearest point', async (t) => {
  const res = await search(ORIGIN);
  t.is(res.status, 200);
  t.deepEqual(names(res), ['Near', 'Mid', 'Trail', 'Park', 'Far']); // trail 9.9 km, park 11.8 km
  t.is(res.body.count, 5);
  t.is(res.body.data.type, 'FeatureCollection');
  t.is(res.body.links.self, `${api.config.PUBLIC_URL}/api/v1/places?${ORIGIN}`);
  t.is(res.body.links.next, null);
  const f = res.body.data.features[0];
  t.deepEqual(Object.keys(f.properties).sort(), [
    'activities',
    'address_components',
    'contact_details',
    'external_place_id',
    'name',
    'proximity',
    'slug',
    'uuid',
  ]);
  t.deepEqual(f.properties.activities, [
    { sport_id: 357, tags: ['floodlight', 'indoor'], attributes: { surface: 'clay', courts: 2, quality: 2 } },
  ]);
  t.true(f.properties.proximity < 0.2);
  const trail = res.body.data.features.find((x: { properties: { name: string } }) => x.properties.name === 'Trail');
  t.true(Math.abs(trail.properties.proximity - 9.9) < 0.3, `trail proximity ${trail.properties.proximity}`);
  t.is(trail.geometry.type, 'LineString');
  t.false(names(res).includes('Pending one'));
  t.truthy(pendingRes.body.properties.uuid);
});

test('radius excludes what is farther; a line crossing the circle matches', async (t) => {
  t.deepEqual(names(await search('origin=3.06,50.63&radius=5')), ['Near', 'Mid']);
  // Trail starts 14 km east of this origin but passes 0 km from it.
  t.deepEqual(names(await search('origin=3.5,50.63&radius=1')), ['Trail']);
});

test('bounding box: intersects; user_origin sets proximity order (else box centre)', async (t) => {
  const box = 'sw=3.05,50.6&ne=3.35,50.7';
  t.deepEqual(names(await search(`${box}&user_origin=3.31,50.63`)), ['Trail', 'Far', 'Mid', 'Near']); // on the trail
  t.deepEqual(names(await search(`${box}&user_origin=3.0,50.63`)), ['Near', 'Mid', 'Trail', 'Far']);
  t.deepEqual(names(await search('sw=3.5,50.6&ne=3.6,50.7')), ['Trail']);
  t.deepEqual(names(await search('sw=2.91,50.51&ne=2.92,50.52')), ['Park'], 'a box inside the polygon intersects it');
  t.deepEqual(names(await search('sw=2.9,50.54&ne=2.91,50.55')), [], 'a box beside the triangle does not');
});

test('user_origin overrides origin for order', async (t) => {
  t.deepEqual(names(await search(`${ORIGIN}&user_origin=3.29,50.63`)).slice(0, 2), ['Trail', 'Far']);
});

test('sports, tags (all must match one activity), surface', async (t) => {
  t.deepEqual(names(await search(`${ORIGIN}&sports=121`)), ['Mid', 'Far']);
  t.deepEqual(names(await search(`${ORIGIN}&sports=168,13`)), ['Trail', 'Park']);
  t.deepEqual(names(await search(`${ORIGIN}&tags=floodlight`)), ['Near', 'Mid']);
  t.deepEqual(names(await search(`${ORIGIN}&tags=floodlight,indoor`)), ['Near']);
  t.deepEqual(names(await search(`${ORIGIN}&surface=sand`)), ['Mid', 'Park']);
  t.deepEqual(names(await search(`${ORIGIN}&surface=clay,sand&sports=357`)), ['Near', 'Mid']);
  t.deepEqual(names(await search(`${ORIGIN}&sports=121&tags=floodlight`)), [], 'same activity must match both');
});

test('min/max pairs, one side alone allowed', async (t) => {
  t.deepEqual(names(await search(`${ORIGIN}&min_distance=300`)), ['Mid', 'Far']);
  t.deepEqual(names(await search(`${ORIGIN}&max_distance=10000`)), ['Mid']);
  t.deepEqual(names(await search(`${ORIGIN}&min_difficulty=1&max_difficulty=1`)), ['Mid']);
  t.deepEqual(names(await search(`${ORIGIN}&max_difficulty=0`)), ['Trail']);
  t.deepEqual(names(await search(`${ORIGIN}&min_duration=60`)), ['Far']);
  t.deepEqual(names(await search(`${ORIGIN}&min_elevation_gain=100`)), ['Far']);
  t.deepEqual(names(await search(`${ORIGIN}&max_elevation_gain=100`)), ['Mid']);
  t.deepEqual(names(await search(`${ORIGIN}&min_cellphone_service=1`)), ['Mid']);
  t.deepEqual(names(await search(`${ORIGIN}&max_cellphone_service=1`)), ['Far']);
  t.deepEqual(names(await search(`${ORIGIN}&min_quality=2`)), ['Near']);
  t.deepEqual(names(await search(`${ORIGIN}&max_quality=1`)), ['Mid']);
});

test('created_at order, days, partner, featured', async (t) => {
  const desc = names(await search(`${ORIGIN}&created_at=desc`));
  t.is(desc.at(-1), 'Far');
  t.is(names(await search(`${ORIGIN}&created_at=asc`))[0], 'Far');
  t.false(names(await search(`${ORIGIN}&days=5`)).includes('Far'));
  t.true(names(await search(`${ORIGIN}&days=11`)).includes('Far'));
  t.deepEqual(names(await search(`${ORIGIN}&featured=true`)), ['Mid']);
  t.is(names(await search(`${ORIGIN}&featured=false`)).length, 4);
  t.deepEqual(names(await search(`${ORIGIN}&partner=acme`)), ['Mid']);
  t.deepEqual(names(await search(`${ORIGIN}&partner=other`)), []);
});

test('paging: limit, page, links.next, count; default limit 20', async (t) => {
  const all = await search(ORIGIN);
  t.is(all.body.count, 5);
  const p1 = await search(`${ORIGIN}&limit=2`);
  t.deepEqual(names(p1), ['Near', 'Mid']);
  t.is(p1.body.count, 2, 'count is the number of features in the response');
  // The next page's number, and the cursor of this page's last place (keyset paging).
  t.regex(
    p1.body.links.next,
    new RegExp(
      `^${api.config.PUBLIC_URL}/api/v1/places\\?origin=3.06%2C50.63&radius=100&limit=2&page=2&after=[0-9a-f]{16}\\.\\d+$`,
    ),
  );
  const p2 = await api.fetch(new URL(p1.body.links.next).pathname + new URL(p1.body.links.next).search);
  const b2 = (await p2.json()) as { data: { features: { properties: { name: string } }[] }; links: { next: string } };
  t.deepEqual(
    b2.data.features.map((f) => f.properties.name),
    ['Trail', 'Park'],
  );
  const p3 = await search(`${ORIGIN}&limit=2&page=3`);
  t.deepEqual(names(p3), ['Far']);
  t.is(p3.body.count, 1);
  t.is(p3.body.links.next, null);
  const p9 = await search(`${ORIGIN}&limit=2&page=9`);
  t.deepEqual(names(p9), []);
  t.is(p9.body.count, 0);
  t.is(p9.body.links.next, null);
  t.is((await search(`${ORIGIN}&limit=100`)).status, 200);
  // Default limit: 20.
  await sql`insert into places (slug, name, geom, country, status)
    select 'bulk-' || g, 'Bulk ' || g, st_setsrid(st_makepoint(10 + g * 0.001, 10), 4326), 'NE', 'approved'
    from generate_series(1, 25) g`.execute(api.database.db);
  const bulk = await search('origin=10,10&radius=10');
  t.is(bulk.body.count, 20);
  t.regex(bulk.body.links.next, /page=2&limit=20&after=/);
  const bulk2 = await search('origin=10,10&radius=10&page=2');
  t.is(bulk2.body.count, 5);
  t.is(bulk2.body.links.next, null);
  const empty = await search('origin=-70,-40&radius=1');
  t.is(empty.body.count, 0);
});

test('422 naming the parameter: pairs, 100 km, limit, formats', async (t) => {
  const cases: [string, string][] = [
    ['sw=3,50', 'query.ne'],
    ['ne=3,50', 'query.sw'],
    ['origin=3,50', 'query.radius'],
    ['radius=5', 'query.origin'],
    ['', 'query.origin'],
    ['user_origin=3,50', 'query.origin'],
    ['origin=3,50&radius=100.5', 'query.radius'],
    ['origin=3,50&radius=0', 'query.radius'],
    ['origin=3,50&radius=abc', 'query.radius'],
    ['sw=3,50&ne=4.5,50.1', 'query.ne'],
    ['sw=3,50&ne=3.1,51', 'query.ne'],
    ['sw=3,50.1&ne=3.1,50', 'query.sw'],
    ['sw=3.1,50&ne=3,50.1', 'query.sw'],
    ['sw=3,50&ne=3.1,50.1&origin=3,50&radius=1', 'query.origin'],
    [`${ORIGIN}&limit=101`, 'query.limit'],
    [`${ORIGIN}&limit=0`, 'query.limit'],
    [`${ORIGIN}&limit=ten`, 'query.limit'],
    [`${ORIGIN}&page=0`, 'query.page'],
    ['origin=3&radius=1', 'query.origin'],
    ['origin=50.63,300&radius=1', 'query.origin'],
    [`${ORIGIN}&user_origin=a,b`, 'query.user_origin'],
    [`${ORIGIN}&sports=tennis`, 'query.sports'],
    [`${ORIGIN}&tags=nope`, 'query.tags'],
    [`${ORIGIN}&surface=lava`, 'query.surface'],
    [`${ORIGIN}&min_difficulty=3`, 'query.min_difficulty'],
    [`${ORIGIN}&max_quality=-1`, 'query.max_quality'],
    [`${ORIGIN}&min_distance=1.5`, 'query.min_distance'],
    [`${ORIGIN}&min_duration=60&max_duration=30`, 'query.min_duration'],
    [`${ORIGIN}&created_at=newest`, 'query.created_at'],
    [`${ORIGIN}&days=0`, 'query.days'],
    [`${ORIGIN}&featured=maybe`, 'query.featured'],
    [`${ORIGIN}&partner=a%20b`, 'query.partner'],
    [`${ORIGIN}&limit=1&limit=2`, 'query.limit'],
  ];
  for (const [qs, path] of cases) {
    const res = await search(qs);
    t.is(res.status, 422, qs);
    t.true(paths(res).includes(path), `${qs} → ${paths(res).join(',')}`);
    t.regex(res.headers.get('content-type') ?? '', /problem\+json/);
  }
  const swapped = await search('origin=50.63,120&radius=1');
  t.regex(swapped.body.errors[0].message, /valid swapped/);
});

test('property: any in-range radius ≤ 100 km parses; any > 100 km is rejected with query.radius', (t) => {
  fc.assert(
    fc.property(
      fc.double({ min: -180, max: 180, noNaN: true }),
      fc.double({ min: -90, max: 90, noNaN: true }),
      fc.double({ min: 0.001, max: 300, noNaN: true }),
      (lng, lat, r) => {
        const out = parseSearchQuery({ origin: `${lng},${lat}`, radius: String(r) });
        return r <= 100 ? out.params !== undefined : out.errors.some((e) => e.path === 'query.radius');
      },
    ),
  );
  t.pass();
});

test('property: a box longer than 100 km on a side is rejected, a smaller one accepted', (t) => {
  fc.assert(
    fc.property(
      fc.double({ min: -170, max: 170, noNaN: true }),
      fc.double({ min: -80, max: 80, noNaN: true }),
      fc.double({ min: 0.0001, max: 3, noNaN: true }),
      (lng, lat, d) => {
        const out = parseSearchQuery({ sw: `${lng},${lat}`, ne: `${lng + d / 10},${lat + d}` });
        const km = d * 111.2;
        if (km > 100.5) return out.errors.some((e) => e.path === 'query.ne');
        if (km < 99.5) return out.params !== undefined;
        return true;
      },
    ),
  );
  t.pass();
});

test('search ignores pending and rejected places; approving makes them appear', async (t) => {
  const p = (
    await call(api, 'POST', '/places', {
      token: user.token,
      body: { geometry: pt(-1.5, 47.2), name: 'Nantes court', country: 'FR', activities: [{ sport_id: 357 }] },
    })
  ).body.properties;
  t.deepEqual(names(await search('origin=-1.5,47.2&radius=1')), []);
  await call(api, 'POST', `/places/${p.uuid}/approve`, { token: staff.token });
  t.deepEqual(names(await search('origin=-1.5,47.2&radius=1')), ['Nantes court']);
  await call(api, 'POST', `/places/${p.uuid}/reject`, { token: staff.token });
  t.deepEqual(names(await search('origin=-1.5,47.2&radius=1')), []);
});

test('each search shape uses an index (EXPLAIN with seqscan off shows no Seq Scan on places)', async (t) => {
  const shapes = [
    ORIGIN,
    'sw=3.05,50.6&ne=3.35,50.7',
    `${ORIGIN}&sports=121&tags=flat&min_distance=100`,
    `${ORIGIN}&created_at=desc`,
    // Later pages: by offset, and by keyset cursor (links.next) in each order.
    `${ORIGIN}&page=3`,
    `${ORIGIN}&after=3fb999999999999a.12`,
    `${ORIGIN}&sports=121&after=3fb999999999999a.12`,
    `${ORIGIN}&created_at=desc&after=3fb999999999999a.12.1767225600123456`,
  ];
  for (const qs of shapes) {
    const params = parseSearchQuery(Object.fromEntries(new URLSearchParams(qs))).params;
    if (!params) throw new Error(qs);
    const q = buildSearchQuery(api.database.db, params).compile();
    const plan = await api.database.db.connection().execute(async (db) => {
      await sql`set enable_seqscan = off`.execute(db);
      const r = await db.executeQuery<{ 'QUERY PLAN': string }>({ ...q, sql: `explain ${q.sql}` } as never);
      await sql`reset enable_seqscan`.execute(db);
      return r.rows.map((x) => x['QUERY PLAN']).join('\n');
    });
    t.notRegex(plan, /Seq Scan on places/, qs);
    t.regex(plan, /places_ge(om|og)_idx|place_activities_geog_sport_idx/, qs);
  }
});

test('compileSearchQuery: one SQL text and prepared-statement name per shape, values as parameters', (t) => {
  const compile = (qs: string) => {
    const params = parseSearchQuery(Object.fromEntries(new URLSearchParams(qs))).params;
    if (!params) throw new Error(qs);
    return compileSearchQuery(params);
  };
  const a = compile('origin=3.06,50.63&radius=5');
  const b = compile('origin=-1.5,47.2&radius=12&page=3');
  t.is(a.sql, b.sql);
  t.truthy(a.name);
  t.is(a.name, b.name);
  t.notDeepEqual(a.parameters, b.parameters);
  const one = compile('origin=3.06,50.63&radius=5&sports=121&tags=flat');
  const many = compile('origin=3.06,50.63&radius=5&sports=121,357&tags=flat');
  t.not(one.name, a.name);
  t.not(one.name, many.name);
  t.regex(one.sql, /place_geog <->/);
  t.notRegex(many.sql, /place_geog/);
  t.is(compile('origin=3.06,50.63&radius=5&sports=121&tags=flat').name, one.name);
  // Proximity order keeps the KNN walk: no second key (PostgreSQL 15 would sort the whole area), ties kept.
  t.regex(
    a.sql,
    /order by p\.geom::geography <-> st_setsrid\(st_makepoint\(\$\d+, \$\d+\), 4326\)::geography fetch first \$\d+ rows with ties/,
  );
  // Keyset pages: one more shape, whatever the cursor.
  const k1 = compile('origin=3.06,50.63&radius=5&after=3fb999999999999a.12');
  const k2 = compile('origin=-1.5,47.2&radius=12&page=4&after=0000000000000000.99');
  t.is(k1.name, k2.name);
  t.not(k1.name, a.name);
});

test('a geometry posted with elevations comes back as sent, inside a well-formed Feature', async (t) => {
  const geometry = {
    type: 'LineString',
    coordinates: [
      [9.0, 49.0, 120.5],
      [9.01, 49.0, 131],
    ],
  };
  await createPlace(api, staff.token, { name: 'Ridge', geometry, activities: [{ sport_id: 121, difficulty: 2 }] });
  for (const qs of ['origin=9.0,49.0&radius=1', 'origin=9.0,49.0&radius=1&sports=121']) {
    const res = await search(qs);
    t.is(res.status, 200, qs);
    t.regex(res.headers.get('content-type') ?? '', /^application\/json/);
    t.deepEqual(res.body.data.features[0].geometry, geometry, qs);
    t.deepEqual(Object.keys(res.body.data.features[0]), ['type', 'geometry', 'properties']);
    t.is(res.body.data.features[0].properties.proximity, 0);
    t.deepEqual(res.body.data.features[0].properties.activities, [
      { sport_id: 121, tags: [], attributes: { difficulty: 2 } },
    ]);
  }
});
