import test from 'ava';
import fc from 'fast-check';
import { sql } from 'kysely';
import { parseCursor, parseSearchQuery } from '../shared/places/search-query.ts';
import { startTestApi } from './helpers/app.ts';
import { call, createPlace, paths } from './helpers/places.ts';

/**
 * Paging with places tied in proximity (issue 7, part 5): points at the same position, and
 * polygons and a line around the reference point (all at 0 m). Walking every page, by links.next
 * (keyset `after`) or by `page`, must return each match exactly once, in the search order
 * `([created_at,] proximity, id)`, on every plan (KNN on places, KNN on one sport's activities,
 * per-place activity probe, created_at sort).
 */
const api = await startTestApi(null);
const staff = await api.account(['staff']);

const O: [number, number] = [4.0, 46.0];
const pt = (lng: number, lat: number) => ({ type: 'Point', coordinates: [lng, lat] });
const square = (half: number) => ({
  type: 'Polygon',
  coordinates: [
    [
      [O[0] - half, O[1] - half],
      [O[0] + half, O[1] - half],
      [O[0] + half, O[1] + half],
      [O[0] - half, O[1] + half],
      [O[0] - half, O[1] - half],
    ],
  ],
});
const geometries = [
  // At 0 m from O: 3 points on it, 6 polygons around it, a line through it.
  ...Array.from({ length: 3 }, () => pt(...O)),
  ...[1, 2, 3, 4, 5, 6].map((k) => square(0.001 * k)),
  {
    type: 'LineString',
    coordinates: [
      [3.99, 46.0],
      [4.01, 46.0],
    ],
  },
  // Groups of points at one position: ~310 m, ~667 m and ~1.37 km from O.
  ...Array.from({ length: 4 }, () => pt(4.004, 46.0)),
  ...Array.from({ length: 3 }, () => pt(4.0, 46.006)),
  ...Array.from({ length: 2 }, () => pt(4.01, 46.01)),
  pt(4.02, 46.0),
  pt(3.97, 46.003),
];
// Sports alternate so that sports=121 (one-sport KNN) and sports=121,357 (probe) match subsets.
const SPORTS = [[121], [357], [121, 357]];
for (const [i, geometry] of geometries.entries())
  await createPlace(api, staff.token, {
    name: `Tie ${i}`,
    geometry,
    activities: (SPORTS[i % 3] as number[]).map((sport_id) => ({ sport_id })),
  });
// Three creation instants, with microseconds, shared by a third of the places each: created_at ties.
await sql`update places set created_at = '2026-01-01T00:00:00.123456Z'::timestamptz + (id % 3) * interval '1 day'`.execute(
  api.database.db,
);
// Declared after the setup's awaits: ava starts running once a first test or hook is declared.
test.after.always(api.close);

interface Page {
  status: number;
  uuids: string[];
  proximities: number[];
  next: string | null;
}
async function get(pathAndQuery: string): Promise<Page> {
  const res = await call(api, 'GET', pathAndQuery);
  const features: { properties: { uuid: string; proximity: number } }[] = res.body?.data?.features ?? [];
  return {
    status: res.status,
    uuids: features.map((f) => f.properties.uuid),
    proximities: features.map((f) => f.properties.proximity),
    next: res.body?.links?.next ?? null,
  };
}

/** Every page, following links.next from the first one. */
async function walkNext(qs: string): Promise<{ uuids: string[]; proximities: number[]; pages: number }> {
  const out = { uuids: [] as string[], proximities: [] as number[], pages: 0 };
  let path: string | null = `/places?${qs}`;
  while (path && out.pages < 100) {
    const page = await get(path);
    if (page.status !== 200) throw new Error(`${path}: ${page.status}`);
    out.uuids.push(...page.uuids);
    out.proximities.push(...page.proximities);
    out.pages++;
    if (page.next) {
      const u = new URL(page.next);
      path = `${u.pathname.replace(/^\/api\/v1/, '')}${u.search}`;
    } else path = null;
  }
  return out;
}

