import type { ChildProcess } from 'node:child_process';
import { cpus, loadavg } from 'node:os';
import { envSchema } from '../shared/config.ts';
import {
  benchDatabaseUrl,
  combineRounds,
  envNumber,
  loadSettings,
  runAutocannon,
  startApiProcess,
  stopApiProcess,
} from './harness.ts';
import { ensurePlacesLoaded, origins, SHAPES } from './places-search.ts';
import { type SlowlorisReport, startSlowloris } from './slowloris.ts';
import { cpuText, fmt, type LoadStats, postgresCpuMs, processCpuMs, quantile, withCpu } from './stats.ts';

/**
 * bench/slow-clients: the places search mix (bbox, radius, filtered; bench/places-search.ts)
 * through the API with autocannon, (a) alone and (b) while a pool of slowloris connections
 * (bench/slowloris.ts) holds the server, alternating in rounds. The API runs with a shortened
 * HTTP_HEADERS_TIMEOUT_MS so that the slow connections are closed and reopened many times in a run.
 * Goals: (b) p99 ≤ 100 ms with no failed search; every slow connection answered 408 and closed
 * after the header timeout, not before and not much later.
 */

const SETTINGS = {
  places: envNumber('BENCH_SLOW_CLIENTS_PLACES', 100_000),
  slowClients: Math.max(1, Math.round(envNumber('BENCH_SLOW_CLIENTS', 500))),
  headersTimeoutMs: envNumber('BENCH_SLOW_HEADERS_TIMEOUT_MS', 5_000),
  trickleMs: envNumber('BENCH_SLOW_TRICKLE_MS', 1_000),
  ...loadSettings(),
  reload: process.env.BENCH_RELOAD === '1',
};

const GOAL_P99_MS = 100;
// A slow connection is closed by Node's periodic check (a tenth of the timeout, api/http/server-options.ts)
// once its time is up: allow that and a loaded machine's lag, but not a missed timeout.
const CLOSE_EARLY_SLACK_MS = 50;
const CLOSE_LATE_FACTOR = 1.5;
// The pool reopens a closed connection at once; below this share held, (b) did not measure what it says.
const POOL_HELD_SHARE = 0.95;

/** The API process, with the header timeout of this benchmark (startApiProcess passes our environment on). */
async function startApi(databaseUrl: string): Promise<{ url: string; child: ChildProcess }> {
  const before = process.env.HTTP_HEADERS_TIMEOUT_MS;
  process.env.HTTP_HEADERS_TIMEOUT_MS = String(SETTINGS.headersTimeoutMs);
  try {
    return await startApiProcess(databaseUrl, 'places', SETTINGS.connections);
  } finally {
    if (before === undefined) delete process.env.HTTP_HEADERS_TIMEOUT_MS;
    else process.env.HTTP_HEADERS_TIMEOUT_MS = before;
  }
}

/** The slowloris reports of the rounds as one. */
function combineReports(reports: SlowlorisReport[]) {
  const lifetimes = Float64Array.from(reports.flatMap((r) => r.lifetimesMs)).sort();
  return {
    closedByServer: reports.reduce((n, r) => n + r.closedByServer, 0),
    answered408: reports.reduce((n, r) => n + r.answered408, 0),
    connectErrors: reports.reduce((n, r) => n + r.connectErrors, 0),
    minConnected: Math.min(...reports.map((r) => r.minConnected)),
    meanConnected: reports.reduce((n, r) => n + r.meanConnected, 0) / reports.length,
    lifetimes: {
      min: lifetimes[0] ?? Number.NaN,
      p50: quantile(lifetimes, 0.5),
      p99: quantile(lifetimes, 0.99),
      max: lifetimes[lifetimes.length - 1] ?? Number.NaN,
    },
  };
}

