import { type ChildProcess, spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { sql } from 'kysely';
import { issueApiKey } from '../shared/accounts/api-keys.ts';
import { registerClient } from '../shared/accounts/clients.ts';
import { issueOperatorToken } from '../shared/auth/operator-tokens.ts';
import { ensureDatabase } from '../shared/db/create-database.ts';
import { createDb, type Db } from '../shared/db/database.ts';
import { migrateToLatest } from '../shared/db/migrate.ts';
import { seedReferentials } from '../shared/db/referentials.ts';
import { freePort } from '../shared/runtime/free-port.ts';
import { ensureTrackingUser } from '../shared/tracking/users/store.ts';
import { benchDatabaseUrl, envNumber, ROOT, removeRedisKeys, startApiProcess, stopApiProcess } from './harness.ts';
import { cpuText, fmt, postgresCpuMs, processCpuMs, quantile, withCpu } from './stats.ts';
import { type Arrival, type BenchReceiver, bareSignedLoop, startBenchReceiver } from './webhooks-receiver.ts';
import { measureStages, stagesText } from './webhooks-stages.ts';

/**
 * bench/webhooks: activity posts reaching 10 hooks of their user, through the API, the outbox,
 * the `webhooks` worker (its own process) and a loopback receiver (bench/README.md).
 * - latency: BENCH_WEBHOOKS_RATE (50) posts per second for BENCH_DURATION_S, open loop; every
 *   delivery must arrive exactly once (counted by hook and webhook-id) and the p95 from the POST's
 *   answer (its commit is just before) to the receiver be ≤ 1 s.
 * - throughput: BENCH_WEBHOOKS_BURST activities posted while the worker is stopped, then the
 *   worker started: deliveries per second from the first to the last arrival, beside a bare loop
 *   of signed fetch calls to the same receiver (as many, WEBHOOKS_CONCURRENCY at once). Goal:
 *   ≥ 0.5 × the bare loop.
 */

const SETTINGS = {
  durationS: envNumber('BENCH_DURATION_S', 10),
  rate: Math.max(1, envNumber('BENCH_WEBHOOKS_RATE', 50)),
  burst: Math.max(1, Math.round(envNumber('BENCH_WEBHOOKS_BURST', 300))),
  concurrency: Math.max(1, Math.round(envNumber('WEBHOOKS_CONCURRENCY', 32))),
};
const HOOKS = 10;
const GOAL_P95_MS = 1000;
const GOAL_BARE_RATIO = 0.5;
const QUEUE_PREFIX = 'sbbenchwh';
/** The processes' own settings: loopback receivers are allowed (the bench's only target). */
const WEBHOOK_ENV = { WEBHOOKS_ALLOW_HTTP: 'true', WEBHOOKS_ALLOW_PRIVATE: 'true', QUEUE_PREFIX };

/** The `webhooks` worker as its own process, once its /metrics answers. */
async function startWorkerProcess(databaseUrl: string): Promise<ChildProcess> {
  const port = await freePort();
  // BENCH_WORKER_NODE_ARGS: flags for the worker's node, e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof`.
  const nodeArgs = (process.env.BENCH_WORKER_NODE_ARGS ?? '').split(/\s+/).filter(Boolean);
  const child = spawn(process.execPath, [...nodeArgs, 'workers/main.ts'], {
    cwd: ROOT,
    stdio: ['ignore', 'inherit', 'inherit'],
    env: {
      ...process.env,
      ...WEBHOOK_ENV,
      NODE_ENV: 'production',
      DATABASE_URL: databaseUrl,
      WORKER_QUEUES: 'webhooks',
      WORKER_METRICS_PORT: String(port),
      HOST: '127.0.0.1',
      LOG_LEVEL: 'warn',
      MIGRATE_ON_START: 'false',
      WEBHOOKS_CONCURRENCY: String(SETTINGS.concurrency),
    },
  });
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`the worker exited with code ${child.exitCode}`);
    if (
      await fetch(`http://127.0.0.1:${port}/metrics`).then(
        (r) => r.ok,
        () => false,
      )
    )
      return child;
    await new Promise((r) => setTimeout(r, 200));
  }
  child.kill('SIGTERM');
  throw new Error('the worker did not serve /metrics within 30 s');
}