/** Every page, asking page=1, 2, … (offset paging) until links.next is null. */
async function walkPages(qs: string): Promise<string[]> {
  const out: string[] = [];
  for (let n = 1; n <= 100; n++) {
    const page = await get(`/places?${qs}&page=${n}`);
    if (page.status !== 200) throw new Error(`${qs}&page=${n}: ${page.status}`);
    out.push(...page.uuids);
    if (!page.next) break;
  }
  return out;
}

/**
 * The expected matches in the expected order, computed without paging, limits or index tricks:
 * every approved place of the area sorted by ([created_at,] distance, id).
 */
async function expected(qs: string): Promise<string[]> {
  const p = parseSearchQuery(Object.fromEntries(new URLSearchParams(qs))).params;
  if (!p) throw new Error(qs);
  const ref = sql`st_setsrid(st_makepoint(${p.reference[0]}, ${p.reference[1]}), 4326)::geography`;
  const area =
    p.area.kind === 'radius'
      ? sql`st_dwithin(p.geom::geography, st_setsrid(st_makepoint(${p.area.origin[0]}, ${p.area.origin[1]}), 4326)::geography, ${p.area.radiusKm * 1000}, false)`
      : sql`st_intersects(p.geom, st_makeenvelope(${p.area.sw[0]}, ${p.area.sw[1]}, ${p.area.ne[0]}, ${p.area.ne[1]}, 4326))`;
  const sports = p.sports
    ? sql`exists (select 1 from place_activities a where a.place_id = p.id and a.sport_id = any(${p.sports}::int[]))`
    : sql`true`;
  const created = sql.raw(p.createdAt ? `p.created_at ${p.createdAt},` : '');
  const rows = await sql<{ uuid: string }>`
    select p.uuid from places p where p.status = 'approved' and ${area} and ${sports}
    order by ${created} p.geom::geography <-> ${ref}, p.id`.execute(api.database.db);
  return rows.rows.map((r) => r.uuid);
}

const SEARCHES = [
  'origin=4,46&radius=3', // KNN on places_geog_idx
  'origin=4,46&radius=0.637', // the example: the 0 m group and the 310 m group
  'origin=4,46&radius=3&sports=121', // KNN on place_activities_geog_sport_idx
  'origin=4,46&radius=3&sports=121,357', // KNN on places with the activity probe
  'sw=3.95,45.97&ne=4.05,46.03', // bbox: proximity to the box centre, which is O
  'origin=4,46&radius=3&user_origin=4.004,46', // ties at the user's position
  'origin=4,46&radius=3&created_at=desc',
  'origin=4,46&radius=3&created_at=asc&sports=121',
];

for (const qs of SEARCHES)
  test(`every page of ${qs} returns each match once, in order (links.next and page)`, async (t) => {
    const want = await expected(qs);
    t.true(want.length >= 8, `${want.length} matches`);
    for (const limit of [1, 2, 3, 7]) {
      const viaNext = await walkNext(`${qs}&limit=${limit}`);
      t.deepEqual(viaNext.uuids, want, `links.next, limit=${limit}`);
      t.is(viaNext.pages, Math.max(1, Math.ceil(want.length / limit)), `pages, limit=${limit}`);
      if (!qs.includes('created_at'))
        t.deepEqual(
          viaNext.proximities,
          [...viaNext.proximities].sort((a, b) => a - b),
          'nearest first',
        );
      t.deepEqual(await walkPages(`${qs}&limit=${limit}`), want, `page=1,2,…, limit=${limit}`);
    }
  });

test('the searches above do tie: 10 places at 0 m from O, groups of points at one position', async (t) => {
  const all = await walkNext('origin=4,46&radius=3&limit=100');
  t.is(all.proximities.filter((p) => p === 0).length, 10);
  t.is(all.proximities.filter((p) => p === all.proximities[10]).length, 4);
  const created = await sql<{ n: number }>`
    select count(distinct created_at)::int as n from places`.execute(api.database.db);
  t.is(created.rows[0]?.n, 3);
});