export async function run(): Promise<{ failed: boolean }> {
  const databaseUrl = benchDatabaseUrl('BENCH_SLOW_CLIENTS_DATABASE_URL', 'sports_bench_slow_clients');
  const log = (s: string) => console.log(s);
  const defaultTimeoutMs = envSchema.shape.HTTP_HEADERS_TIMEOUT_MS.parse(undefined);
  log(`slow-clients benchmark on ${databaseUrl.replace(/\/\/[^@]*@/, '//')}`);
  log(
    `settings: places=${SETTINGS.places} slowloris=${SETTINGS.slowClients} (a header piece every ${SETTINGS.trickleMs} ms) ` +
      `duration=${SETTINGS.durationS}s per side in ${SETTINGS.rounds} alternating rounds, warmup=${SETTINGS.warmupS}s, ` +
      `concurrency=${SETTINGS.connections}; ${cpus().length} CPUs, load average ${loadavg()[0]?.toFixed(1)}`,
  );
  log(
    `the API runs with HTTP_HEADERS_TIMEOUT_MS=${SETTINGS.headersTimeoutMs} for this benchmark ` +
      `(BENCH_SLOW_HEADERS_TIMEOUT_MS; the API's default is ${defaultTimeoutMs})`,
  );
  await ensurePlacesLoaded(databaseUrl, SETTINGS, log);

  // The mix: each centre's three shapes in turn.
  const paths = origins().flatMap((c) => SHAPES.map((s) => `/api/v1/places?${s.query(c)}`));
  let api: { url: string; child: ChildProcess } | undefined;
  let failed = false;
  try {
    api = await startApi(databaseUrl);
    const apiUrl = api.url;
    for (const path of paths.slice(0, SHAPES.length)) {
      const probe = await fetch(`${apiUrl}${path}`);
      const body = await probe.text();
      if (!probe.ok) throw new Error(`GET ${path} answered ${probe.status}: ${body.slice(0, 300)}`);
      log(`probe: GET ${path} → ${(JSON.parse(body) as { count?: number }).count} places`);
    }
    if (SETTINGS.warmupS > 0) await runAutocannon(apiUrl, paths, SETTINGS.warmupS, SETTINGS.connections);

    const database = decodeURIComponent(new URL(databaseUrl).pathname.slice(1));
    const apiPid = api.child.pid ?? 0;
    const parties = {
      'api process': () => processCpuMs(apiPid),
      postgres: () => postgresCpuMs(database),
      'bench process': () => processCpuMs(process.pid),
    };
    // The sides alternate in rounds, so a change in the machine's background load hits each.
    const sliceS = Math.max(1, SETTINGS.durationS / SETTINGS.rounds);
    const rampMs = SETTINGS.headersTimeoutMs;
    const alone: (LoadStats & { cpuPerOp: Record<string, number> })[] = [];
    const held: (LoadStats & { cpuPerOp: Record<string, number> })[] = [];
    const reports: SlowlorisReport[] = [];
    let heldSeconds = 0;
    for (let r = 0; r < SETTINGS.rounds; r++) {
      alone.push(await withCpu(parties, () => runAutocannon(apiUrl, paths, sliceS, SETTINGS.connections)));
      // The slow connections open spread over one header timeout, so that they time out spread too.
      const slowloris = await startSlowloris({
        url: apiUrl,
        connections: SETTINGS.slowClients,
        trickleMs: SETTINGS.trickleMs,
        rampMs,
      });
      // The first connections time out as the ramp ends: the closing happens from here on.
      const rampEnded = performance.now();
      slowloris.measure();
      held.push(await withCpu(parties, () => runAutocannon(apiUrl, paths, sliceS, SETTINGS.connections)));
      reports.push(await slowloris.stop());
      heldSeconds += (performance.now() - rampEnded) / 1000;
      const last = reports[reports.length - 1] as SlowlorisReport;
      log(
        `round ${r + 1}: (a) p99 ${fmt(alone[r]?.p99 ?? Number.NaN)} ms, (b) p99 ${fmt(held[r]?.p99 ?? Number.NaN)} ms; ` +
          `${last.closedByServer} slow connections closed by the server, ${last.minConnected}–${SETTINGS.slowClients} connected`,
      );
    }
    const a = combineRounds(alone);
    const b = combineRounds(held);
    const slow = combineReports(reports);

    const p99Ok = b.p99 <= GOAL_P99_MS;
    const errorsOk = b.errors === 0 && a.errors === 0;
    const closedOk =
      slow.closedByServer > 0 &&
      slow.answered408 === slow.closedByServer &&
      slow.lifetimes.min >= SETTINGS.headersTimeoutMs - CLOSE_EARLY_SLACK_MS &&
      slow.lifetimes.p99 <= SETTINGS.headersTimeoutMs * CLOSE_LATE_FACTOR;
    const heldOk = slow.meanConnected >= POOL_HELD_SHARE * SETTINGS.slowClients;
    failed = !(p99Ok && errorsOk && closedOk && heldOk);

    const row = (label: string, s: LoadStats & { cpuPerOp?: Record<string, number> }) =>
      `${label.padEnd(24)} ${fmt(s.rps).padStart(8)} ${fmt(s.p50).padStart(7)} ${fmt(s.p99).padStart(7)} ${String(s.errors).padStart(7)}   ${cpuText(s.cpuPerOp ?? {})}`;
    log(
      `\n=== summary (concurrency ${SETTINGS.connections}, ${SETTINGS.durationS} s per side in ${SETTINGS.rounds} rounds, ` +
        `${SETTINGS.places} places, search mix ${SHAPES.map((s) => s.name).join('/')}; load average now ${loadavg()[0]?.toFixed(1)})`,
    );
    log(
      `the API ran with HTTP_HEADERS_TIMEOUT_MS=${SETTINGS.headersTimeoutMs} (shortened for this benchmark; default ${defaultTimeoutMs})`,
    );
    log('side                          r/s     p50     p99  errors   CPU ms per request');
    log(row('(a) no slow clients', a));
    log(row(`(b) ${SETTINGS.slowClients} slowloris open`, b));
    log(
      `${'(b)/(a)'.padEnd(24)} ${`${fmt((b.rps / a.rps) * 100, 0)} %`.padStart(8)} ${`${fmt(b.p50 / a.p50, 2)} ×`.padStart(7)} ${`${fmt(b.p99 / a.p99, 2)} ×`.padStart(7)}`,
    );
    log(
      `slowloris: ${slow.closedByServer} connections closed by the server over ${fmt(heldSeconds, 0)} s of (b) after the ramps ` +
        `(${fmt(slow.closedByServer / heldSeconds)}/s), ${slow.answered408} of them answered 408; ` +
        `closed ${fmt(slow.lifetimes.min / 1000, 2)} / ${fmt(slow.lifetimes.p50 / 1000, 2)} / ${fmt(slow.lifetimes.p99 / 1000, 2)} / ` +
        `${fmt(slow.lifetimes.max / 1000, 2)} s (min/p50/p99/max) after connecting; ` +
        `connected during (b): min ${slow.minConnected}, mean ${fmt(slow.meanConnected, 0)} of ${SETTINGS.slowClients}` +
        `${slow.connectErrors ? `; ${slow.connectErrors} connects refused` : ''}`,
    );
    log(
      `goals: (b) p99 ${fmt(b.p99)} ms ≤ ${GOAL_P99_MS} ms: ${p99Ok ? 'PASS' : 'FAIL'}; ` +
        `no failed search: ${errorsOk ? 'PASS' : `FAIL (${a.errors} in (a), ${b.errors} in (b))`}; ` +
        `slow connections answered 408 and closed between ${SETTINGS.headersTimeoutMs / 1000} s and ` +
        `${(SETTINGS.headersTimeoutMs * CLOSE_LATE_FACTOR) / 1000} s (p99): ${closedOk ? 'PASS' : 'FAIL'}; ` +
        `pool held (mean ≥ ${POOL_HELD_SHARE * 100} % connected): ${heldOk ? 'PASS' : 'FAIL'}`,
    );
  } finally {
    if (api) await stopApiProcess(api.child);
  }
  return { failed };
}
