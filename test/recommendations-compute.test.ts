import test from 'ava';
import { sql } from 'kysely';
import { addRecommendationRoutes } from '../api/catalogue/recommendations.ts';
import type { AppContext } from '../api/context.ts';
import { ApiRouter } from '../api/http/route.ts';
import type { ServiceModule } from '../api/service-module.ts';
import { CITY_RADIUS_M, computeRecommendations } from '../shared/catalogue/recommendations-compute.ts';
import {
  parseRecommendationPlace,
  recommendedSports,
  recommendedSportsIn,
} from '../shared/catalogue/recommendations-read.ts';
import { DomainError } from '../shared/errors.ts';
import { startTestApi } from './helpers/app.ts';

// The catalogue service is built elsewhere: the routes are mounted here in a service of the
// same shape (JSON:API errors under /sports), as api/catalogue/index.ts mounts them.
const catalogue: ServiceModule = {
  name: 'catalogue',
  errorFormat: 'jsonapi',
  prefixes: ['/sports'],
  routers: (app: AppContext) => {
    const router = new ApiRouter({
      prefix: '',
      errorFormat: 'jsonapi',
      registry: app.registry,
      bodyLimitBytes: app.config.bodyLimitBytes,
      tag: 'catalogue',
    });
    return [addRecommendationRoutes(router, app).router];
  },
};
const api = await startTestApi(null, { services: [catalogue] });
const db = api.database.db;

// Crafted data. Sports a < b < c < d < e < s6 < f < s7 are the lowest active ids; f is made inactive
// (never recommended). Cities: X "Testville" (LU, 5000 people) with Testville-bis (LU,
// 100 people, far away, nothing around), Y "Testbourg" (FR).
const active = (
  await db.selectFrom('sports').select('id').where('active', '=', true).orderBy('id').limit(8).execute()
).map((r) => r.id);
const [a, b, c, d, e, s6, f, s7] = active as [number, number, number, number, number, number, number, number];
await db.updateTable('sports').set({ active: false }).where('id', '=', f).execute();
const X = [6.0, 49.7] as const;
// 1° of longitude at 49.7°N is 71.99 km: 0.0695° ≈ 5 km, 0.139° ≈ 10 km; 0.9° of latitude ≈ 100 km.
const cities = [
  { id: 2_100_000_001, name: 'Testville', country: 'LU', population: 5000, at: X },
  { id: 2_100_000_002, name: 'Testville', country: 'LU', population: 100, at: [6.0, 45.0] },
  { id: 2_100_000_003, name: 'Testbourg', country: 'FR', population: 800, at: [2.0, 46.0] },
];
for (const city of cities)
  await sql`insert into geo_cities (id, name, country, population, geom)
    values (${city.id}, ${city.name}, ${city.country}, ${city.population},
            st_setsrid(st_makepoint(${city.at[0]}, ${city.at[1]}), 4326))`.execute(db);
// Declared after the last top-level await: ava starts running once a test or hook is declared.
test.after.always(api.close);

let n = 0;
async function place(at: readonly [number, number], country: string, sports: number[], status = 'approved') {
  n += 1;
  const { rows } = await sql<{ id: number }>`
    insert into places (slug, name, geom, country, status)
    values (${`rec-${n}`}, ${`P${n}`}, st_setsrid(st_makepoint(${at[0]}, ${at[1]}), 4326), ${country}, ${status})
    returning id`.execute(db);
  const id = rows[0]?.id as number;
  for (const sport of sports)
    await sql`insert into place_activities (place_id, sport_id) values (${id}, ${sport})`.execute(db);
  return id;
}

test.serial('a sport without any data gets the fallback, even before the first computation', async (t) => {
  // No places at all: every active sport has 0 places, so the fallback is by id; f is inactive.
  t.deepEqual(await recommendedSports(db, String(a), 3), [b, c, d].map(String));
  t.deepEqual(await recommendedSportsIn(db, String(e), 'LU', 6), [a, b, c, d, s6, s7].map(String));
});

