import { spawn } from 'node:child_process';
import { cpus, loadavg } from 'node:os';
import { sql } from 'kysely';
import { issueApiKey } from '../shared/accounts/api-keys.ts';
import { registerClient } from '../shared/accounts/clients.ts';
import { issueOperatorToken } from '../shared/auth/operator-tokens.ts';
import { ensureDatabase } from '../shared/db/create-database.ts';
import { createDb, type Db } from '../shared/db/database.ts';
import { migrateToLatest } from '../shared/db/migrate.ts';
import { seedReferentials } from '../shared/db/referentials.ts';
import { DATATYPE } from '../shared/tracking/activities/data.ts';
import { loadRecordWays } from '../shared/tracking/records/records-store.ts';
import { benchDatabaseUrl, envNumber, ROOT, startApiProcess, startWorkerProcess, stopApiProcess } from './harness.ts';
import { quantile } from './stats.ts';
import { computeBench, loopChecksum } from './tracking-records-compute.ts';
import { benchUser, loadActivities, RUNNING, runSamples } from './tracking-records-data.ts';

/**
 * bench/tracking-records (docs/tracking-records.md, "Benchmark"):
 * 1. the records computation of one activity (bestEfforts: summaries, distance series, nine
 *    running distances) on 1-hour and 24-hour 1 Hz activities, from the distance stream and from
 *    the GPS track, against a loop that only sums the arrays it reads, in alternating rounds, CPU
 *    time. Goal: ≤ 20 × the loop.
 * 2. the time from POST /v2/activities to the activity's records being stored, under a sustained
 *    rate of posts, with the API and a records worker as their own processes. Goal: p95 ≤ 1 s.
 * 3. `npm run records:recompute -- --all --force --wait` on 10,000 stored activities with two
 *    worker processes: activities per second (reported; no goal).
 */

const SETTINGS = {
  rounds: Math.max(1, Math.round(envNumber('BENCH_ROUNDS', 5))),
  postRate: envNumber('BENCH_RECORDS_POST_RATE', 10),
  postSeconds: envNumber('BENCH_DURATION_S', 15),
  activities: Math.round(envNumber('BENCH_RECORDS_ACTIVITIES', 10_000)),
  workers: Math.max(1, Math.round(envNumber('BENCH_RECORDS_WORKERS', 2))),
  parts: (process.env.BENCH_RECORDS_PARTS ?? 'compute,latency,recompute').split(','),
};
const GOAL_P95_MS = 1000;
/** Bump when the stored activities' generator changes: the data is reloaded. */
const GENERATOR = 'records-v1';

// ---- 2. POST to records, under load ----

