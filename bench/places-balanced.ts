import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { cpus, loadavg } from 'node:os';
import pg from 'pg';
import { type BalancedApi, PgBouncer, startBalancedApi } from '../scripts/cluster/balancer.ts';
import { PrivatePostgres } from '../scripts/cluster/postgres-server.ts';
import { parseSearchQuery } from '../shared/places/search-query.ts';
import { compileSearchQuery } from '../shared/places/search-sql.ts';
import { combineRounds, envNumber, loadSettings, runAutocannon, startApiProcess, stopApiProcess } from './harness.ts';
import { ensurePlacesLoaded, origins, SHAPES } from './places-search.ts';
import { closedLoop, fmt, type LoadStats } from './stats.ts';

/**
 * bench/places-balanced (issue 26 §3): the places searches of bench/places-search.ts through
 * HAProxy to 1, 2 and 4 API processes on PgBouncer (pool_mode=transaction, statements unnamed),
 * beside the same SQL straight to PostgreSQL (named, as one API on PostgreSQL sends it; and
 * unnamed), the unnamed SQL through PgBouncer, and one API process on PostgreSQL without the
 * balancer. Every side is started first; the sides then alternate in rounds, so that the machine's
 * background load hits each. `node bench/places-balanced.ts`. No goal: on a 2-core machine the
 * processes share the same two cores with PostgreSQL, so this shows the setup's cost, not a scale-out.
 */

const SETTINGS = {
  places: envNumber('BENCH_PLACES', 100_000),
  ...loadSettings({ durationS: 10, warmupS: 2, connections: 16, rounds: 2 }),
  reload: process.env.BENCH_RELOAD === '1',
  apiCounts: (process.env.BENCH_API_COUNTS ?? '1,2,4').split(',').map(Number),
  shapes: (process.env.BENCH_SHAPES ?? 'bbox,radius,filtered').split(',').map((s) => s.trim()),
};

interface Shape {
  name: string;
  paths: string[];
  compiled: { sql: string; parameters: unknown[]; name?: string }[];
}

/** One way of running the searches: its label and a load of `seconds` on one shape. */
interface Side {
  label: string;
  load: (shape: Shape, seconds: number) => Promise<LoadStats>;
}

function sqlSide(label: string, pool: pg.Pool, named: boolean): Side {
  return {
    label,
    load: (shape, seconds) =>
      closedLoop(SETTINGS.connections, seconds, (i) => {
        const q = shape.compiled[i % shape.compiled.length] as Shape['compiled'][number];
        return pool.query({ ...(named && q.name ? { name: q.name } : {}), text: q.sql, values: [...q.parameters] });
      }),
  };
}

const httpSide = (label: string, url: string): Side => ({
  label,
  load: (shape, seconds) => runAutocannon(url, shape.paths, seconds, SETTINGS.connections),
});

function shapes(): Shape[] {
  const centres = origins();
  return SHAPES.filter((s) => SETTINGS.shapes.includes(s.name)).map((shape) => {
    const queries = centres.map((c) => shape.query(c));
    const compiled = queries.map((q) => {
      const parsed = parseSearchQuery(Object.fromEntries(new URLSearchParams(q)));
      if (!parsed.params) throw new Error(`invalid query ${q}: ${JSON.stringify(parsed.errors)}`);
      return compileSearchQuery(parsed.params);
    });
    return { name: shape.name, paths: queries.map((q) => `/api/v1/places?${q}`), compiled };
  });
}

/**
 * The benchmark's PostgreSQL: BENCH_BALANCED_DATABASE_URL, else a private server of its own
 * (test/helpers/postgres-server.ts), loaded at each run. The sides below hold about 50
 * connections at once, which a shared server's max_connections (100) may not have spare.
 */
async function benchDatabase(): Promise<{ url: string; stop: () => Promise<void> }> {
  const url = process.env.BENCH_BALANCED_DATABASE_URL;
  if (url) return { url, stop: async () => {} };
  const server = await PrivatePostgres.create();
  const privateUrl = new URL(server.url);
  privateUrl.pathname = '/sports_bench_balanced';
  return { url: privateUrl.toString(), stop: () => server.destroy() };
}

export async function run(): Promise<{ failed: boolean }> {
  const benchDb = await benchDatabase();
  try {
    return await runOn(benchDb.url);
  } finally {
    await benchDb.stop();
  }
}