test.serial('the three formulas on crafted data, hand-computed, ties by id, fallback', async (t) => {
  await place(X, 'LU', [a, b, c]); // P1, in X
  await place([6.0695, 49.7], 'LU', [a, b]); // P2, 5 km from X
  await place([6.139, 49.7], 'LU', [a, c, d]); // P3, 10 km from X
  await place([6.0, 50.6], 'LU', [b, e, d]); // P4, 100 km from X: not around it
  await place(X, 'LU', [a, e], 'pending'); // P5: not approved, ignored everywhere
  await place([2.0, 46.0], 'FR', [a, e, f]); // P6, in Y; f is inactive
  const result = await computeRecommendations(db);
  t.true(CITY_RADIUS_M < 100_000 && CITY_RADIUS_M > 10_000);

  // Co-practice of a: P1 {b, c}, P2 {b}, P3 {c, d}, P6 {e} → b 2, c 2, d 1, e 1 (ties by id).
  t.deepEqual(await recommendedSports(db, String(a), 4), [b, c, d, e].map(String));
  t.deepEqual(await recommendedSports(db, String(a), 3), [b, c, d].map(String), 'count defaults to 3 over HTTP');
  // e: P4 {b, d}, P6 {a} → a 1, b 1, d 1; count 5 fills with the fallback: places per sport
  // a 4, b 3, c 2, d 2, e 2 → c, then the sports without places by id (s6).
  t.deepEqual(await recommendedSports(db, String(e), 5), [a, b, d, c, s6].map(String));
  // A sport without data: the fallback, most places first, ties by id.
  t.deepEqual(await recommendedSports(db, String(s6), 3), [a, b, c].map(String));
  // The sport may be named by slug.
  const slug = (await db.selectFrom('sports').select('slug').where('id', '=', a).executeTakeFirstOrThrow()).slug;
  t.deepEqual(await recommendedSports(db, slug, 2), [b, c].map(String));

  // Around X (20 km): P1, P2, P3 → a 3, b 2, c 2, d 1 (P4 too far, P5 pending).
  t.deepEqual(await recommendedSportsIn(db, String(a), 'Testville,LU', 3), [b, c, d].map(String));
  t.deepEqual(await recommendedSportsIn(db, String(b), 'testville , lu', 3), [a, c, d].map(String));
  // e is not offered around X: a, b, c; count 5 → d, then the fallback (a b c d taken, e itself): s6.
  t.deepEqual(await recommendedSportsIn(db, String(e), 'TESTVILLE,LU', 5), [a, b, c, d, s6].map(String));
  // Y: P6 → a 1, e 1 (f inactive).
  t.deepEqual(await recommendedSportsIn(db, String(c), 'Testbourg,FR', 2), [a, e].map(String));

  // LU (2586 km²): P1-P4 → a 3, b 3, c 2, d 2, e 1 places, same order per km².
  t.deepEqual(await recommendedSportsIn(db, String(c), 'LU', 3), [a, b, d].map(String));
  t.deepEqual(await recommendedSportsIn(db, String(a), 'lu', 4), [b, c, d, e].map(String));
  const lu = await db
    .selectFrom('country_sport_density')
    .selectAll()
    .where('country', '=', 'LU')
    .orderBy('sport_id')
    .execute();
  t.deepEqual(
    lu.map((r) => [r.sport_id, r.places, r.density]),
    [
      [a, 3, 3 / 2586],
      [b, 3, 3 / 2586],
      [c, 2, 2 / 2586],
      [d, 2, 2 / 2586],
      [e, 1, 1 / 2586],
    ],
  );
  // FR: P6 → e; then the fallback excluding a and e: b 3, c 2, d 2.
  t.deepEqual(await recommendedSportsIn(db, String(a), 'FR', 3), [e, b, c].map(String));
  // A country without places (DE), or without an area in the dataset (SJ): the fallback.
  t.deepEqual(await recommendedSportsIn(db, String(a), 'DE', 3), [b, c, d].map(String));
  t.deepEqual(await recommendedSportsIn(db, String(a), 'SJ', 3), [b, c, d].map(String));
  // Ordered pairs sharing an approved place: ab ac ba bc ca cb (P1, P2), ad cd da dc (P3), bd be db de
  // eb ed (P4), ae ea fa fe (P6; pairs towards the inactive f are left out) = 20.
  t.deepEqual(result.counts, { popularity: 5, copractice: 20, cities: result.counts.cities, countries: 7 });
});

