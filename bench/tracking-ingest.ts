import type { ChildProcess } from 'node:child_process';
import { cpus, loadavg } from 'node:os';
import pg from 'pg';
import { issueApiKey } from '../shared/accounts/api-keys.ts';
import { registerClient } from '../shared/accounts/clients.ts';
import { issueOperatorToken } from '../shared/auth/operator-tokens.ts';
import { ensureDatabase } from '../shared/db/create-database.ts';
import { createDb } from '../shared/db/database.ts';
import { migrateToLatest } from '../shared/db/migrate.ts';
import { seedReferentials } from '../shared/db/referentials.ts';
import { ensureTrackingUser } from '../shared/tracking/users/store.ts';
import { startBareServer } from './bare-server.ts';
import {
  type BenchRequest,
  benchDatabaseUrl,
  combineRounds,
  envNumber,
  GOAL_BARE_RATIO,
  removeRedisKeys,
  runAutocannon,
  startApiProcess,
  stopApiProcess,
} from './harness.ts';
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
import { type Json, type PlainRows, plainInsert, plainRows } from './tracking-ingest-bare.ts';

/**
 * bench/tracking-ingest: activities with their streams, through the API against plain SQL and the
 * bare server.
 * - ingest: POST /v2/activities of 1-hour activities at 1 Hz (3,600 samples of 8 datatypes and
 *   3,600 GPS points, ~0.6 MB of JSON each) against a plain INSERT of the same rows into the same
 *   tables (activity, track, datastream, channels, outbox row) in one transaction (rows built
 *   before the load), and against the bare server (bench/bare-server.ts) POSTed the same bodies,
 *   which parses each with JSON.parse, builds its rows and runs the same plain INSERT
 *   (bench/tracking-ingest-bare.ts); same number of concurrent clients, the three sides
 *   alternating in rounds. Goals: API ≥ 0.5 × plain INSERT, API ≥ 0.75 × bare.
 * - read: GET /v2/activities/{id} of one 24-hour activity at 1 Hz (86,400 samples) against
 *   reading its rows straight from SQL with the driver's defaults. Goal: a read (the median of
 *   the reads, p99 printed beside it) under 300 ms.
 */

const SETTINGS = {
  durationS: envNumber('BENCH_DURATION_S', 15),
  warmupS: envNumber('BENCH_WARMUP_S', 3),
  rounds: Math.max(1, Math.round(envNumber('BENCH_ROUNDS', 3))),
  connections: Math.max(1, Math.round(envNumber('BENCH_INGEST_CONNECTIONS', 4))),
  reads: Math.max(1, Math.round(envNumber('BENCH_READS', 30))),
};
const GOAL_INGEST_RATIO = 0.5;
const GOAL_READ_MS = 300;
/** Distinct activities the load rotates over (each POST stores a new activity). */
const VARIANTS = 8;
/** The API process's Redis keys (the outbox relay enqueues the records jobs there): removed at the end. */
const QUEUE_PREFIX = 'sbbench';

/** An activity at 1 Hz like a watch records one: heart rate, distance, speed, cadence, elevation, calories, rpm, power, GPS. */
function recording(seconds: number, seed: number): { datastream: Json; locations: Json } {
  const datastream: Json = {};
  const locations: Json = {};
  let distance = 0;
  let lat = 45 + seed / 100;
  let lon = 5 + seed / 100;
  for (let t = 0; t < seconds; t++) {
    const speed = Math.round(8000 + 4000 * Math.sin((t + seed) / 600)) / 100;
    distance = Math.round((distance + speed / 3.6) * 10) / 10;
    lat = Math.round((lat + 0.00001 * Math.sin(t / 900)) * 1e7) / 1e7;
    lon = Math.round((lon + 0.00001 * Math.cos(t / 900)) * 1e7) / 1e7;
    const elevation = Math.round((1000 + 300 * Math.sin(t / 3000)) * 10) / 10;
    datastream[t] = {
      '1': 120 + ((t + seed) % 60),
      '5': distance,
      '6': speed * 1000,
      '10': 80 + (t % 15),
      '14': elevation,
      '23': Math.floor(t / 10),
      '100': 85 + (t % 7),
      '178': 200 + (t % 50),
    };
    locations[t] = { latitude: lat, longitude: lon, elevation };
  }
  return { datastream, locations };
}

