import type { ChildProcess } from 'node:child_process';
import { cpus, loadavg } from 'node:os';
import pg from 'pg';
import { preferredLanguages } from '../shared/catalogue/locale.ts';
import { type SportStatement, sportListStatement } from '../shared/catalogue/sports.ts';
import { ensureDatabase } from '../shared/db/create-database.ts';
import { createDb } from '../shared/db/database.ts';
import { migrateToLatest } from '../shared/db/migrate.ts';
import { seedReferentials } from '../shared/db/referentials.ts';
import {
  type BenchRequest,
  benchDatabaseUrl,
  combineRounds,
  envNumber,
  runAutocannon,
  startApiProcess,
  stopApiProcess,
} from './harness.ts';
import { closedLoop, cpuText, fmt, type LoadStats, postgresCpuMs, processCpuMs, withCpu } from './stats.ts';

/**
 * bench/catalogue-search: `GET /sports?q=` (name search in the served language, trigram index)
 * through the API (autocannon) and the same SQL straight through pg, side by side, over the
 * seeded referential (94 sports in up to 11 languages). Goals as for places (2-core machine):
 * API ≥ 60 % of raw SQL throughput, API p99 ≤ 50 ms at concurrency 16.
 */

const SETTINGS = {
  durationS: envNumber('BENCH_DURATION_S', 15),
  warmupS: envNumber('BENCH_WARMUP_S', 3),
  connections: envNumber('BENCH_CONNECTIONS', 16),
  rounds: Math.max(1, Math.round(envNumber('BENCH_ROUNDS', 3))),
};
const GOAL_RATIO = 0.6;
const GOAL_P99_MS = 50;

/** Searches as users type them: partial names, any case, with or without accents, in three languages. */
const SEARCHES: { q: string; acceptLanguage: string }[] = [
  ...['ski', 'Run', 'tennis', 'foot', 'BALL', 'swim', 'bike', 'climb', 'golf', 'surf', 'trail', 'box'].map((q) => ({
    q,
    acceptLanguage: 'en-US,en;q=0.9',
  })),
  ...['course', 'velo', 'natation', 'ESCALADE', 'equitation', 'randonnee', 'plongee', 'voile'].map((q) => ({
    q,
    acceptLanguage: 'fr-CA,fr;q=0.9,en;q=0.5',
  })),
  ...['ball', 'laufen', 'schwimm'].map((q) => ({ q, acceptLanguage: 'de, en;q=0.5' })),
];

/** One side's measures: load figures and CPU per operation of each process. */
type Measured = LoadStats & { cpuPerOp: Record<string, number> };

/** The same searches as the API receives them. */
const REQUESTS: BenchRequest[] = SEARCHES.map((s) => ({
  path: `/sports?q=${encodeURIComponent(s.q)}`,
  headers: { 'accept-language': s.acceptLanguage },
}));

