import type { ChildProcess } from 'node:child_process';
import { cpus, loadavg } from 'node:os';
import pg from 'pg';
import { preferredLanguages } from '../shared/catalogue/locale.ts';
import { type CatalogueSport, type SportStatement, sportListStatement } from '../shared/catalogue/sports.ts';
import { ensureDatabase } from '../shared/db/create-database.ts';
import { createDb } from '../shared/db/database.ts';
import { migrateToLatest } from '../shared/db/migrate.ts';
import { seedReferentials } from '../shared/db/referentials.ts';
import { type BareRoute, linkWith, startBareServer } from './bare-server.ts';
import {
  type BenchRequest,
  benchDatabaseUrl,
  combineRounds,
  GOAL_BARE_RATIO,
  loadSettings,
  runAutocannon,
  startApiProcess,
  stopApiProcess,
} from './harness.ts';
import { closedLoop, cpuText, fmt, type LoadStats, postgresCpuMs, processCpuMs, withCpu } from './stats.ts';

/**
 * bench/catalogue-search: `GET /sports?q=` (name search in the served language, trigram index)
 * through the API (autocannon), through the bare server (bench/bare-server.ts: node:http + pg,
 * same statement, same JSON:API document) and as the same SQL straight through pg, alternating in
 * rounds, over the seeded referential. Goals (2-core machine, concurrency 16): API ≥ 75 % of the
 * bare server's throughput, API p99 ≤ 50 ms. API/SQL is printed without a goal: on a statement
 * this short it measures Node's HTTP stack more than the API.
 */

const SETTINGS = {
  ...loadSettings(),
};
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

/** A sport as the API's JSON:API view writes it (api/catalogue/index.ts, `sportView`). */
function sportObject(base: string, s: CatalogueSport) {
  return {
    type: 'sport',
    id: String(s.id),
    attributes: {
      name: s.name,
      description: s.description,
      parent_id: s.parent_id,
      slug: s.slug,
      locale: s.locale,
      vendor_id: s.vendor_id,
      tags: s.tags,
    },
    relationships: {
      children: { data: s.children.length ? s.children.map((c) => ({ type: 'sport', id: String(c) })) : null },
      parent: { data: s.parent_id === null ? null : { type: 'sport', id: String(s.parent_id) } },
    },
    links: { self: `${base}/sports/${s.id}` },
  };
}