function activityBody(userIri: string, seconds: number, seed: number): Json {
  return {
    name: `Bench ${seed}`,
    user: userIri,
    sport: '/v2/sports/121',
    startdate: new Date(Date.UTC(2024, 0, 1 + seed)).toISOString().replace('.000Z', '+00:00'),
    duration: seconds,
    dataSummaries: { '5': 10_000 + seed, '24': seconds },
    ...recording(seconds, seed),
  };
}

/** Timings (ms) of `n` sequential runs of `task`, sorted. */
async function timings(n: number, task: () => Promise<unknown>): Promise<Float64Array> {
  const out = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    const t = performance.now();
    await task();
    out[i] = performance.now() - t;
  }
  return out.sort();
}

export async function run(): Promise<{ failed: boolean }> {
  const url = benchDatabaseUrl('BENCH_TRACKING_DATABASE_URL', 'sports_bench_tracking');
  const log = (s: string) => console.log(s);
  log(`tracking-ingest benchmark on ${url.replace(/\/\/[^@]*@/, '//')}`);
  log(
    `settings: ingest ${SETTINGS.durationS}s per side in ${SETTINGS.rounds} alternating rounds, warmup ${SETTINGS.warmupS}s, ` +
      `${SETTINGS.connections} concurrent clients; ${SETTINGS.reads} reads of the 24-hour activity per side; ` +
      `${cpus().length} CPUs, load average ${loadavg()[0]?.toFixed(1)}`,
  );
  await ensureDatabase(url);
  const { db } = createDb(url, 2);
  const pool = new pg.Pool({ connectionString: url, max: SETTINGS.connections + 2 });
  let api: { url: string; child: ChildProcess } | undefined;
  let bare: { url: string; child: ChildProcess } | undefined;
  let failed = false;
  const previousPrefix = process.env.QUEUE_PREFIX;
  try {
    await migrateToLatest(db);
    await seedReferentials(db);
    const email = 'bench-tracking@example.org';
    const account =
      (await db.selectFrom('accounts').select(['id', 'ldid', 'roles']).where('email', '=', email).executeTakeFirst()) ??
      (await db
        .insertInto('accounts')
        .values({ email, first_name: 'Bench', last_name: 'Tracking', roles: ['user'] })
        .returning(['id', 'ldid', 'roles'])
        .executeTakeFirstOrThrow());
    await ensureTrackingUser(db, { accountId: account.id, ldid: account.ldid, claims: {} });
    const clean = async () => {
      await pool.query('delete from activities where user_id = $1', [account.ldid]);
      await pool.query("delete from outbox where payload->>'userId' = $1", [account.ldid]);
    };
    await clean();
    const client = await registerClient(db, {
      client_name: 'bench tracking',
      redirect_uris: ['https://bench.test/cb'],
      // The operator's own client: its tokens need no user consent (docs/accounts.md).
      firstParty: true,
    });
    const { api_key: apiKey } = await issueApiKey(db, client.client_id, 'bench');

    process.env.QUEUE_PREFIX = QUEUE_PREFIX;
    api = await startApiProcess(url, 'tracking', SETTINGS.connections + 2);
    const apiUrl = api.url;
    bare = await startBareServer(
      new URL('./tracking-ingest-bare.ts', import.meta.url).href,
      'bareRoute',
      url,
      SETTINGS.connections + 2,
    );
    const bareUrl = bare.url;
    const token = await issueOperatorToken(
      db,
      { issuer: api.url, AUTH_AUDIENCE: 'sports-api' },
      {
        accountId: account.id,
        clientId: client.client_id,
        ttlSeconds: 3600,
      },
    );
    const headers = {
      authorization: `Bearer ${token}`,
      'x-api-key': apiKey,
      'content-type': 'application/ld+json',
    };
    const userIri = `/v2/users/${account.ldid}`;

    // ---- ingest
    const hour = Array.from({ length: VARIANTS }, (_, i) => activityBody(userIri, 3600, i));
    const bodies = hour.map((b) => Buffer.from(JSON.stringify(b)));
    const rows = hour.map(plainRows);
    // The load sends the same few bodies again and again: kept, not refused as duplicates.
    const posts: BenchRequest[] = bodies.map((body) => ({
      method: 'POST',
      path: '/v2/activities?duplicates=keep',
      headers,
      body,
    }));
    const postLoad = (durationS: number) => runAutocannon(apiUrl, posts, durationS, SETTINGS.connections);
    const bareLoad = (durationS: number) => runAutocannon(bareUrl, posts, durationS, SETTINGS.connections);
    log(
      `\n=== ingest: 1-hour activities at 1 Hz: 3,600 samples × 8 datatypes + 3,600 GPS points, ` +
        `${bytes(bodies[0]?.length ?? 0)} of JSON each`,
    );
    const probe = await fetch(`${api.url}/v2/activities`, { method: 'POST', headers, body: bodies[0] });
    const probeBody = (await probe.json()) as Json;
    if (probe.status !== 201) throw new Error(`probe POST answered ${probe.status}: ${JSON.stringify(probeBody)}`);
    log(
      `probe: POST → 201, trackFlag ${probeBody.trackFlag}, availableDatatypes ${JSON.stringify(probeBody.availableDatatypes)}`,
    );
    const bareProbe = await fetch(`${bareUrl}/v2/activities`, { method: 'POST', headers, body: bodies[0] });
    const bareText = await bareProbe.text();
    if (bareProbe.status !== 201) throw new Error(`the bare server answered ${bareProbe.status}: ${bareText}`);
    const bareId = (JSON.parse(bareText) as Json).id;
    const stored = (
      await pool.query<{ channels: number; points: number }>(
        `select (select count(*)::int from activity_stream_channels where activity_id = $1) as channels,
                (select points from activity_tracks where activity_id = $1) as points`,
        [bareId],
      )
    ).rows[0];
    log(`probe: bare server → 201 ${bareText}: ${stored?.points} GPS points, ${stored?.channels} channels stored`);
    const plainTask = (i: number) => plainInsert(pool, account.ldid, rows[i % rows.length] as PlainRows);
    if (SETTINGS.warmupS > 0) {
      await postLoad(SETTINGS.warmupS);
      await bareLoad(SETTINGS.warmupS);
      await closedLoop(SETTINGS.connections, SETTINGS.warmupS, plainTask);
    }
    const apiPid = api.child.pid ?? 0;
    const barePid = bare.child.pid ?? 0;
    // Only the backends of the bench database: other work on the machine's PostgreSQL is left out.
    const database = decodeURIComponent(new URL(url).pathname.slice(1));
    const parties = {
      postgres: () => postgresCpuMs(database),
      'api process': () => processCpuMs(apiPid),
      'bare process': () => processCpuMs(barePid),
      'bench process': () => processCpuMs(process.pid),
    };
    const sliceS = Math.max(1, SETTINGS.durationS / SETTINGS.rounds);
    const apiRounds: (LoadStats & { cpuPerOp: Record<string, number> })[] = [];
    const bareRounds: (LoadStats & { cpuPerOp: Record<string, number> })[] = [];
    const sqlRounds: (LoadStats & { cpuPerOp: Record<string, number> })[] = [];
    for (let r = 0; r < SETTINGS.rounds; r++) {
      // Each side starts from the same table sizes.
      await clean();
      apiRounds.push(await withCpu(parties, () => postLoad(sliceS)));
      await clean();
      bareRounds.push(await withCpu(parties, () => bareLoad(sliceS)));
      await clean();
      sqlRounds.push(await withCpu(parties, () => closedLoop(SETTINGS.connections, sliceS, plainTask)));
    }
    const viaApi = combineRounds(apiRounds);
    const viaBare = combineRounds(bareRounds);
    const viaSql = combineRounds(sqlRounds);
    const ratio = viaApi.rps / viaSql.rps;
    const bareRatio = viaApi.rps / viaBare.rps;
    const errorsOk = viaApi.errors === 0 && viaSql.errors === 0 && viaBare.errors === 0;
    const sqlOk = ratio >= GOAL_INGEST_RATIO;
    const bareOk = bareRatio >= GOAL_BARE_RATIO;
    const ingestOk = sqlOk && bareOk && errorsOk;
    log(
      `plain INSERT: ${fmt(viaSql.rps)} activities/s  p50 ${fmt(viaSql.p50)} ms  p99 ${fmt(viaSql.p99)} ms  (${viaSql.count} ok, ${viaSql.errors} errors)`,
    );
    log(`     CPU ms per activity: ${cpuText(viaSql.cpuPerOp)}`);
    log(
      `bare POST:    ${fmt(viaBare.rps)} activities/s  p50 ${fmt(viaBare.p50)} ms  p99 ${fmt(viaBare.p99)} ms  (${viaBare.count} ok, ${viaBare.errors} errors)`,
    );
    log(`     CPU ms per activity: ${cpuText(viaBare.cpuPerOp)}`);
    log(
      `API POST:     ${fmt(viaApi.rps)} activities/s  p50 ${fmt(viaApi.p50)} ms  p99 ${fmt(viaApi.p99)} ms  (${viaApi.count} ok, ${viaApi.errors} errors)`,
    );
    log(`     CPU ms per activity: ${cpuText(viaApi.cpuPerOp)}`);
    log(
      `ingest API/bare ${fmt(bareRatio * 100, 0)} % (goal ≥ ${GOAL_BARE_RATIO * 100} %): ${bareOk ? 'PASS' : 'FAIL'}; ` +
        `API/plain INSERT ${fmt(ratio * 100, 0)} % (goal ≥ ${GOAL_INGEST_RATIO * 100} %): ${sqlOk ? 'PASS' : 'FAIL'}; ` +
        `bare/plain INSERT ${fmt((viaBare.rps / viaSql.rps) * 100, 0)} %${errorsOk ? '' : '; ERRORS'}`,
    );
    await clean();

    // ---- read
    const day = JSON.stringify(activityBody(userIri, 86_400, 99));
    log(
      `\n=== read: one 24-hour activity at 1 Hz: 86,400 samples × 8 datatypes + 86,400 GPS points (${bytes(day.length)} of JSON)`,
    );
    const postStarted = performance.now();
    const posted = await fetch(`${api.url}/v2/activities`, { method: 'POST', headers, body: day });
    const postMs = performance.now() - postStarted;
    const created = (await posted.json()) as Json;
    if (posted.status !== 201) throw new Error(`POST of the 24-hour activity answered ${posted.status}`);
    log(`POST of the 24-hour activity: ${fmt(postMs, 0)} ms (one request, for scale)`);
    const id = String(created.id);
    const size = (
      await pool.query<{ rows: string }>(
        `select pg_column_size(t.track) + (select sum(pg_column_size(c."values")) from activity_stream_channels c where c.activity_id = $1)
           + (select pg_column_size(d.elapsed) from activity_datastreams d where d.activity_id = $1) as rows
         from activity_tracks t where t.activity_id = $1`,
        [id],
      )
    ).rows[0];
    log(`stored streams: ${bytes(Number(size?.rows ?? 0))} (track, elapsed, 8 channels; after TOAST compression)`);
    let bodyBytes = 0;
    const getOnce = async () => {
      const res = await fetch(`${apiUrl}/v2/activities/${id}`, { headers });
      const buf = await res.arrayBuffer();
      if (res.status !== 200) throw new Error(`GET answered ${res.status}`);
      bodyBytes = buf.byteLength;
    };
    const sqlOnce = async () => {
      // The rows as the driver returns them by default (arrays parsed from text, geometry as hex EWKB).
      await Promise.all([
        pool.query('select * from activities where id = $1', [id]),
        pool.query('select * from activity_tracks where activity_id = $1', [id]),
        pool.query('select * from activity_datastreams where activity_id = $1', [id]),
        pool.query('select * from activity_stream_channels where activity_id = $1', [id]),
      ]);
    };
    await timings(3, getOnce);
    await timings(3, sqlOnce);
    const apiTimes: number[] = [];
    const sqlTimes: number[] = [];
    // Alternating, a few at a time, so background load hits both sides.
    for (let done = 0; done < SETTINGS.reads; done += 5) {
      apiTimes.push(...(await timings(Math.min(5, SETTINGS.reads - done), getOnce)));
      sqlTimes.push(...(await timings(Math.min(5, SETTINGS.reads - done), sqlOnce)));
    }
    const a = Float64Array.from(apiTimes).sort();
    const s = Float64Array.from(sqlTimes).sort();
    const readOk = quantile(a, 0.5) < GOAL_READ_MS;
    log(`response body ${bytes(bodyBytes)}`);
    log(`SQL rows:     p50 ${fmt(quantile(s, 0.5))} ms  p99 ${fmt(quantile(s, 0.99))} ms  (${s.length} reads)`);
    log(`API GET:      p50 ${fmt(quantile(a, 0.5))} ms  p99 ${fmt(quantile(a, 0.99))} ms  (${a.length} reads)`);
    log(
      `read ratio API/SQL (p50) ${fmt(quantile(a, 0.5) / quantile(s, 0.5), 2)}×; API read p50 ${fmt(quantile(a, 0.5))} ms ` +
        `(goal < ${GOAL_READ_MS} ms): ${readOk ? 'PASS' : 'FAIL'}; p99 ${fmt(quantile(a, 0.99))} ms`,
    );
    failed = !(ingestOk && readOk);
    log(`\n=== summary (load average now ${loadavg()[0]?.toFixed(1)})`);
    log(
      `goals: ingest API/bare ≥ ${GOAL_BARE_RATIO * 100} %, API/plain INSERT ≥ ${GOAL_INGEST_RATIO * 100} %; read p50 < ${GOAL_READ_MS} ms`,
    );
    log(
      `ingest  API ${fmt(viaApi.rps)}/s p99 ${fmt(viaApi.p99, 0)} ms | bare ${fmt(viaBare.rps)}/s p99 ${fmt(viaBare.p99, 0)} ms | ` +
        `plain INSERT ${fmt(viaSql.rps)}/s p99 ${fmt(viaSql.p99, 0)} ms | API/bare ${fmt(bareRatio * 100, 0)} % ${bareOk ? 'PASS' : 'FAIL'} | ` +
        `API/plain INSERT ${fmt(ratio * 100, 0)} % ${sqlOk ? 'PASS' : 'FAIL'}${errorsOk ? '' : ' | ERRORS'}`,
    );
    log(
      `read    API p50 ${fmt(quantile(a, 0.5), 0)} ms p99 ${fmt(quantile(a, 0.99), 0)} ms | SQL p50 ${fmt(quantile(s, 0.5), 0)} ms p99 ${fmt(quantile(s, 0.99), 0)} ms | ${readOk ? 'PASS' : 'FAIL'}`,
    );
    await clean();
  } finally {
    if (api) await stopApiProcess(api.child);
    if (bare) await stopApiProcess(bare.child);
    if (previousPrefix === undefined) delete process.env.QUEUE_PREFIX;
    else process.env.QUEUE_PREFIX = previousPrefix;
    await removeRedisKeys(QUEUE_PREFIX);
    await pool.end();
    await db.destroy();
  }
  return { failed };
}
