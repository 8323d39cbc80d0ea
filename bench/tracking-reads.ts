import type { ChildProcess } from 'node:child_process';
import { loadavg } from 'node:os';
import { decodeJwt } from 'jose';
import pg from 'pg';
import { issueApiKey } from '../shared/accounts/api-keys.ts';
import { registerClient } from '../shared/accounts/clients.ts';
import { hashSecret } from '../shared/accounts/secrets.ts';
import { issueOperatorToken } from '../shared/auth/operator-tokens.ts';
import type { Db } from '../shared/db/database.ts';
import type { findTrackingCredentials } from '../shared/tracking/users/credentials.ts';
import { startBareServer } from './bare-server.ts';
import {
  type BenchRequest,
  combineRounds,
  GOAL_BARE_RATIO,
  loadSettings,
  runAutocannon,
  startApiProcess,
  stopApiProcess,
} from './harness.ts';
import { closedLoop, cpuText, fmt, type LoadStats, postgresCpuMs, processCpuMs, withCpu } from './stats.ts';

/**
 * What tracking-sumups and tracking-streams share: a tracking caller's credentials, the API and
 * the bare server (bench/tracking-reads-bare.ts) side by side, and each read measured three ways
 * in alternating rounds: through the API, through the bare server, and as the statements the API
 * runs for it straight through a pg pool of the same size (the SQL side, credentials included).
 * Goals per read: API ≥ GOAL_BARE_RATIO × bare, API p99 ≤ GOAL_P99_OF_SQL × the SQL side's p99.
 */

export const GOAL_P99_OF_SQL = 1.5;

/** One read: its requests (each connection rotates over them) and its statements as the SQL side runs them. */
export interface ReadCase {
  label: string;
  requests: BenchRequest[];
  /** The statements of request `i` (credentials included), straight through pg. */
  sql: (i: number) => Promise<unknown>;
}

type Measured = LoadStats & { cpuPerOp: Record<string, number> };

export interface ReadResult {
  label: string;
  api: Measured;
  bare: Measured;
  sql: Measured;
  /** Statements of the benchmark database per request (pg_stat_database transactions), API and bare. */
  statements: { api: number; bare: number };
  ok: boolean;
}

/** A tracking caller: a client, its API key and an access token of `accountId`, as request headers. */
export async function trackingCaller(
  db: Db,
  issuer: string,
  accountId: string,
  label: string,
): Promise<{ headers: Record<string, string>; credentials: Parameters<typeof findTrackingCredentials>[1] }> {
  const client = await registerClient(db, {
    client_name: `${label} bench`,
    redirect_uris: ['https://bench.test/cb'],
    firstParty: true,
  });
  const { api_key: apiKey } = await issueApiKey(db, client.client_id, 'bench');
  const token = await issueOperatorToken(
    db,
    { issuer, AUTH_AUDIENCE: 'sports-api' },
    { accountId, clientId: client.client_id, ttlSeconds: 3600 },
  );
  const claims = decodeJwt(token);
  return {
    headers: { authorization: `Bearer ${token}`, 'x-api-key': apiKey },
    credentials: {
      keyHash: hashSecret(apiKey),
      token: {
        sub: String(claims.sub),
        jti: typeof claims.jti === 'string' ? claims.jti : undefined,
        clientId: client.client_id,
        grantId: typeof claims.grant_id === 'string' ? claims.grant_id : undefined,
      },
    },
  };
}

/** Requests of the probe that counts statements: enough that the API's outbox polls are noise. */
const COUNTED_REQUESTS = 200;

/** Transactions committed in `database` so far (every statement outside BEGIN is one). */
async function transactions(pool: pg.Pool, database: string): Promise<number> {
  // An idle backend reports its counts within PostgreSQL's idle stats interval (10 s in 15).
  await new Promise((r) => setTimeout(r, 11_000));
  const { rows } = await pool.query<{ n: string }>(
    'select xact_commit + xact_rollback as n from pg_stat_database where datname = $1',
    [database],
  );
  return Number(rows[0]?.n ?? 0);
}

/**
 * The API and the bare server on `url`, each read probed (same bytes from both, statements per
 * request), then measured in alternating rounds; prints each read's figures and goals.
 */
