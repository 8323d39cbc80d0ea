import type { ChildProcess } from 'node:child_process';
import { cpus, loadavg } from 'node:os';
import pg from 'pg';
import { ensureDatabase } from '../shared/db/create-database.ts';
import { createDb } from '../shared/db/database.ts';
import { migrateToLatest } from '../shared/db/migrate.ts';
import { seedReferentials } from '../shared/db/referentials.ts';
import { parsePartnerSearch } from '../shared/partners/search-query.ts';
import { compilePartnerSearch, type PartnerSearchRow } from '../shared/partners/search-sql.ts';
import { type BareRoute, startBareServer } from './bare-server.ts';
import {
  benchDatabaseUrl,
  combineRounds,
  envNumber,
  GOAL_BARE_RATIO,
  loadSettings,
  runAutocannon,
  startApiProcess,
  stopApiProcess,
} from './harness.ts';
import { type BenchCity, loadCities, populationSampler, prng } from './places-data.ts';
import { closedLoop, fmt, type LoadStats } from './stats.ts';

/**
 * bench/partners-search: 100,000 partners spread like the places (population-weighted cities,
 * Gaussian offset growing with the city); `nearby[]` searches (page 1, nearest 25) through the
 * API (autocannon), through the bare server (bench/bare-server.ts: node:http + pg, same statement,
 * same JSON array) and as the same SQL straight through pg, alternating in rounds.
 * Goals (2-core machine, concurrency 16): API ≥ 75 % of the bare server's throughput and ≥ 60 %
 * of raw SQL throughput, API p99 ≤ 50 ms.
 */

const SETTINGS = {
  partners: envNumber('BENCH_PARTNERS', 100_000),
  ...loadSettings(),
};
const GOAL_RATIO = 0.6;
const GOAL_P99_MS = 50;
/** Bump when the generator changes: the data is reloaded. */
const GENERATOR = 'partners-v1';

/** A position around a city: Gaussian offset of 1 to 12 km, like bench/places-data.ts. */
function around(city: BenchCity, random: () => number): [number, number] {
  const sigma = Math.min(12_000, 1_000 + 4_000 * Math.sqrt(city.population / 1_000_000));
  const r = sigma * Math.sqrt(-2 * Math.log(1 - random()));
  const angle = random() * 2 * Math.PI;
  const lat = Math.max(-89.9, Math.min(89.9, city.lat + (r * Math.sin(angle)) / 111_320));
  let lng = city.lng + (r * Math.cos(angle)) / (111_320 * Math.max(0.05, Math.cos((city.lat * Math.PI) / 180)));
  if (lng > 180) lng -= 360;
  if (lng < -180) lng += 360;
  return [lat, lng];
}

async function load(pool: pg.Pool, count: number, log: (s: string) => void): Promise<void> {
  const started = Date.now();
  const cities = loadCities();
  const pick = populationSampler(cities, prng(7));
  const random = prng(11);
  const sportIds = (await pool.query<{ id: number }>('select id from sports order by id')).rows.map((r) => r.id);
  await pool.query('truncate partners restart identity cascade');
  const owner =
    (
      await pool.query<{ number: string }>(
        "insert into accounts (email, roles) values ('bench-partners@example.org', '{staff}') on conflict do nothing returning number",
      )
    ).rows[0]?.number ??
    (await pool.query<{ number: string }>('select min(number) as number from accounts')).rows[0]?.number;
  for (let from = 0; from < count; from += 10_000) {
    const n = Math.min(10_000, count - from);
    const lats: number[] = [];
    const lngs: number[] = [];
    const slugs: string[] = [];
    const cityNames: string[] = [];
    const countries: string[] = [];
    const flags: boolean[] = [];
    for (let i = 0; i < n; i++) {
      const city = pick();
      const [lat, lng] = around(city, random);
      lats.push(Number(lat.toFixed(6)));
      lngs.push(Number(lng.toFixed(6)));
      slugs.push(`bench-partner-${from + i + 1}`);
      cityNames.push(city.name);
      countries.push(city.country);
      flags.push(random() < 0.1);
    }
    await pool.query(
      `insert into partners (slug, title, source, link, featured, partner, city, country, lat, lng, user_id)
       select s, 'Partner ' || s, 'bench', 'https://example.org/' || s, f, f, c, co, la, ln, $7
       from unnest($1::text[], $2::text[], $3::text[], $4::float8[], $5::float8[], $6::boolean[]) as t(s, c, co, la, ln, f)`,
      [slugs, cityNames, countries, lats, lngs, flags, owner],
    );
  }
  // 1 to 3 sports per partner.
  await pool.query(
    `insert into partner_sports (partner_id, sport_id)
     select distinct p.id, ($1::int[])[1 + (((hashint8(p.id * 7 + k)::bigint % array_length($1::int[], 1)) + array_length($1::int[], 1)) % array_length($1::int[], 1))::int]
     from partners p, generate_series(1, 1 + (p.id % 3)::int) as k`,
    [sportIds],
  );
  await pool.query('vacuum analyze partners');
  await pool.query('vacuum analyze partner_sports');
  log(`data: ${count} partners loaded in ${((Date.now() - started) / 1000).toFixed(0)} s`);
}