/** The bare server's route (bench/bare-server.ts): the API's statement, its JSON:API document. */
export function bareRoute(): BareRoute {
  return (url, headers) => {
    if (url.pathname !== '/sports') return undefined;
    const size = 100;
    const statement = sportListStatement({
      q: url.searchParams.get('q') ?? undefined,
      languages: preferredLanguages(headers['accept-language']),
      page: 1,
      size,
    });
    return {
      statement,
      contentType: 'application/vnd.api+json',
      body: (rows: (CatalogueSport & { total: number })[]) => {
        const total = Number(rows[0]?.total ?? 0);
        const last = Math.max(1, Math.ceil(total / size));
        return JSON.stringify({
          jsonapi: { version: '1.1' },
          links: {
            self: url.href,
            first: linkWith(url, { 'page[number]': '1' }),
            prev: null,
            next: last > 1 ? linkWith(url, { 'page[number]': '2' }) : null,
            last: linkWith(url, { 'page[number]': String(last) }),
          },
          meta: { total },
          data: rows.map((r) => sportObject(url.origin, r)),
        });
      },
    };
  };
}

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
  // Idle clients are kept while the other sides run: a client closed between rounds would take its
  // backend's CPU out of the count and make the SQL side connect again.
  const pool = new pg.Pool({ connectionString: databaseUrl, max: SETTINGS.connections, idleTimeoutMillis: 0 });
  let api: { url: string; child: ChildProcess } | undefined;
  let bare: { url: string; child: ChildProcess } | undefined;
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
    bare = await startBareServer(import.meta.url, 'bareRoute', databaseUrl, SETTINGS.connections);
    const bytesOf = { api: 0, bare: 0 };
    for (const [i, s] of SEARCHES.entries()) {
      const rows = (await sqlTask(i)).rowCount;
      for (const [side, base] of [
        ['api', api.url],
        ['bare', bare.url],
      ] as const) {
        const res = await fetch(`${base}/sports?q=${encodeURIComponent(s.q)}`, {
          headers: { 'accept-language': s.acceptLanguage },
        });
        const text = await res.text();
        bytesOf[side] += text.length;
        const items = res.ok ? (JSON.parse(text) as { data?: unknown[] }).data?.length : undefined;
        if (items !== rows) {
          log(`probe: FAIL: q=${s.q} (${s.acceptLanguage}): ${side} ${res.status} ${items} items, SQL ${rows} rows`);
          failed = true;
        }
      }
    }
    log(
      `probe: API, bare server and SQL agree on the ${SEARCHES.length} searches: ${failed ? 'NO' : 'yes'}; ` +
        `answers ${bytesOf.api} bytes (API), ${bytesOf.bare} bytes (bare server) in all`,
    );
    const first = statements[0];
    if (first) {
      const plan = (await pool.query<{ 'QUERY PLAN': string }>(`explain analyze ${first.text}`, [...first.values])).rows
        .map((r) => r['QUERY PLAN'])
        .join('\n');
      log(`EXPLAIN ANALYZE, q=${SEARCHES[0]?.q}:\n${plan.replace(/^/gm, '  | ')}`);
    }
    const apiUrl = api.url;
    const bareUrl = bare.url;
    if (SETTINGS.warmupS > 0) {
      await runAutocannon(apiUrl, REQUESTS, SETTINGS.warmupS, SETTINGS.connections);
      await runAutocannon(bareUrl, REQUESTS, SETTINGS.warmupS, SETTINGS.connections);
      await closedLoop(SETTINGS.connections, SETTINGS.warmupS, sqlTask);
    }
    const apiPid = api.child.pid ?? 0;
    const barePid = bare.child.pid ?? 0;
    // Only the backends of the benchmark's database: other work on this machine (test suites) is left out.
    const database = decodeURIComponent(new URL(databaseUrl).pathname.slice(1));
    const parties = {
      postgres: () => postgresCpuMs(database),
      'api process': () => processCpuMs(apiPid),
      'bare process': () => processCpuMs(barePid),
      'bench process': () => processCpuMs(process.pid),
    };
    const sliceS = Math.max(1, SETTINGS.durationS / SETTINGS.rounds);
    const apiRounds: Measured[] = [];
    const bareRounds: Measured[] = [];
    const sqlRounds: Measured[] = [];
    // The three sides alternate in rounds, so a change in the machine's background load hits each.
    for (let r = 0; r < SETTINGS.rounds; r++) {
      apiRounds.push(await withCpu(parties, () => runAutocannon(apiUrl, REQUESTS, sliceS, SETTINGS.connections)));
      bareRounds.push(await withCpu(parties, () => runAutocannon(bareUrl, REQUESTS, sliceS, SETTINGS.connections)));
      sqlRounds.push(await withCpu(parties, () => closedLoop(SETTINGS.connections, sliceS, sqlTask)));
    }
    const viaApi = combineRounds(apiRounds);
    const viaBare = combineRounds(bareRounds);
    const viaSql = combineRounds(sqlRounds);
    const ratio = viaApi.rps / viaSql.rps;
    const bareRatio = viaApi.rps / viaBare.rps;
    const bareOk = bareRatio >= GOAL_BARE_RATIO;
    const p99Ok = viaApi.p99 <= GOAL_P99_MS;
    const errorsOk = viaApi.errors === 0 && viaSql.errors === 0 && viaBare.errors === 0;
    if (!(bareOk && p99Ok && errorsOk)) failed = true;
    const line = (label: string, unit: string, m: Measured) => {
      log(
        `${label.padEnd(5)} ${fmt(m.rps).padStart(7)} ${unit}  p50 ${fmt(m.p50)} ms  p99 ${fmt(m.p99)} ms  (${m.count} ok, ${m.errors} errors)`,
      );
      log(`      CPU ms per ${unit === 'q/s' ? 'query' : 'request'}: ${cpuText(m.cpuPerOp)}`);
    };
    line('SQL:', 'q/s', viaSql);
    line('bare:', 'r/s', viaBare);
    line('API:', 'r/s', viaApi);
    log(
      `API/bare ${fmt(bareRatio * 100, 0)} % (goal ≥ ${GOAL_BARE_RATIO * 100} %): ${bareOk ? 'PASS' : 'FAIL'}; ` +
        `API/SQL ${fmt(ratio * 100, 0)} % (no goal); bare/SQL ${fmt((viaBare.rps / viaSql.rps) * 100, 0)} %; ` +
        `API p99 ${fmt(viaApi.p99)} ms (goal ≤ ${GOAL_P99_MS} ms): ${p99Ok ? 'PASS' : 'FAIL'}${errorsOk ? '' : '; ERRORS'}` +
        `; load average now ${loadavg()[0]?.toFixed(1)}`,
    );
  } finally {
    if (api) await stopApiProcess(api.child);
    if (bare) await stopApiProcess(bare.child);
    await pool.end();
    await db.destroy();
  }
  return { failed };
}
