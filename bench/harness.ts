import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import { Redis } from 'ioredis';
import { freePort } from '../shared/runtime/free-port.ts';
import type { LoadStats } from './stats.ts';

/** What every benchmark shares: settings from the environment, the API as its own process, load, rounds. */

export const ROOT = fileURLToPath(new URL('../', import.meta.url));

/**
 * Every HTTP benchmark's goal: the API at least this share of the throughput of the bare server
 * (bench/bare-server.ts) running the same statement, measured in the same run.
 */
export const GOAL_BARE_RATIO = 0.75;

/**
 * The load settings of the HTTP benchmarks, from BENCH_DURATION_S, BENCH_WARMUP_S,
 * BENCH_CONNECTIONS, BENCH_ROUNDS and BENCH_POOL (the database pool of the API and of the bare
 * server; by default one connection per client connection).
 */
export function loadSettings(
  defaults: { durationS?: number; warmupS?: number; connections?: number; rounds?: number; pool?: number } = {},
) {
  const connections = Math.max(1, Math.round(envNumber('BENCH_CONNECTIONS', defaults.connections ?? 16)));
  return {
    durationS: envNumber('BENCH_DURATION_S', defaults.durationS ?? 15),
    warmupS: envNumber('BENCH_WARMUP_S', defaults.warmupS ?? 3),
    connections,
    rounds: Math.max(1, Math.round(envNumber('BENCH_ROUNDS', defaults.rounds ?? 3))),
    pool: Math.max(1, Math.round(envNumber('BENCH_POOL', defaults.pool ?? connections))),
  };
}

/** A numeric setting from the environment (`BENCH_DURATION_S`...), or its default. */
export function envNumber(name: string, fallback: number): number {
  const v = process.env[name];
  const n = v === undefined || v === '' ? fallback : Number(v);
  if (!Number.isFinite(n) || n < 0) throw new Error(`${name} must be a number`);
  return n;
}

/** The benchmark's own database: `variable` when set, else `database` on DATABASE_URL's server. */
export function benchDatabaseUrl(variable: string, database: string): string {
  if (process.env[variable]) return process.env[variable] as string;
  const url = new URL(process.env.DATABASE_URL ?? 'postgres://root@127.0.0.1:5432/sports');
  url.pathname = `/${database}`;
  return url.toString();
}

/**
 * The API as production runs it (its own process, NODE_ENV=production, no rate limits, warn logs),
 * with only `services` mounted, once it answers /health.
 */
export function startApiProcess(
  databaseUrl: string,
  services: string,
  poolMax: number,
): Promise<{ url: string; child: ChildProcess }> {
  // BENCH_API_NODE_ARGS: flags for the API process's node, e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof`
  // (a V8 CPU profile of each of its threads, written when it stops) or `--trace-gc`.
  const nodeArgs = (process.env.BENCH_API_NODE_ARGS ?? '').split(/\s+/).filter(Boolean);
  return startServerProcess('API', [...nodeArgs, 'api/main.ts'], (port) => ({
    NODE_ENV: 'production',
    DATABASE_URL: databaseUrl,
    DATABASE_POOL_MAX: String(poolMax),
    HOST: '127.0.0.1',
    PORT: String(port),
    PUBLIC_URL: `http://127.0.0.1:${port}`,
    SERVICES: services,
    RATE_LIMIT_ENABLED: 'false',
    // autocannon ignores the `Connection: close` of a socket's last allowed request and keeps
    // sending on it, which Node answers 503: past 1,000 requests per connection, a fast search
    // would count errors the server never made for a real client.
    HTTP_MAX_REQUESTS_PER_SOCKET: '0',
    LOG_LEVEL: 'warn',
    MIGRATE_ON_START: 'false',
    SEED_ON_START: 'false',
  }));
}

/** A worker process (`workers/main.ts`) on `databaseUrl`, with `env` added (its queues and settings). */
export function startWorkerProcess(databaseUrl: string, env: Record<string, string>): ChildProcess {
  return spawn(process.execPath, ['workers/main.ts'], {
    cwd: ROOT,
    stdio: ['ignore', 'inherit', 'inherit'],
    env: {
      ...process.env,
      NODE_ENV: 'production',
      DATABASE_URL: databaseUrl,
      LOG_LEVEL: 'warn',
      MIGRATE_ON_START: 'false',
      ...env,
    },
  });
}