/** The bare server's route (bench/bare-server.ts): the API's statement, its bare JSON array. */
export function bareRoute(): BareRoute {
  return (url) => {
    if (url.pathname !== '/api/v1/partners') return undefined;
    const { params } = parsePartnerSearch(Object.fromEntries(url.searchParams));
    if (!params) return undefined;
    const q = compilePartnerSearch(params);
    return {
      statement: { name: q.name, text: q.sql, values: q.parameters },
      body: (rows: PartnerSearchRow[]) => `[${rows[0]?.partners ?? ''}]`,
    };
  };
}

export async function run(): Promise<{ failed: boolean }> {
  const url = benchDatabaseUrl('BENCH_PARTNERS_DATABASE_URL', 'sports_bench_partners');
  const log = (s: string) => console.log(s);
  log(`partners-search benchmark on ${url.replace(/\/\/[^@]*@/, '//')}`);
  log(
    `settings: partners=${SETTINGS.partners} duration=${SETTINGS.durationS}s per side in ${SETTINGS.rounds} rounds, ` +
      `warmup=${SETTINGS.warmupS}s, concurrency=${SETTINGS.connections}; ${cpus().length} CPUs, load average ${loadavg()[0]?.toFixed(1)}`,
  );
  await ensureDatabase(url);
  const { db } = createDb(url, 2);
  // Idle clients are kept while the other sides run: a client closed between rounds would take its
  // backend's CPU out of the count and make the SQL side connect again.
  const pool = new pg.Pool({ connectionString: url, max: SETTINGS.connections, idleTimeoutMillis: 0 });
  let api: { url: string; child: ChildProcess } | undefined;
  let bare: { url: string; child: ChildProcess } | undefined;
  let failed = false;
  try {
    await migrateToLatest(db);
    await seedReferentials(db);
    await pool.query('create table if not exists bench_meta (key text primary key, value text not null)');
    const mark = `${GENERATOR}:${SETTINGS.partners}`;
    const loaded = (await pool.query<{ value: string }>("select value from bench_meta where key = 'partners'")).rows[0];
    const existing = (await pool.query<{ n: number }>('select count(*)::int as n from partners')).rows[0]?.n;
    if (loaded?.value === mark && existing === SETTINGS.partners) log(`data: reusing the ${existing} partners loaded`);
    else {
      await pool.query("delete from bench_meta where key = 'partners'");
      await load(pool, SETTINGS.partners, log);
      await pool.query("insert into bench_meta values ('partners', $1)", [mark]);
    }
    const pick = populationSampler(loadCities(), prng(42));
    const queries = Array.from({ length: 500 }, () => {
      const c = pick();
      return `nearby[]=${c.lat.toFixed(5)},${c.lng.toFixed(5)}`;
    });
    const paths = queries.map((q) => `/api/v1/partners?${q}`);
    const compiled = queries.map((q) => {
      const parsed = parsePartnerSearch({ 'nearby[]': q.slice('nearby[]='.length) });
      if (!parsed.params) throw new Error(`invalid ${q}`);
      return compilePartnerSearch(parsed.params);
    });
    const sqlTask = (i: number) => {
      const q = compiled[i % compiled.length] as (typeof compiled)[number];
      return pool.query({ name: q.name, text: q.sql, values: [...q.parameters] });
    };
    api = await startApiProcess(url, 'partners', SETTINGS.connections);
    bare = await startBareServer(import.meta.url, 'bareRoute', url, SETTINGS.connections);
    for (const [side, base] of [
      ['API', api.url],
      ['bare server', bare.url],
    ] as const) {
      const probe = await fetch(`${base}${paths[0]}`);
      const text = await probe.text();
      const body = probe.ok ? (JSON.parse(text) as unknown) : undefined;
      log(
        `probe: ${side}: GET ${paths[0]} → ${probe.status}, ${Array.isArray(body) ? body.length : 'not an array'} partners, ${text.length} bytes`,
      );
      if (!probe.ok) throw new Error(`the ${side} answered ${probe.status}`);
    }
    const apiUrl = api.url;
    const bareUrl = bare.url;
    if (SETTINGS.warmupS > 0) {
      await runAutocannon(apiUrl, paths, SETTINGS.warmupS, SETTINGS.connections);
      await runAutocannon(bareUrl, paths, SETTINGS.warmupS, SETTINGS.connections);
      await closedLoop(SETTINGS.connections, SETTINGS.warmupS, sqlTask);
    }
    const slice = Math.max(1, SETTINGS.durationS / SETTINGS.rounds);
    const apiRounds: LoadStats[] = [];
    const bareRounds: LoadStats[] = [];
    const sqlRounds: LoadStats[] = [];
    for (let r = 0; r < SETTINGS.rounds; r++) {
      apiRounds.push(await runAutocannon(apiUrl, paths, slice, SETTINGS.connections));
      bareRounds.push(await runAutocannon(bareUrl, paths, slice, SETTINGS.connections));
      sqlRounds.push(await closedLoop(SETTINGS.connections, slice, sqlTask));
    }
    const a = combineRounds(apiRounds);
    const b = combineRounds(bareRounds);
    const s = combineRounds(sqlRounds);
    const first = compiled[0] as (typeof compiled)[number];
    const plan = (
      await pool.query<{ 'QUERY PLAN': string }>(`explain (analyze, buffers) ${first.sql}`, [...first.parameters])
    ).rows
      .map((r) => r['QUERY PLAN'])
      .join('\n');
    const planOk = /Index Scan using partners_geog_idx/.test(plan) && !/Seq Scan on partners\b/.test(plan);
    log(`EXPLAIN (ANALYZE, BUFFERS), ${queries[0]}:\n${plan.replace(/^/gm, '  | ')}`);
    const ratio = a.rps / s.rps;
    const ratioOk = ratio >= GOAL_RATIO;
    const bareRatio = a.rps / b.rps;
    const bareOk = bareRatio >= GOAL_BARE_RATIO;
    const p99Ok = a.p99 <= GOAL_P99_MS;
    const errorsOk = a.errors === 0 && s.errors === 0 && b.errors === 0;
    failed = !(ratioOk && bareOk && p99Ok && planOk && errorsOk);
    log(
      `\n=== summary (nearby[] page 1, concurrency ${SETTINGS.connections}, ${SETTINGS.partners} partners; load average now ${loadavg()[0]?.toFixed(1)})`,
    );
    log('shape      API r/s API p50 API p99 bare r/s bare p99  SQL q/s SQL p99  API/bare API/SQL  goals');
    log(
      `${'nearby'.padEnd(9)} ${fmt(a.rps).padStart(8)} ${fmt(a.p50).padStart(7)} ${fmt(a.p99).padStart(7)}` +
        ` ${fmt(b.rps).padStart(8)} ${fmt(b.p99).padStart(8)} ${fmt(s.rps).padStart(8)} ${fmt(s.p99).padStart(7)}` +
        ` ${`${fmt(bareRatio * 100, 0)} %`.padStart(8)} ${`${fmt(ratio * 100, 0)} %`.padStart(7)}` +
        `  bare ${bareOk ? 'PASS' : 'FAIL'} (≥ ${GOAL_BARE_RATIO * 100} %), SQL ${ratioOk ? 'PASS' : 'FAIL'} (≥ ${GOAL_RATIO * 100} %), p99 ${p99Ok ? 'PASS' : 'FAIL'} (≤ ${GOAL_P99_MS} ms), plan ${planOk ? 'PASS' : 'FAIL'}${errorsOk ? '' : `, ERRORS api ${a.errors} bare ${b.errors} sql ${s.errors}`}`,
    );
  } finally {
    if (api) await stopApiProcess(api.child);
    if (bare) await stopApiProcess(bare.child);
    await pool.end();
    await db.destroy();
  }
  return { failed };
}