export async function run(): Promise<{ failed: boolean }> {
  const databaseUrl = benchDatabaseUrl('BENCH_CATALOGUE_DATABASE_URL', 'sports_bench_catalogue');
  const log = (s: string) => console.log(s);
  log(`catalogue-search benchmark on ${databaseUrl.replace(/\/\/[^@]*@/, '//')}`);
  log(
    `settings: ${SEARCHES.length} searches (en, fr, de), duration=${SETTINGS.durationS}s per side in ${SETTINGS.rounds} alternating rounds, ` +
      `warmup=${SETTINGS.warmupS}s, concurrency=${SETTINGS.connections}; ${cpus().length} CPUs, load average ${loadavg()[0]?.toFixed(1)}`,
  );
  await ensureDatabase(databaseUrl);
  const { db } = createDb(databaseUrl, 2);
  const pool = new pg.Pool({ connectionString: databaseUrl, max: SETTINGS.connections });
  let api: { url: string; child: ChildProcess } | undefined;
  let failed = false;
  try {
    await migrateToLatest(db);
    await seedReferentials(db);
    const size = (
      await pool.query<{ sports: number; names: number }>(
        'select (select count(*)::int from sports) as sports, (select count(*)::int from sport_search_names) as names',
      )
    ).rows[0];
    log(`data size: ${size?.sports} sports, ${size?.names} localized names`);
    // The very statements the API runs: written by the same function, same text, parameters and
    // prepared-statement name (pg prepares each once per connection, as in the API's pool).
    const statements = SEARCHES.map((s) =>
      sportListStatement({ q: s.q, languages: preferredLanguages(s.acceptLanguage), page: 1, size: 100 }),
    );
    const sqlTask = (i: number) => {
      const q = statements[i % statements.length] as SportStatement;
      return pool.query({ ...(q.name ? { name: q.name } : {}), text: q.text, values: [...q.values] });
    };
    api = await startApiProcess(databaseUrl, 'catalogue', SETTINGS.connections);
    for (const [i, s] of SEARCHES.entries()) {
      const res = await fetch(`${api.url}/sports?q=${encodeURIComponent(s.q)}`, {
        headers: { 'accept-language': s.acceptLanguage },
      });
      const body = (await res.json()) as { data?: unknown[] };
      const rows = (await sqlTask(i)).rowCount;
      if (!res.ok || body.data?.length !== rows) {
        log(
          `probe: FAIL: q=${s.q} (${s.acceptLanguage}): API ${res.status} ${body.data?.length} items, SQL ${rows} rows`,
        );
        failed = true;
      }
    }
    log(`probe: API and SQL agree on the ${SEARCHES.length} searches: ${failed ? 'NO' : 'yes'}`);
    const first = statements[0];
    if (first) {
      const plan = (await pool.query<{ 'QUERY PLAN': string }>(`explain analyze ${first.text}`, [...first.values])).rows
        .map((r) => r['QUERY PLAN'])
        .join('\n');
      log(`EXPLAIN ANALYZE, q=${SEARCHES[0]?.q}:\n${plan.replace(/^/gm, '  | ')}`);
    }
    if (SETTINGS.warmupS > 0) {
      await runAutocannon(api.url, REQUESTS, SETTINGS.warmupS, SETTINGS.connections);
      await closedLoop(SETTINGS.connections, SETTINGS.warmupS, sqlTask);
    }
    const apiPid = api.child.pid ?? 0;
    // Only the backends of the benchmark's database: other work on this machine (test suites) is left out.
    const database = decodeURIComponent(new URL(databaseUrl).pathname.slice(1));
    const parties = {
      postgres: () => postgresCpuMs(database),
      'api process': () => processCpuMs(apiPid),
      'bench process': () => processCpuMs(process.pid),
    };
    const apiUrl = api.url;
    const sliceS = Math.max(1, SETTINGS.durationS / SETTINGS.rounds);
    const apiRounds: Measured[] = [];
    const sqlRounds: Measured[] = [];
    for (let r = 0; r < SETTINGS.rounds; r++) {
      apiRounds.push(await withCpu(parties, () => runAutocannon(apiUrl, REQUESTS, sliceS, SETTINGS.connections)));
      sqlRounds.push(await withCpu(parties, () => closedLoop(SETTINGS.connections, sliceS, sqlTask)));
    }
    const viaApi = combineRounds(apiRounds);
    const viaSql = combineRounds(sqlRounds);
    const ratio = viaApi.rps / viaSql.rps;
    const ratioOk = ratio >= GOAL_RATIO;
    const p99Ok = viaApi.p99 <= GOAL_P99_MS;
    const errorsOk = viaApi.errors === 0 && viaSql.errors === 0;
    if (!(ratioOk && p99Ok && errorsOk)) failed = true;
    log(
      `SQL: ${fmt(viaSql.rps)} q/s    p50 ${fmt(viaSql.p50)} ms  p99 ${fmt(viaSql.p99)} ms  (${viaSql.count} ok, ${viaSql.errors} errors)`,
    );
    log(`     CPU ms per query: ${cpuText(viaSql.cpuPerOp)}`);
    log(
      `API: ${fmt(viaApi.rps)} req/s  p50 ${fmt(viaApi.p50)} ms  p99 ${fmt(viaApi.p99)} ms  (${viaApi.count} ok, ${viaApi.errors} errors)`,
    );
    log(`     CPU ms per request: ${cpuText(viaApi.cpuPerOp)}`);
    log(
      `API/SQL throughput ratio ${fmt(ratio * 100, 0)} % (goal ≥ ${GOAL_RATIO * 100} %): ${ratioOk ? 'PASS' : 'FAIL'}; ` +
        `API p99 ${fmt(viaApi.p99)} ms (goal ≤ ${GOAL_P99_MS} ms): ${p99Ok ? 'PASS' : 'FAIL'}${errorsOk ? '' : '; ERRORS'}` +
        `; load average now ${loadavg()[0]?.toFixed(1)}`,
    );
  } finally {
    if (api) await stopApiProcess(api.child);
    await pool.end();
    await db.destroy();
  }
  return { failed };
}