test.serial('the computation is idempotent and replaces the previous result', async (t) => {
  const snapshot = async () => ({
    copractice: await db.selectFrom('sport_copractice').selectAll().orderBy('sport_id').orderBy('other_id').execute(),
    cities: await db.selectFrom('city_sport_popularity').selectAll().orderBy('city_id').orderBy('sport_id').execute(),
    countries: await db
      .selectFrom('country_sport_density')
      .selectAll()
      .orderBy('country')
      .orderBy('sport_id')
      .execute(),
    popularity: await db.selectFrom('sport_popularity').selectAll().orderBy('sport_id').execute(),
  });
  const before = await snapshot();
  // Two at once (the scheduler and the CLI): they queue on the lock, neither fails.
  await Promise.all([computeRecommendations(db), computeRecommendations(db)]);
  t.deepEqual(await snapshot(), before);
  // The FR place is rejected: its rows disappear at the next computation.
  await db
    .updateTable('places')
    .set({ status: 'rejected' })
    .where('country', '=', 'FR')
    .where('slug', 'like', 'rec-%')
    .execute();
  const steps: string[] = [];
  await computeRecommendations(db, (step) => steps.push(step));
  t.deepEqual(steps, ['popularity', 'copractice', 'cities', 'countries']);
  t.deepEqual(await recommendedSportsIn(db, String(a), 'FR', 3), [b, c, d].map(String));
  // a: b 2, c 2, d 1, then the fallback: e has one place left (P4).
  t.deepEqual(await recommendedSports(db, String(a), 4), [b, c, d, e].map(String));
  const run = await db.selectFrom('recommendations_runs').selectAll().executeTakeFirstOrThrow();
  t.is(run.counts.countries, 5);
});

test('location values: a country code, or a city, a comma and a country code', (t) => {
  t.deepEqual(parseRecommendationPlace('fr'), { kind: 'country', country: 'FR' });
  t.deepEqual(parseRecommendationPlace('Saint-Étienne,FR'), { kind: 'city', name: 'Saint-Étienne', country: 'FR' });
  t.deepEqual(parseRecommendationPlace('New York, us'), { kind: 'city', name: 'New York', country: 'US' });
  for (const bad of ['France', 'Lille', 'Lille,', ',FR', 'Lille,FRA', 'a,b,FR', 'F'])
    t.throws(() => parseRecommendationPlace(bad), { instanceOf: DomainError, message: /invalid values/ }, bad);
});

test('unknown sport, country or city: 404 (use cases)', async (t) => {
  for (const call of [
    () => recommendedSports(db, '999999', 3),
    () => recommendedSports(db, 'no-such-sport', 3),
    () => recommendedSportsIn(db, '999999', 'FR', 3),
    () => recommendedSportsIn(db, String(a), 'ZZ', 3),
    () => recommendedSportsIn(db, String(a), 'Nowhere-sur-Mer,FR', 3),
  ])
    await t.throwsAsync(call, { instanceOf: DomainError, message: /Unknown (sport|country|city)/ });
});

test('HTTP: plain JSON arrays, count bounds, JSON:API errors, OpenAPI', async (t) => {
  const ok = await api.fetch(`/sports/${a}/recommendations`);
  t.is(ok.status, 200);
  t.regex(ok.headers.get('content-type') ?? '', /application\/json/);
  const list = (await ok.json()) as unknown[];
  t.is(list.length, 3, 'count defaults to 3');
  t.true(list.every((id) => typeof id === 'string'));
  t.is(((await (await api.fetch(`/sports/${a}/recommendations?count=50`)).json()) as unknown[]).length, 50);
  t.is((await api.fetch(`/sports/${a}/recommendations/Testville,LU?count=1`)).status, 200);
  t.is((await api.fetch(`/sports/${a}/recommendations/Testville%2CLU`)).status, 200);
  t.is((await api.fetch(`/sports/${a}/recommendations/LU`)).status, 200);

  for (const [path, status, pointer] of [
    [`/sports/${a}/recommendations?count=0`, 422, 'count'],
    [`/sports/${a}/recommendations?count=51`, 422, 'count'],
    [`/sports/${a}/recommendations?count=two`, 422, 'count'],
    [`/sports/${a}/recommendations/Lille`, 422, 'location'],
    ['/sports/999999/recommendations', 404, undefined],
    ['/sports/999999/recommendations/FR', 404, undefined],
    [`/sports/${a}/recommendations/ZZ`, 404, undefined],
    [`/sports/${a}/recommendations/Nowhere,FR`, 404, undefined],
  ] as const) {
    const res = await api.fetch(path);
    t.is(res.status, status, path);
    t.regex(res.headers.get('content-type') ?? '', /application\/vnd\.api\+json/, path);
    const body = (await res.json()) as { errors: { status: string; source?: unknown }[] };
    t.is(body.errors[0]?.status, String(status), path);
    if (pointer) t.regex(JSON.stringify(body.errors[0]), new RegExp(pointer), path);
  }

  const doc = (await (await api.fetch('/openapi.json')).json()) as { paths: Record<string, { get?: unknown }> };
  t.truthy(doc.paths['/sports/{id}/recommendations']?.get);
  t.truthy(doc.paths['/sports/{id}/recommendations/{location}']?.get);
});
