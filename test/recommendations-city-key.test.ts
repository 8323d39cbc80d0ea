import test from 'ava';
import { sql } from 'kysely';
import { catalogueService } from '../api/catalogue/index.ts';
import { computeRecommendations } from '../shared/catalogue/recommendations-compute.ts';
import { parseRecommendationPlace, recommendedSportsIn } from '../shared/catalogue/recommendations-read.ts';
import { DomainError } from '../shared/errors.ts';
import { startTestApi } from './helpers/app.ts';

// The original `{city}_{cc}` location form (`montreal_ca`) beside `Lille,FR`
// (docs/recommendations.md). Crafted cities, one approved place around each, answers by hand.
const api = await startTestApi(null, { services: [catalogueService] });
const db = api.database.db;
const [a, b, c, d] = (
  await db.selectFrom('sports').select('id').where('active', '=', true).orderBy('id').limit(4).execute()
).map((r) => r.id) as [number, number, number, number];
// Two cities of CA share the key port_test: Pört Tést (500 people) is meant by it, Port-Test
// (10 people) only by its exact name in the comma form.
const cities = [
  { id: 2_100_000_101, name: 'Pört Tést', country: 'CA', population: 500, at: [-70, 47], sports: [a, b] },
  { id: 2_100_000_102, name: 'Port-Test', country: 'CA', population: 10, at: [-75, 45], sports: [c] },
  { id: 2_100_000_103, name: "L'Île-des-Tests", country: 'FR', population: 300, at: [3, 45], sports: [d] },
  { id: 2_100_000_104, name: 'New Testham', country: 'US', population: 1000, at: [-80, 40], sports: [b] },
];
for (const [i, city] of cities.entries()) {
  const at = sql`st_setsrid(st_makepoint(${city.at[0]}, ${city.at[1]}), 4326)`;
  await sql`insert into geo_cities (id, name, country, population, geom)
    values (${city.id}, ${city.name}, ${city.country}, ${city.population}, ${at})`.execute(db);
  const { rows } = await sql<{ id: number }>`
    insert into places (slug, name, geom, country, status)
    values (${`key-${i}`}, ${`K${i}`}, ${at}, ${city.country}, 'approved') returning id`.execute(db);
  for (const sport of city.sports)
    await sql`insert into place_activities (place_id, sport_id) values (${rows[0]?.id}, ${sport})`.execute(db);
}
await computeRecommendations(db);
// Declared after the last top-level await: ava starts running once a test or hook is declared.
test.after.always(api.close);

test('the {city}_{cc} form is read beside the comma form', (t) => {
  t.deepEqual(parseRecommendationPlace('montreal_ca'), { kind: 'city-key', key: 'montreal', country: 'CA' });
  t.deepEqual(parseRecommendationPlace('new_york_US'), { kind: 'city-key', key: 'new_york', country: 'US' });
  t.deepEqual(parseRecommendationPlace('saint-etienne_fr'), { kind: 'city-key', key: 'saint-etienne', country: 'FR' });
  t.deepEqual(parseRecommendationPlace('Lille,FR'), { kind: 'city', name: 'Lille', country: 'FR' });
  for (const bad of ['_fr', '--_fr', 'montreal_', 'montreal_can', 'montreal', 'montreal_c', 'a,b_fr'])
    t.throws(() => parseRecommendationPlace(bad), { instanceOf: DomainError, message: /invalid values/ }, bad);
});

test('a key names the city whose folded name it is, the most populous of homonyms', async (t) => {
  // Pört Tést: a, b. Any case, accents or not, hyphens or underscores.
  for (const location of ['port_test_ca', 'PORT-TEST_CA', 'pört_tést_ca', 'Pört Tést,CA'])
    t.deepEqual(await recommendedSportsIn(db, String(d), location, 2), [a, b].map(String), location);
  // The comma form keeps its exact (case-insensitive) name: Port-Test, c.
  t.deepEqual(await recommendedSportsIn(db, String(d), 'Port-Test,CA', 1), [c].map(String));
  // Apostrophes and accents: L'Île-des-Tests, d.
  for (const location of ['l_ile_des_tests_fr', 'l-ile-des-tests_FR', "l'ile-des-tests_fr"])
    t.deepEqual(await recommendedSportsIn(db, String(a), location, 1), [d].map(String), location);
  t.deepEqual(await recommendedSportsIn(db, String(a), 'new_testham_us', 1), [b].map(String));
  for (const location of ['nowhere_fr', 'new_testham_ca', 'new_testham_zz', 'new_test_ham_us'])
    await t.throwsAsync(
      recommendedSportsIn(db, String(a), location, 1),
      { instanceOf: DomainError, message: /Unknown (city|country)/ },
      location,
    );
});

test('HTTP: the key form answers like the comma form; JSON:API errors; OpenAPI says so', async (t) => {
  const body = async (path: string) => {
    const res = await api.fetch(path);
    t.is(res.status, 200, path);
    return res.json();
  };
  t.deepEqual(await body(`/sports/${d}/recommendations/port_test_ca?count=2`), [a, b].map(String));
  t.deepEqual(await body(`/sports/${d}/recommendations/P%C3%B6rt%20T%C3%A9st%2CCA?count=2`), [a, b].map(String));
  for (const [path, status] of [
    [`/sports/${a}/recommendations/nowhere_fr`, 404],
    [`/sports/${a}/recommendations/montreal_zz`, 404],
    [`/sports/${a}/recommendations/_fr`, 422],
    [`/sports/${a}/recommendations/montreal_can`, 422],
  ] as const) {
    const res = await api.fetch(path);
    t.is(res.status, status, path);
    t.regex(res.headers.get('content-type') ?? '', /application\/vnd\.api\+json/, path);
    const errors = ((await res.json()) as { errors: { status: string }[] }).errors;
    t.is(errors[0]?.status, String(status), path);
    if (status === 422) t.regex(JSON.stringify(errors[0]), /location/, path);
  }
  const doc = (await (await api.fetch('/openapi.json')).json()) as {
    paths: Record<string, { get?: { description?: string; parameters?: { name: string; description?: string }[] } }>;
  };
  const op = doc.paths['/sports/{id}/recommendations/{location}']?.get;
  t.regex(op?.description ?? '', /montreal_ca/);
  t.regex(op?.parameters?.find((p) => p.name === 'location')?.description ?? '', /montreal_ca/);
});
