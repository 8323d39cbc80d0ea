import test from 'ava';
import { sql } from 'kysely';
import { startTestApi } from './helpers/app.ts';
import { runScript } from './helpers/cli.ts';
import { call } from './helpers/places.ts';

const api = await startTestApi(null);
const { db } = api.database;

// 4,000 approved places around four cities, written in random order (as places arrive), each with
// a running and a tennis activity: about a hundred heap pages per table. (Not `order by random()`:
// PostgreSQL would take the sort key for every random() of the row, coordinates included.)
const CITIES = [
  [2.35, 48.85],
  [3.06, 50.63],
  [4.84, 45.76],
  [-1.55, 47.22],
];
await sql`
  insert into places (slug, name, geom, country, status)
  select 'order-' || i, 'Place ' || i,
         st_setsrid(st_makepoint(c.lng + (random() - 0.5) * 0.4, c.lat + (random() - 0.5) * 0.3), 4326), 'FR', 'approved'
  from generate_series(1, 4000) i
  join lateral (select (${JSON.stringify(CITIES)}::jsonb -> (i % 4)) as city) j on true
  cross join lateral (select (j.city ->> 0)::float8 as lng, (j.city ->> 1)::float8 as lat) c
  order by md5(i::text)`.execute(db);
await sql`
  insert into place_activities (place_id, sport_id, tags)
  select id, sport, '{outdoor}' from places cross join (values (121), (357)) s(sport) order by md5(id || '-' || sport)`.execute(
  db,
);
await sql`analyze places, place_activities`.execute(db);
test.after.always(() => api.close());

/** Heap pages holding the `k` rows nearest to Lille of `table`. */
async function pagesOfNearest(table: 'places' | 'place_activities', k = 40): Promise<number> {
  const location = table === 'places' ? sql.ref('geom') : sql`place_geog::geometry`;
  const { rows } = await sql<{ pages: number }>`
    select count(distinct (ctid::text::point)[0])::int as pages
    from (select ctid from ${sql.table(table)} order by ${location} <-> st_setsrid(st_makepoint(3.06, 50.63), 4326) limit ${k}) n`.execute(
    db,
  );
  return rows[0]?.pages ?? 0;
}

const indexesOf = async () =>
  (
    await sql<{ definition: string; valid: boolean }>`
      select pg_get_indexdef(i.indexrelid) as definition, i.indisvalid as valid
      from pg_index i where i.indrelid in ('places'::regclass, 'place_activities'::regclass)
      order by 1`.execute(db)
  ).rows;

const SEARCHES = [
  '/places?origin=3.06,50.63&radius=10',
  '/places?sw=2.2,48.75&ne=2.5,48.95',
  '/places?origin=4.84,45.76&radius=20&sports=121&tags=outdoor',
];
const search = async (path: string) => {
  const res = await call(api, 'GET', path);
  if (res.status !== 200) throw new Error(`${path}: ${res.status}`);
  return res.body;
};

const runOrder = (args: string[] = []) =>
  runScript('scripts/places-order.ts', args, { DATABASE_URL: api.database.url, MIGRATE_ON_START: 'false' });

test.serial('npm run places:order puts neighbours on the same pages and keeps every index and answer', async (t) => {
  const before = {
    places: await pagesOfNearest('places'),
    activities: await pagesOfNearest('place_activities'),
    indexes: await indexesOf(),
    answers: await Promise.all(SEARCHES.map(search)),
  };
  // Random order: the 40 nearest rows are spread over most of the table's pages.
  t.true(before.places > 20, `places: ${before.places} pages before`);
  t.true(before.activities > 20, `activities: ${before.activities} pages before`);

  const run = await runOrder(['--memory', '64MB']);
  t.is(run.code, 0, run.stderr);
  const lines = run.stdout
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l));
  t.deepEqual(
    lines.map((l) => l.table),
    ['places', 'place_activities'],
  );
  t.true(lines.every((l) => typeof l.seconds === 'number'));

  // 40 rows fill a page or two, but a point's neighbours may sit on both sides of a turn of the
  // curve: a few runs of pages.
  const after = { places: await pagesOfNearest('places'), activities: await pagesOfNearest('place_activities') };
  t.true(after.places <= 6 && after.activities <= 6, `pages after: ${JSON.stringify(after)}`);
  // The same indexes, all valid, none left behind by the rewrite.
  t.deepEqual(await indexesOf(), before.indexes);
  t.true(before.indexes.every((i) => i.valid));
  // The searches answer the same.
  t.deepEqual(await Promise.all(SEARCHES.map(search)), before.answers);
  for (const answer of before.answers) t.true(answer.data.features.length > 0);
});

test.serial('a place written after the rewrite is found, and a second run orders it in', async (t) => {
  const created = await sql<{ id: string }>`
    insert into places (slug, name, geom, country, status)
    values ('order-late', 'Late place', st_setsrid(st_makepoint(3.0601, 50.6301), 4326), 'FR', 'approved')
    returning id`.execute(db);
  const id = Number(created.rows[0]?.id);
  const near = await search('/places?origin=3.06,50.63&radius=1');
  t.true(near.data.features.some((f: { properties: { name: string } }) => f.properties.name === 'Late place'));
  t.is((await runOrder()).code, 0);
  const { rows } = await sql<{ page: number; neighbours: number }>`
    select (p.ctid::text::point)[0]::int as page,
      (select count(*)::int from places q where (q.ctid::text::point)[0] = (p.ctid::text::point)[0]
         and q.geom <-> p.geom < 0.05) as neighbours
    from places p where p.id = ${id}`.execute(db);
  // Appended at the end before; among its neighbours' page after.
  t.true((rows[0]?.neighbours ?? 0) > 5, JSON.stringify(rows[0]));
});

test('a bad --memory is a usage error that changes nothing', async (t) => {
  const run = await runOrder(['--memory', 'lots']);
  t.is(run.code, 2);
  t.regex(run.stderr, /--memory: not a size/);
  t.regex(run.stderr, /usage: npm run places:order/);
});