/** CPU time (ms) of the local redis-server processes, from /proc; undefined elsewhere. */
function redisCpuMs(): number | undefined {
  try {
    let total = 0;
    for (const entry of readdirSync('/proc'))
      if (/^\d+$/.test(entry) && readFileSync(`/proc/${entry}/comm`, 'utf8').trim() === 'redis-server')
        total += processCpuMs(Number(entry)) ?? 0;
    return total;
  } catch {
    return undefined;
  }
}

/** Transactions (statements outside one count one each) and rows written in a database so far. */
async function postgresWork(db: Db, database: string): Promise<{ transactions: number; rows: number }> {
  const { rows } = await sql<{ transactions: string; rows: string }>`
    select xact_commit + xact_rollback as transactions, tup_inserted + tup_updated + tup_deleted as rows
    from pg_stat_database where datname = ${database}`.execute(db);
  await sql`select pg_stat_clear_snapshot()`.execute(db);
  return { transactions: Number(rows[0]?.transactions ?? 0), rows: Number(rows[0]?.rows ?? 0) };
}

/** Waits until `count` deliveries arrived, or `idleMs` passed without a new one. */
async function settle(receiver: BenchReceiver, count: number, idleMs = 15_000): Promise<void> {
  let seen = -1;
  let since = performance.now();
  while (receiver.arrivals.length < count) {
    if (receiver.arrivals.length !== seen) {
      seen = receiver.arrivals.length;
      since = performance.now();
    } else if (performance.now() - since > idleMs) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  // Anything sent twice would arrive about now.
  await new Promise((r) => setTimeout(r, 1_000));
}

/** Deliveries expected, those that came, and each one's count. */
function tally(arrivals: readonly Arrival[], expected: number) {
  const counts = new Map<string, number>();
  for (const a of arrivals) counts.set(`${a.path} ${a.id}`, (counts.get(`${a.path} ${a.id}`) ?? 0) + 1);
  const twice = [...counts.values()].filter((n) => n > 1).length;
  return {
    expected,
    received: arrivals.length,
    unique: counts.size,
    twice,
    missing: Math.max(0, expected - counts.size),
  };
}

export async function run(): Promise<{ failed: boolean }> {
  const url = benchDatabaseUrl('BENCH_WEBHOOKS_DATABASE_URL', 'sports_bench_webhooks');
  const log = (s: string) => console.log(s);
  log(`webhooks benchmark on ${url.replace(/\/\/[^@]*@/, '//')}`);
  log(
    `settings: ${SETTINGS.rate} posts/s for ${SETTINGS.durationS}s to ${HOOKS} hooks; burst of ${SETTINGS.burst} posts; ` +
      `worker concurrency ${SETTINGS.concurrency}; ${cpus().length} CPUs, load average ${loadavg()[0]?.toFixed(1)}`,
  );
  await ensureDatabase(url);
  const { db } = createDb(url, 2);
  const receiver = await startBenchReceiver();
  const saved = Object.fromEntries(Object.keys(WEBHOOK_ENV).map((k) => [k, process.env[k]]));
  let api: { url: string; child: ChildProcess } | undefined;
  let worker: ChildProcess | undefined;
  let failed = false;
  try {
    await migrateToLatest(db);
    await seedReferentials(db);
    const email = 'bench-webhooks@example.org';
    const account =
      (await db.selectFrom('accounts').select(['id', 'ldid']).where('email', '=', email).executeTakeFirst()) ??
      (await db
        .insertInto('accounts')
        .values({ email, first_name: 'Bench', last_name: 'Webhooks', roles: ['user'] })
        .returning(['id', 'ldid'])
        .executeTakeFirstOrThrow());
    await ensureTrackingUser(db, { accountId: account.id, ldid: account.ldid, claims: {} });
    const clean = async () => {
      await db.deleteFrom('user_web_hooks').where('user_id', '=', account.ldid).execute();
      await db.deleteFrom('webhook_events').where('user_id', '=', account.ldid).execute();
      await db.deleteFrom('activities').where('user_id', '=', account.ldid).execute();
      await db.deleteFrom('outbox').execute();
    };
    await clean();
    const client = await registerClient(db, {
      client_name: 'bench webhooks',
      redirect_uris: ['https://bench.test/cb'],
      firstParty: true,
    });
    const { api_key: apiKey } = await issueApiKey(db, client.client_id, 'bench');
    Object.assign(process.env, WEBHOOK_ENV);
    api = await startApiProcess(url, 'tracking', 8);
    worker = await startWorkerProcess(url);
    const token = await issueOperatorToken(
      db,
      { issuer: api.url, AUTH_AUDIENCE: 'sports-api' },
      { accountId: account.id, clientId: client.client_id, ttlSeconds: 3600 },
    );
    const headers = { authorization: `Bearer ${token}`, 'x-api-key': apiKey, 'content-type': 'application/ld+json' };
    const user = `/v2/users/${account.ldid}`;
    const apiUrl = api.url;
    const secrets: string[] = [];
    for (let i = 0; i < HOOKS; i++) {
      const res = await fetch(`${apiUrl}/v2/user_web_hooks`, {
        method: 'POST',
        headers,
        body: JSON.stringify({ user, url: `${receiver.url}/h/${i}`, events: ['activity_create'] }),
      });
      if (res.status !== 201) throw new Error(`POST /v2/user_web_hooks: ${res.status} ${await res.text()}`);
      secrets.push(((await res.json()) as { secret: string }).secret);
    }
    let n = 0;
    /** POSTs one small activity (each starts a second after the previous: no duplicates); when its answer came. */
    const post = async (): Promise<{ id: string; answered: number }> => {
      n++;
      const startdate = new Date(Date.UTC(2024, 0, 1) + n * 1000).toISOString().replace('.000Z', '+00:00');
      const body = {
        user,
        sport: '/v2/sports/121',
        name: `Bench ${n}`,
        startdate,
        duration: 60,
        dataSummaries: { '5': 100 },
      };
      const res = await fetch(`${apiUrl}/v2/activities`, { method: 'POST', headers, body: JSON.stringify(body) });
      const answered = performance.now();
      if (res.status !== 201) throw new Error(`POST /v2/activities: ${res.status} ${await res.text()}`);
      return { id: ((await res.json()) as { id: string }).id, answered };
    };

    // ---- latency: an open loop at the rate asked
    log(`\n=== latency: ${SETTINGS.rate} posts/s for ${SETTINGS.durationS}s, each to ${HOOKS} hooks`);
    const answeredAt = new Map<string, number>();
    const inFlight: Promise<void>[] = [];
    let postErrors = 0;
    const total = Math.round(SETTINGS.rate * SETTINGS.durationS);
    const started = performance.now();
    for (let i = 0; i < total; i++) {
      const due = started + (i * 1000) / SETTINGS.rate;
      const wait = due - performance.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      inFlight.push(
        post().then(
          (p) => void answeredAt.set(`/v2/activities/${p.id}`, p.answered),
          () => void postErrors++,
        ),
      );
    }
    await Promise.all(inFlight);
    const posted = total - postErrors;
    await settle(receiver, posted * HOOKS);
    const latency = tally(receiver.arrivals, posted * HOOKS);
    const delays = receiver.arrivals
      .map((a) => a.at - (answeredAt.get(JSON.parse(a.body).resource as string) ?? Number.NaN))
      .filter(Number.isFinite)
      .map((ms) => Math.max(0, ms))
      .sort((a, b) => a - b);
    const p95 = quantile(delays, 0.95);
    const exactlyOnce = latency.missing === 0 && latency.twice === 0 && postErrors === 0;
    const latencyOk = exactlyOnce && p95 <= GOAL_P95_MS;
    log(
      `posts ${posted} (errors ${postErrors}) | deliveries ${latency.received} of ${latency.expected}, ` +
        `twice ${latency.twice}, missing ${latency.missing} | POST answer → receiver p50 ${fmt(quantile(delays, 0.5), 0)} ms ` +
        `p95 ${fmt(p95, 0)} ms p99 ${fmt(quantile(delays, 0.99), 0)} ms max ${fmt(delays.at(-1) ?? Number.NaN, 0)} ms`,
    );
    log(stagesText(await measureStages(QUEUE_PREFIX, receiver.arrivals, answeredAt)));
    const sample = receiver.arrivals[0]?.body ?? '{}';

    // ---- throughput: a backlog made with the worker stopped, then drained
    log(`\n=== throughput: ${SETTINGS.burst} posts × ${HOOKS} hooks queued with the worker stopped, then delivered`);
    await stopApiProcess(worker);
    worker = undefined;
    receiver.reset();
    for (let i = 0; i < SETTINGS.burst; i += 4)
      await Promise.all(Array.from({ length: Math.min(4, SETTINGS.burst - i) }, post));
    worker = await startWorkerProcess(url);
    const workerPid = worker.pid ?? 0;
    const database = new URL(url).pathname.slice(1);
    const pgBefore = await postgresWork(db, database);
    const drained = await withCpu(
      {
        worker: () => processCpuMs(workerPid),
        postgres: () => postgresCpuMs(database),
        redis: redisCpuMs,
        receiver: () => processCpuMs(process.pid),
      },
      async () => {
        await settle(receiver, SETTINGS.burst * HOOKS);
        return { count: receiver.arrivals.length };
      },
    );
    const burst = tally(receiver.arrivals, SETTINGS.burst * HOOKS);
    // The backends report their counts within a second of their last transaction.
    await new Promise((r) => setTimeout(r, 1_500));
    const pgAfter = await postgresWork(db, database);
    const times = receiver.arrivals.map((a) => a.at);
    const ours = burst.received / ((Math.max(...times) - Math.min(...times)) / 1000);
    receiver.reset();
    const bare = await withCpu({ 'bench (loop and receiver)': () => processCpuMs(process.pid) }, async () => {
      const loop = await bareSignedLoop(
        `${receiver.url}/bare`,
        secrets[0] ?? '',
        sample,
        burst.expected,
        SETTINGS.concurrency,
      );
      return { ...loop, count: burst.expected };
    });
    const ratio = ours / bare.perSecond;
    const burstOk = burst.missing === 0 && burst.twice === 0;
    const throughputOk = burstOk && ratio >= GOAL_BARE_RATIO && bare.errors === 0;
    log(
      `pipeline ${fmt(ours)} deliveries/s (${burst.received} of ${burst.expected}, twice ${burst.twice}, missing ${burst.missing}) | ` +
        `bare signed fetch loop ${fmt(bare.perSecond)}/s (${bare.errors} errors) | ratio ${fmt(ratio * 100, 0)} %`,
    );
    log(`CPU ms per delivery: pipeline ${cpuText(drained.cpuPerOp)} | bare ${cpuText(bare.cpuPerOp)}`);
    const perDelivery = (n: number) => fmt(n / Math.max(1, burst.received), 2);
    log(
      `PostgreSQL per delivery: ${perDelivery(pgAfter.transactions - pgBefore.transactions)} transactions, ` +
        `${perDelivery(pgAfter.rows - pgBefore.rows)} rows written (inserted, updated, deleted)`,
    );

    failed = !(latencyOk && throughputOk);
    log(`\n=== summary (load average now ${loadavg()[0]?.toFixed(1)})`);
    log(
      `goals: every delivery exactly once, p95 ≤ ${GOAL_P95_MS} ms; pipeline ≥ ${GOAL_BARE_RATIO * 100} % of the bare loop`,
    );
    log(
      `latency   exactly once ${exactlyOnce ? 'yes' : 'NO'}, p95 ${fmt(p95, 0)} ms: ${latencyOk ? 'PASS' : 'FAIL'} | ` +
        `throughput ${fmt(ours)}/s vs bare ${fmt(bare.perSecond)}/s = ${fmt(ratio * 100, 0)} %: ${throughputOk ? 'PASS' : 'FAIL'}`,
    );
    await clean();
  } finally {
    if (worker) await stopApiProcess(worker);
    if (api) await stopApiProcess(api.child);
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
    await receiver.close();
    await removeRedisKeys(QUEUE_PREFIX);
    await db.destroy();
  }
  return { failed };
}