async function runOn(databaseUrl: string): Promise<{ failed: boolean }> {
  const database = decodeURIComponent(new URL(databaseUrl).pathname.slice(1));
  const log = (s: string) => console.log(s);
  log(`places-balanced benchmark on ${databaseUrl.replace(/\/\/[^@]*@/, '//')}`);
  log(
    `settings: places=${SETTINGS.places} duration=${SETTINGS.durationS}s per side in ${SETTINGS.rounds} alternating rounds, ` +
      `warmup=${SETTINGS.warmupS}s, concurrency=${SETTINGS.connections}, API processes ${SETTINGS.apiCounts.join(', ')}; ` +
      `${cpus().length} CPUs, load average ${loadavg()[0]?.toFixed(1)}`,
  );
  await ensurePlacesLoaded(databaseUrl, { places: SETTINGS.places, reload: SETTINGS.reload }, log);
  // The API processes as bench/harness.ts's startApiProcess runs them: production, places only, no rate limit.
  const apiEnv = {
    NODE_ENV: 'production',
    SERVICES: 'places',
    RATE_LIMIT_ENABLED: 'false',
    LOG_LEVEL: 'warn',
    DATABASE_POOL_MAX: String(SETTINGS.connections),
    COOKIE_KEYS: randomBytes(24).toString('base64url'),
  };
  const pools: pg.Pool[] = [];
  const pool = (url: string) => {
    // Idle clients are kept between rounds: a client closed would make the next round connect again.
    const p = new pg.Pool({ connectionString: url, max: SETTINGS.connections, idleTimeoutMillis: 0 });
    pools.push(p);
    return p;
  };
  let bouncer: PgBouncer | undefined;
  let single: { url: string; child: ChildProcess } | undefined;
  const clusters: BalancedApi[] = [];
  let failed = false;
  try {
    const direct = pool(databaseUrl);
    bouncer = await PgBouncer.start({ upstream: databaseUrl, serverPoolSize: SETTINGS.connections });
    single = await startApiProcess(databaseUrl, 'places', SETTINGS.connections);
    const sides: Side[] = [
      sqlSide('SQL named, PostgreSQL', direct, true),
      sqlSide('SQL unnamed, PostgreSQL', direct, false),
      sqlSide('SQL unnamed, PgBouncer', pool(bouncer.url(database)), false),
      httpSide('1 API, PostgreSQL', single.url),
    ];
    for (const apis of SETTINGS.apiCounts) {
      // One PgBouncer for every setup: PostgreSQL's connections (max_connections) are shared with the SQL sides.
      const cluster = await startBalancedApi({ apis, databaseUrl, env: apiEnv, balance: 'leastconn', bouncer });
      clusters.push(cluster);
      sides.push(httpSide(`${apis} API${apis > 1 ? 's' : ' '}, HAProxy+PgBouncer`, cluster.url));
    }
    log(`started: ${sides.map((s) => s.label).join('; ')}`);

    const results = new Map<string, Map<string, LoadStats>>(sides.map((s) => [s.label, new Map()]));
    for (const shape of shapes()) {
      log(`\n=== ${shape.name}`);
      if (SETTINGS.warmupS > 0) for (const side of sides) await side.load(shape, SETTINGS.warmupS);
      const rounds = new Map<string, LoadStats[]>(sides.map((s) => [s.label, []]));
      const sliceS = Math.max(1, SETTINGS.durationS / SETTINGS.rounds);
      for (let r = 0; r < SETTINGS.rounds; r++)
        for (const side of sides) rounds.get(side.label)?.push(await side.load(shape, sliceS));
      for (const side of sides) {
        const stats = combineRounds(rounds.get(side.label) ?? []);
        results.get(side.label)?.set(shape.name, stats);
        if (stats.errors > 0) failed = true;
        log(
          `${side.label.padEnd(32)} ${fmt(stats.rps).padStart(7)} r/s  p50 ${fmt(stats.p50).padStart(5)} ms  ` +
            `p99 ${fmt(stats.p99).padStart(6)} ms  (${stats.count} ok, ${stats.errors} errors)`,
        );
      }
    }

    log(
      `\n=== summary (concurrency ${SETTINGS.connections}, ${SETTINGS.durationS} s per side, ${SETTINGS.places} places, ` +
        `${cpus().length} CPUs; load average now ${loadavg()[0]?.toFixed(1)}); /SQL: throughput beside the named SQL`,
    );
    const names = SETTINGS.shapes.filter((n) => results.get(sides[0]?.label ?? '')?.has(n));
    log(`${'side'.padEnd(32)} ${names.map((n) => `${n.padStart(10)}  r/s   p99  /SQL`).join('   ')}`);
    const sql = results.get(sides[0]?.label ?? '');
    for (const side of sides) {
      const cells = names.map((n) => {
        const s = results.get(side.label)?.get(n) as LoadStats;
        const ratio = s.rps / (sql?.get(n)?.rps ?? Number.NaN);
        return `${fmt(s.rps).padStart(15)} ${fmt(s.p99, 0).padStart(5)} ${`${fmt(ratio * 100, 0)}%`.padStart(5)}`;
      });
      log(`${side.label.padEnd(32)} ${cells.join('   ')}`);
    }
    if (failed) log('FAIL: some requests or queries failed (see the errors above)');
  } finally {
    for (const cluster of clusters) await cluster.close();
    if (single) await stopApiProcess(single.child);
    for (const p of pools) await p.end();
    await bouncer?.stop();
  }
  return { failed };
}

if (import.meta.main) {
  // Ctrl-C: exit handlers stop the servers this run started.
  process.once('SIGINT', () => process.exit(130));
  process.exit((await run()).failed ? 1 : 0);
}