/**
 * A server as its own node process (`node ...args`) on a free port, once it answers
 * /health; `env(port)` adds to this process's environment.
 */
export async function startServerProcess(
  label: string,
  args: string[],
  env: (port: number) => Record<string, string>,
): Promise<{ url: string; child: ChildProcess }> {
  const port = await freePort();
  const child = spawn(process.execPath, args, {
    cwd: ROOT,
    stdio: ['ignore', 'inherit', 'inherit'],
    env: { ...process.env, ...env(port) },
  });
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`the ${label} process exited with code ${child.exitCode}`);
    try {
      if ((await fetch(`${url}/health`)).ok) return { url, child };
    } catch {}
    await new Promise((r) => setTimeout(r, 200));
  }
  child.kill('SIGTERM');
  throw new Error(`the ${label} did not answer /health within 30 s`);
}

/** One request of a rotation: a path and, when needed, a method (GET by default), headers and a body. */
export interface BenchRequest {
  method?: 'GET' | 'POST';
  path: string;
  headers?: Record<string, string>;
  body?: Buffer;
}

/**
 * Requests through the API with autocannon, each connection rotating over `requests`; 2xx answers
 * count. Each request's bytes are built once, before the load: rebuilding them per request (a
 * `setupRequest` hook) costs the load generator's CPU, which the 2-core machine takes from the
 * API's side of a comparison.
 */
export async function runAutocannon(
  url: string,
  requests: readonly (string | BenchRequest)[],
  durationS: number,
  connections: number,
): Promise<LoadStats> {
  const result = await autocannon({
    url,
    connections,
    duration: durationS,
    requests: requests.map((r) => (typeof r === 'string' ? { method: 'GET', path: r } : { method: 'GET', ...r })),
  });
  const ok = result['2xx'];
  return {
    rps: ok / result.duration,
    p50: result.latency.p50,
    p99: result.latency.p99,
    count: ok,
    errors: result.non2xx + result.errors + result.timeouts,
  };
}

/**
 * Rounds of one side combined: throughput over all rounds; p50/p99 and CPU are the median of the
 * rounds' values (robust to one round disturbed by another process on this shared machine).
 */
export function combineRounds<T extends LoadStats & { cpuPerOp?: Record<string, number> }>(rounds: T[]): T {
  const median = (xs: number[]) => {
    const s = [...xs].sort((a, b) => a - b);
    return s[Math.floor((s.length - 1) / 2)] ?? Number.NaN;
  };
  const count = rounds.reduce((n, r) => n + r.count, 0);
  const seconds = rounds.reduce((n, r) => n + (r.rps > 0 ? r.count / r.rps : 0), 0);
  const combined = {
    rps: count / seconds,
    p50: median(rounds.map((r) => r.p50)),
    p99: median(rounds.map((r) => r.p99)),
    count,
    errors: rounds.reduce((n, r) => n + r.errors, 0),
  } as T;
  const first = rounds[0]?.cpuPerOp;
  if (first) {
    const cpuPerOp: Record<string, number> = {};
    for (const key of Object.keys(first)) cpuPerOp[key] = median(rounds.map((r) => r.cpuPerOp?.[key] ?? Number.NaN));
    combined.cpuPerOp = cpuPerOp;
  }
  return combined;
}

/** Stops a server process (SIGTERM, then at most 10 s for it to finish its requests). */
export async function stopApiProcess(child: ChildProcess): Promise<void> {
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGTERM');
  await Promise.race([exited, new Promise((r) => setTimeout(r, 10_000))]);
}

/** Removes every Redis key under `prefix` (a run's own QUEUE_PREFIX); Redis unreachable: nothing was written. */
export async function removeRedisKeys(prefix: string): Promise<void> {
  const redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', {
    lazyConnect: true,
    maxRetriesPerRequest: 1,
  });
  try {
    await redis.connect();
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000);
      if (keys.length) await redis.del(...keys);
      cursor = next;
    } while (cursor !== '0');
  } catch {
    // Unreachable: nothing was enqueued.
  } finally {
    redis.disconnect();
  }
}