async function latencyBench(db: Db, url: string, log: (s: string) => void): Promise<boolean> {
  log(
    `\n--- 2. POST /v2/activities (1 h at 1 Hz, distance stream) to records stored: ${SETTINGS.postRate} posts/s for ${SETTINGS.postSeconds} s`,
  );
  const api = await startApiProcess(url, 'tracking', 16);
  const worker = startWorkerProcess(url, { WORKER_QUEUES: 'records' });
  try {
    const client = await registerClient(db, {
      client_name: 'records bench',
      redirect_uris: ['https://bench.test/cb'],
      firstParty: true,
    });
    const { api_key: apiKey } = await issueApiKey(db, client.client_id, 'bench');
    const users = await Promise.all(Array.from({ length: 20 }, (_, i) => benchUser(db, `post${i}`)));
    const tokens = await Promise.all(
      users.map((u) =>
        issueOperatorToken(
          db,
          { issuer: api.url, AUTH_AUDIENCE: 'sports-api' },
          {
            accountId: u.accountId,
            clientId: client.client_id,
            ttlSeconds: 3600,
          },
        ),
      ),
    );
    const bodies = users.map((u, i) => {
      const s = runSamples(3600, 500 + i);
      const datastream: Record<string, Record<string, number>> = {};
      for (let k = 0; k < s.elapsed.length; k++)
        datastream[String(s.elapsed[k])] = { [DATATYPE.DISTANCE]: Math.round((s.distance[k] as number) * 10) / 10 };
      return (n: number) =>
        JSON.stringify({
          user: `/v2/users/${u.ldid}`,
          sport: `/v2/sports/${RUNNING}`,
          startdate: new Date(Date.UTC(2026, 0, 1) + n * 60_000).toISOString().replace('Z', '+00:00'),
          duration: 3600,
          dataSummaries: { [DATATYPE.DISTANCE]: Math.round(s.distance.at(-1) as number) },
          datastream,
        });
    });
    const post = async (n: number): Promise<{ id: string; sent: number; answered: number }> => {
      const u = n % users.length;
      const sent = performance.now();
      const res = await fetch(`${api.url}/v2/activities`, {
        method: 'POST',
        headers: { authorization: `Bearer ${tokens[u]}`, 'x-api-key': apiKey, 'content-type': 'application/ld+json' },
        body: (bodies[u] as (n: number) => string)(n),
      });
      const body = (await res.json()) as { id?: string };
      if (res.status !== 201 || !body.id)
        throw new Error(`POST answered ${res.status}: ${JSON.stringify(body).slice(0, 300)}`);
      return { id: body.id, sent, answered: performance.now() };
    };
    // Warm up the API, the worker (its first jobs compile the computation) and the connections,
    // until the warm-up's records are stored: the measure is of the sustained state.
    const warm = await Promise.all(Array.from({ length: 40 }, (_, n) => post(100_000 + n)));
    for (const deadline = performance.now() + 60_000; performance.now() < deadline; ) {
      const { rows } = await sql<{ n: number }>`
        select count(*)::int as n from activity_records_state where activity_id = any(${warm.map((w) => w.id)})`.execute(
        db,
      );
      if (rows[0]?.n === warm.length) break;
      await new Promise((r) => setTimeout(r, 100));
    }

    const waiting = new Map<string, { sent: number; answered: number }>();
    const measured: string[] = [];
    const latencies: number[] = [];
    const answers: number[] = [];
    const afterAnswer: number[] = [];
    let postsDone = 0;
    let errors = 0;
    let polling = true;
    const poller = (async () => {
      while (polling || waiting.size > 0) {
        if (waiting.size > 0) {
          const ids = [...waiting.keys()];
          const { rows } = await sql<{ activity_id: string }>`
            select activity_id from activity_records_state where activity_id = any(${ids})`.execute(db);
          const now = performance.now();
          for (const r of rows) {
            const { sent, answered } = waiting.get(r.activity_id) as { sent: number; answered: number };
            latencies.push(now - sent);
            answers.push(answered - sent);
            afterAnswer.push(now - answered);
            waiting.delete(r.activity_id);
          }
        }
        await new Promise((r) => setTimeout(r, 10));
      }
    })();
    const total = Math.round(SETTINGS.postRate * SETTINGS.postSeconds);
    const started = performance.now();
    const inflight: Promise<void>[] = [];
    for (let n = 0; n < total; n++) {
      const due = started + (n * 1000) / SETTINGS.postRate;
      const wait = due - performance.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      inflight.push(
        post(n).then(
          ({ id, sent, answered }) => {
            waiting.set(id, { sent, answered });
            measured.push(id);
            postsDone++;
          },
          (error) => {
            errors++;
            log(`  ${(error as Error).message}`);
          },
        ),
      );
    }
    await Promise.all(inflight);
    const deadline = performance.now() + 60_000;
    while (waiting.size > 0 && performance.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    polling = false;
    await poller;
    const sorted = latencies.sort((a, b) => a - b);
    const stat = (xs: number[]) => {
      const s = [...xs].sort((a, b) => a - b);
      return `p50 ${quantile(s, 0.5).toFixed(0)} ms, p95 ${quantile(s, 0.95).toFixed(0)} ms`;
    };
    const p95 = quantile(sorted, 0.95);
    const ok = errors === 0 && waiting.size === 0 && p95 <= GOAL_P95_MS;
    log(
      `posts: ${postsDone} of ${total} (${errors} errors, ${waiting.size} without records after 60 s), load average ${loadavg()[0]?.toFixed(1)}`,
    );
    log(
      `POST → records: p50 ${quantile(sorted, 0.5).toFixed(0)} ms, p95 ${p95.toFixed(0)} ms, p99 ${quantile(sorted, 0.99).toFixed(0)} ms, max ${(sorted.at(-1) ?? Number.NaN).toFixed(0)} ms  ${ok ? 'PASS' : 'FAIL'} (goal p95 ≤ ${GOAL_P95_MS} ms)`,
    );
    log(`  of which the POST until its 201: ${stat(answers)}; from the 201 to the records: ${stat(afterAnswer)}`);
    // Where the time after the commit goes, by the database's clock: outbox row to BullMQ, BullMQ to stored records.
    const { rows: stages } = await sql<{ relay: number; job: number }>`
      select extract(epoch from o.sent_at - o.created_at) * 1000 as relay,
        extract(epoch from s.computed_at - o.sent_at) * 1000 as job
      from outbox o join activity_records_state s on o.job_id = 'records-' || s.activity_id || '-v1'
      where o.queue = 'records' and o.job_name = 'activity-changed' and s.activity_id = any(${measured})`.execute(db);
    log(
      `  by the database's clock: commit to BullMQ (relay) ${stat(stages.map((r) => Number(r.relay)))}; BullMQ to records stored ${stat(stages.map((r) => Number(r.job)))}`,
    );
    return ok;
  } finally {
    await stopApiProcess(api.child);
    await stopApiProcess(worker);
    // The next parts count the stored activities: leave only theirs.
    await db.deleteFrom('accounts').where('email', 'like', 'bench-records-post%').execute();
  }
}

// ---- 3. recompute --all throughput ----

async function recomputeBench(db: Db, url: string, log: (s: string) => void): Promise<void> {
  log(`\n--- 3. npm run records:recompute -- --all --force --wait, ${SETTINGS.workers} worker processes`);
  await sql`create table if not exists bench_meta (key text primary key, value text not null)`.execute(db);
  const mark = `${GENERATOR}:${SETTINGS.activities}`;
  const loaded = await sql<{ value: string }>`select value from bench_meta where key = 'records'`.execute(db);
  const existing = Number(
    (await db.selectFrom('activities').select(db.fn.countAll().as('n')).executeTakeFirstOrThrow()).n,
  );
  if (loaded.rows[0]?.value === mark && existing === SETTINGS.activities)
    log(`data: reusing the ${existing} activities loaded`);
  else {
    await sql`delete from bench_meta where key = 'records'`.execute(db);
    await loadActivities(db, SETTINGS.activities, log);
    await sql`insert into bench_meta values ('records', ${mark})`.execute(db);
  }
  const workers = Array.from({ length: SETTINGS.workers }, () => startWorkerProcess(url, { WORKER_QUEUES: 'records' }));
  try {
    const child = spawn(process.execPath, ['scripts/records-recompute.ts', '--all', '--force', '--wait'], {
      cwd: ROOT,
      env: { ...process.env, DATABASE_URL: url, MIGRATE_ON_START: 'false' },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    child.stdout.on('data', (d) => {
      out += d;
    });
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
    log(out.trimEnd().replace(/^/gm, '  | '));
    if (code !== 0) throw new Error(`records:recompute exited with ${code}`);
    log(`load average ${loadavg()[0]?.toFixed(1)}`);
  } finally {
    for (const w of workers) await stopApiProcess(w);
  }
}

export async function run(): Promise<{ failed: boolean }> {
  const log = (s: string) => console.log(s);
  const url = benchDatabaseUrl('BENCH_RECORDS_DATABASE_URL', 'sports_bench_records');
  // The API and the workers of this run share their own queues (never a developer's `sb`).
  process.env.QUEUE_PREFIX = `bench-records-${process.pid}`;
  log(
    `tracking-records benchmark: parts ${SETTINGS.parts.join(', ')}; ${cpus().length} CPUs, load average ${loadavg()[0]?.toFixed(1)}`,
  );
  let failed = false;
  if (SETTINGS.parts.includes('compute') && !computeBench(log, SETTINGS.rounds)) failed = true;
  if (!SETTINGS.parts.includes('latency') && !SETTINGS.parts.includes('recompute')) return { failed };
  log(`database: ${url.replace(/\/\/[^@]*@/, '//')}`);
  await ensureDatabase(url);
  const { db } = createDb(url, 4);
  try {
    await migrateToLatest(db);
    await seedReferentials(db);
    if ((await loadRecordWays(db)).size === 0) throw new Error('no datatype is a record: the referential is missing');
    if (SETTINGS.parts.includes('latency') && !(await latencyBench(db, url, log))) failed = true;
    if (SETTINGS.parts.includes('recompute')) await recomputeBench(db, url, log);
  } finally {
    await db.destroy();
  }
  log(`(checksum ${loopChecksum() > 0 ? 'ok' : 'zero'})`);
  return { failed };
}