export async function compareReads(
  url: string,
  cases: (servers: { api: string; bare: string }) => Promise<ReadCase[]>,
  log: (s: string) => void,
): Promise<ReadResult[]> {
  const settings = loadSettings();
  const database = decodeURIComponent(new URL(url).pathname.slice(1));
  const stats = new pg.Pool({ connectionString: url, max: 1 });
  let api: { url: string; child: ChildProcess } | undefined;
  let bare: { url: string; child: ChildProcess } | undefined;
  try {
    api = await startApiProcess(url, 'tracking', settings.pool);
    bare = await startBareServer(
      new URL('./tracking-reads-bare.ts', import.meta.url).href,
      'bareRoute',
      url,
      settings.pool,
      {
        BARE_TOKEN_ISSUER: api.url,
      },
    );
    const servers = { api: api.url, bare: bare.url };
    // BENCH_READS: only the reads whose label holds one of these words (comma-separated), to profile one.
    const only = (process.env.BENCH_READS ?? '').split(',').filter(Boolean);
    const reads = (await cases(servers)).filter((r) => only.length === 0 || only.some((w) => r.label.includes(w)));
    let agree = true;
    for (const read of reads) {
      const sizes: number[] = [];
      for (const r of read.requests) {
        const [a, b] = await Promise.all(
          [servers.api, servers.bare].map(async (base) => {
            const res = await fetch(`${base}${r.path}`, { headers: r.headers ?? {} });
            return { status: res.status, text: await res.text() };
          }),
        );
        sizes.push(a?.text.length ?? 0);
        if (a?.status !== 200 || a.text !== b?.text) {
          agree = false;
          log(
            `probe: FAIL: ${read.label} ${r.path}: API ${a?.status} ${a?.text.length} bytes, bare ${b?.status} ${b?.text.length} bytes`,
          );
          if (a && b) {
            const at = [...a.text].findIndex((c, i) => c !== b.text[i]);
            log(`  API  …${a.text.slice(Math.max(0, at - 80), at + 80)}`);
            log(`  bare …${b.text.slice(Math.max(0, at - 80), at + 80)}`);
          }
        }
      }
      log(
        `probe ${read.label}: ${read.requests.length} requests, answers of ${Math.min(...sizes)} to ${Math.max(...sizes)} bytes`,
      );
    }
    // Statements per request, from the database's transaction count: requests one at a time, each side and read in turn.
    const probed: Record<string, { api: number; bare: number }> = {};
    let counted = await transactions(stats, database);
    for (const read of reads) {
      const count = { api: 0, bare: 0 };
      for (const side of ['api', 'bare'] as const) {
        for (let i = 0; i < COUNTED_REQUESTS; i++) {
          const r = read.requests[i % read.requests.length] as BenchRequest;
          await (await fetch(`${servers[side]}${r.path}`, { headers: r.headers ?? {} })).arrayBuffer();
        }
        const now = await transactions(stats, database);
        count[side] = (now - counted) / COUNTED_REQUESTS;
        counted = now;
      }
      probed[read.label] = count;
      log(`statements per request, ${read.label}: API ${fmt(count.api, 2)}, bare ${fmt(count.bare, 2)}`);
    }
    log(`probe: API and bare server answer the same bytes: ${agree ? 'yes' : 'NO'}`);

    const parties = {
      postgres: () => postgresCpuMs(database),
      'api process': () => processCpuMs(api?.child.pid ?? 0),
      'bare process': () => processCpuMs(bare?.child.pid ?? 0),
      'bench process': () => processCpuMs(process.pid),
    };
    const connections = settings.connections;
    if (settings.warmupS > 0)
      for (const read of reads) {
        await runAutocannon(servers.api, read.requests, settings.warmupS, connections);
        await runAutocannon(servers.bare, read.requests, settings.warmupS, connections);
        await closedLoop(connections, settings.warmupS, read.sql);
      }
    const slice = Math.max(1, settings.durationS / settings.rounds);
    const rounds = reads.map(() => ({ api: [] as Measured[], bare: [] as Measured[], sql: [] as Measured[] }));
    // Each read's three sides take turns, round after round, so background load hits each.
    for (let r = 0; r < settings.rounds; r++)
      for (const [k, read] of reads.entries()) {
        const side = rounds[k] as (typeof rounds)[number];
        side.api.push(await withCpu(parties, () => runAutocannon(servers.api, read.requests, slice, connections)));
        side.bare.push(await withCpu(parties, () => runAutocannon(servers.bare, read.requests, slice, connections)));
        side.sql.push(await withCpu(parties, () => closedLoop(connections, slice, read.sql)));
      }
    const load = loadavg()[0]?.toFixed(1);
    return reads.map((read, k) => {
      const side = rounds[k] as (typeof rounds)[number];
      const result = {
        label: read.label,
        api: combineRounds(side.api),
        bare: combineRounds(side.bare),
        sql: combineRounds(side.sql),
        statements: probed[read.label] ?? { api: Number.NaN, bare: Number.NaN },
        ok: false,
      };
      const bareRatio = result.api.rps / result.bare.rps;
      const p99Ratio = result.api.p99 / result.sql.p99;
      const errors = result.api.errors + result.bare.errors + result.sql.errors;
      result.ok = agree && bareRatio >= GOAL_BARE_RATIO && p99Ratio <= GOAL_P99_OF_SQL && errors === 0;
      log(`\n${read.label} (${settings.connections} connections, pool ${settings.pool}; load average ${load}):`);
      for (const [name, m] of [
        ['API', result.api],
        ['bare', result.bare],
        ['SQL', result.sql],
      ] as const) {
        log(
          `  ${name.padEnd(5)} ${fmt(m.rps, 0).padStart(6)} /s  p50 ${fmt(m.p50)} ms  p99 ${fmt(m.p99)} ms  (${m.count} ok, ${m.errors} errors); CPU ms each: ${cpuText(m.cpuPerOp)}`,
        );
      }
      log(
        `  API/bare ${fmt(bareRatio * 100, 0)} % (goal ≥ ${GOAL_BARE_RATIO * 100} %): ${bareRatio >= GOAL_BARE_RATIO ? 'PASS' : 'FAIL'}; ` +
          `API/SQL ${fmt((result.api.rps / result.sql.rps) * 100, 0)} %; bare/SQL ${fmt((result.bare.rps / result.sql.rps) * 100, 0)} %; ` +
          `API p99 ${fmt(p99Ratio, 2)} × SQL p99 (goal ≤ ${GOAL_P99_OF_SQL}): ${p99Ratio <= GOAL_P99_OF_SQL ? 'PASS' : 'FAIL'}${errors ? '; ERRORS' : ''}`,
      );
      return result;
    });
  } finally {
    if (api) await stopApiProcess(api.child);
    if (bare) await stopApiProcess(bare.child);
    await stats.end();
  }
}