test('links.next keeps page, limit and the query, and adds the cursor of the last place', async (t) => {
  const first = await call(api, 'GET', '/places?origin=4,46&radius=3&limit=2');
  const next = new URL(first.body.links.next);
  t.is(next.searchParams.get('origin'), '4,46');
  t.is(next.searchParams.get('page'), '2');
  t.is(next.searchParams.get('limit'), '2');
  t.regex(next.searchParams.get('after') ?? '', /^0{16}\.\d+$/, 'two places at 0 m: the cursor is at 0 m');
  const dated = await call(api, 'GET', '/places?origin=4,46&radius=3&limit=2&created_at=desc');
  t.regex(new URL(dated.body.links.next).searchParams.get('after') ?? '', /^[0-9a-f]{16}\.\d+\.\d+$/);
  const last = await call(api, 'GET', '/places?origin=4,46&radius=3&limit=100');
  t.is(last.body.links.next, null);
});

test('after: a malformed cursor, or one of another order, is a 422 on query.after', async (t) => {
  const { next } = await get('/places?origin=4,46&radius=3&limit=2');
  const cursor = new URL(next ?? '').searchParams.get('after') ?? '';
  const dated = new URL((await get('/places?origin=4,46&radius=3&limit=2&created_at=asc')).next ?? '').searchParams.get(
    'after',
  );
  for (const qs of [
    'after=abc',
    'after=',
    `after=${cursor}x`,
    'after=fff0000000000000.1', // -Infinity
    'after=bff0000000000000.1', // -1
    'after=7ff8000000000000.1', // NaN
    'after=0000000000000000.99999999999999999999',
    `after=${cursor}&created_at=desc`,
    `after=${dated}`,
    'after=0000000000000000.9999999999999999999', // id beyond bigint
    'after=0000000000000000.1.300000000000000000', // year 11476
    'after=0000000000000000.1.9999999999999999999', // beyond Date
  ]) {
    const res = await call(api, 'GET', `/places?origin=4,46&radius=3&${qs}`);
    t.is(res.status, 422, qs);
    t.deepEqual(paths(res), ['query.after'], qs);
  }
  t.is((await call(api, 'GET', `/places?origin=4,46&radius=3&after=${dated}&created_at=desc`)).status, 200);
});

test('parseCursor reads back every proximity exactly (IEEE 754 bits) and created_at to the microsecond', (t) => {
  fc.assert(
    fc.property(fc.double({ min: 0, max: 1e7, noNaN: true }), fc.bigInt({ min: 1n, max: 2n ** 63n - 1n }), (d, id) => {
      const hex = Buffer.alloc(8);
      hex.writeDoubleBE(d);
      const key = parseCursor(`${hex.toString('hex')}.${id}`);
      return key !== undefined && key.proximityM === d && key.id === String(id);
    }),
  );
  t.deepEqual(parseCursor('0000000000000000.7.1767225600123456'), {
    proximityM: 0,
    id: '7',
    createdAt: '2026-01-01T00:00:00.123456Z',
  });
  t.is(parseCursor('0000000000000000.7.-1')?.createdAt, '1969-12-31T23:59:59.999999Z');
});

test('links.next stays consistent when a place is added before the cursor between two requests', async (t) => {
  // Its own area, so the other tests' results do not move.
  for (let i = 0; i < 4; i++)
    await createPlace(api, staff.token, { name: `Moving ${i}`, geometry: pt(6.0 + 0.001 * i, 44.0) });
  const qs = 'origin=6,44&radius=2&limit=2';
  const first = await get(`/places?${qs}`);
  await createPlace(api, staff.token, { name: 'Newcomer', geometry: pt(6.0, 44.0) });
  const u = new URL(first.next ?? '');
  const second = await get(`${u.pathname.replace(/^\/api\/v1/, '')}${u.search}`);
  t.is(new Set([...first.uuids, ...second.uuids]).size, 4, 'no place twice: the cursor starts after page 1');
  // Offset paging shifts by one instead: page 2 repeats the last place of page 1.
  const byPage = await get(`/places?${qs}&page=2`);
  t.is(byPage.uuids[0], first.uuids[1]);
});
