import type { ChildProcess } from 'node:child_process';
import { cpus, loadavg } from 'node:os';
import { buffer } from 'node:stream/consumers';
import { ZipFile } from 'yazl';
import { issueApiKey } from '../shared/accounts/api-keys.ts';
import { registerClient } from '../shared/accounts/clients.ts';
import { issueOperatorToken } from '../shared/auth/operator-tokens.ts';
import { ensureDatabase } from '../shared/db/create-database.ts';
import { createDb, type Db } from '../shared/db/database.ts';
import { migrateToLatest } from '../shared/db/migrate.ts';
import { seedReferentials } from '../shared/db/referentials.ts';
import { ensureTrackingUser } from '../shared/tracking/users/store.ts';
import {
  benchDatabaseUrl,
  envNumber,
  removeRedisKeys,
  startApiProcess,
  startWorkerProcess,
  stopApiProcess,
} from './harness.ts';
import { fmt, quantile } from './stats.ts';

/**
 * bench/tracking-bulk-import (docs/tracking-files.md, "Bulk import"): BENCH_BULK_FILES (1,000)
 * one-hour GPX files at 1 Hz (3,600 points with elevation and heart rate) in one zip, imported end
 * to end by one worker process (queues imports, records and thumbnails; IMPORTS_CONCURRENCY 2;
 * its WORKER_NICE is BENCH_BULK_WORKER_NICE, 0 by default):
 * from the POST until the bulk job is done and every job it caused has run. Beside it, in the
 * same run, the synchronous one-file path: BENCH_BULK_SYNC_FILES (100) files of the same kind
 * POSTed one by one by two clients (the cores), until their records and thumbnails have run too.
 * Goal: the bulk import at least as fast per file. While the bulk import runs, a client reads the
 * athlete's activity list (`GET /v2/activities`, the read apps make most), 20 reads a second: its
 * p99 against the same reads on the idle API. Goal ≤ 2 × idle.
 */

const SETTINGS = {
  files: Math.max(10, Math.round(envNumber('BENCH_BULK_FILES', 1000))),
  syncFiles: Math.max(10, Math.round(envNumber('BENCH_BULK_SYNC_FILES', 100))),
  idleS: envNumber('BENCH_BULK_IDLE_S', 10),
  workerNice: Math.round(envNumber('BENCH_BULK_WORKER_NICE', 0)),
};
const GOAL_PER_FILE_RATIO = 1;
const GOAL_P99_RATIO = 2;
const QUEUE_PREFIX = 'sbbenchbulk';
const POINTS = 3600;

/** A one-hour GPX at 1 Hz, its start `index` hours after 2020-01-01 (distinct files, distinct starts). */
function hourGpx(index: number): Buffer {
  const start = Date.UTC(2020, 0, 1) + index * 3_600_000 * 5;
  const points: string[] = [];
  let lat = 45 + (index % 50) / 1000;
  let lon = 5 + (index % 70) / 1000;
  for (let t = 0; t < POINTS; t++) {
    lat += 0.00002 * Math.sin(t / 300);
    lon += 0.00002 * Math.cos(t / 300);
    const time = new Date(start + t * 1000).toISOString().replace('.000Z', 'Z');
    points.push(
      `<trkpt lat="${lat.toFixed(7)}" lon="${lon.toFixed(7)}"><ele>${(300 + 50 * Math.sin(t / 500)).toFixed(1)}</ele><time>${time}</time><extensions><gpxtpx:TrackPointExtension><gpxtpx:hr>${120 + (t % 40)}</gpxtpx:hr></gpxtpx:TrackPointExtension></extensions></trkpt>`,
    );
  }
  return Buffer.from(
    `<?xml version="1.0" encoding="UTF-8"?><gpx version="1.1" creator="bench" xmlns="http://www.topografix.com/GPX/1/1" xmlns:gpxtpx="http://www.garmin.com/xmlschemas/TrackPointExtension/v1"><trk><name>Run ${index}</name><type>running</type><trkseg>${points.join('')}</trkseg></trk></gpx>`,
  );
}

async function zipOf(first: number, count: number): Promise<Buffer> {
  const zip = new ZipFile();
  for (let i = first; i < first + count; i++) zip.addBuffer(hourGpx(i), `activities/${i}.gpx`);
  zip.end();
  return buffer(zip.outputStream);
}

/** Until every outbox row is done (the jobs caused so far have run). */
async function drained(db: Db, deadlineMs = 3_600_000): Promise<void> {
  const end = Date.now() + deadlineMs;
  for (;;) {
    const open = await db
      .selectFrom('outbox')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('done_at', 'is', null)
      .executeTakeFirstOrThrow();
    if (Number(open.n) === 0) return;
    if (Date.now() > end) throw new Error(`${open.n} outbox rows still open`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** Reads a second, as an app's users make them: paced, so that the reader takes no core of its own. */
const READS_PER_S = 20;

/** Reads of the list, READS_PER_S, until `until` resolves (or for `until` seconds): their latencies, sorted. */
async function listReads(read: () => Promise<void>, until: Promise<unknown> | number): Promise<Float64Array> {
  const out: number[] = [];
  let over = false;
  if (typeof until === 'number') setTimeout(() => (over = true), until * 1000);
  else void until.finally(() => (over = true));
  while (!over) {
    const t = performance.now();
    await read();
    const took = performance.now() - t;
    out.push(took);
    await new Promise((r) => setTimeout(r, Math.max(0, 1000 / READS_PER_S - took)));
  }
  return Float64Array.from(out).sort();
}

export async function run(): Promise<{ failed: boolean }> {
  const url = benchDatabaseUrl('BENCH_TRACKING_DATABASE_URL', 'sports_bench_bulk');
  const log = (s: string) => console.log(s);
  log(`tracking-bulk-import benchmark on ${url.replace(/\/\/[^@]*@/, '//')}`);
  log(
    `settings: ${SETTINGS.files} one-hour GPX files in one zip against ${SETTINGS.syncFiles} posted one by one; WORKER_NICE ${SETTINGS.workerNice}; ` +
      `${cpus().length} CPUs, load average ${loadavg()[0]?.toFixed(1)}`,
  );
  await ensureDatabase(url);
  const { db } = createDb(url, 2);
  let api: { url: string; child: ChildProcess } | undefined;
  let worker: ChildProcess | undefined;
  const previousPrefix = process.env.QUEUE_PREFIX;
  let failed = false;
  try {
    await migrateToLatest(db);
    await seedReferentials(db);
    const email = 'bench-bulk@example.org';
    const account =
      (await db.selectFrom('accounts').select(['id', 'ldid']).where('email', '=', email).executeTakeFirst()) ??
      (await db
        .insertInto('accounts')
        .values({ email, first_name: 'Bench', last_name: 'Bulk', roles: ['user'] })
        .returning(['id', 'ldid'])
        .executeTakeFirstOrThrow());
    await ensureTrackingUser(db, { accountId: account.id, ldid: account.ldid, claims: {} });
    await db.deleteFrom('activities').where('user_id', '=', account.ldid).execute();
    await db.deleteFrom('jobs').where('user_id', '=', account.ldid).execute();
    await db.deleteFrom('outbox').execute();
    await removeRedisKeys(QUEUE_PREFIX);
    const client = await registerClient(db, {
      client_name: 'bench bulk',
      redirect_uris: ['https://bench.test/cb'],
      firstParty: true,
    });
    const { api_key: apiKey } = await issueApiKey(db, client.client_id, 'bench');
    process.env.QUEUE_PREFIX = QUEUE_PREFIX;
    api = await startApiProcess(url, 'tracking', 8);
    worker = startWorkerProcess(url, {
      WORKER_QUEUES: 'imports,records,thumbnails',
      IMPORTS_CONCURRENCY: '2',
      WORKER_NICE: String(SETTINGS.workerNice),
      QUEUE_PREFIX,
    });
    const token = await issueOperatorToken(
      db,
      { issuer: api.url, AUTH_AUDIENCE: 'sports-api' },
      { accountId: account.id, clientId: client.client_id, ttlSeconds: 7200 },
    );
    const headers = { authorization: `Bearer ${token}`, 'x-api-key': apiKey };
    const base = api.url;
    const readList = async () => {
      const res = await fetch(`${base}/v2/activities?page=1`, { headers });
      await res.arrayBuffer();
      if (res.status !== 200) throw new Error(`list: ${res.status}`);
    };

    // The sync path: files posted one by one by two clients, then their records and thumbnails.
    const files = Array.from({ length: SETTINGS.syncFiles }, (_, i) => hourGpx(50_000 + i));
    const syncStarted = performance.now();
    let next = 0;
    const poster = async () => {
      while (next < files.length) {
        const body = files[next++] as Buffer;
        const res = await fetch(`${base}/v2/file_import/activities?sport=121`, {
          method: 'POST',
          headers: { ...headers, 'content-type': 'application/gpx+xml' },
          body: new Uint8Array(body),
        });
        const text = await res.text();
        if (res.status !== 201) throw new Error(`sync import: ${res.status} ${text.slice(0, 300)}`);
      }
    };
    await Promise.all([poster(), poster()]);
    const syncAnswered = performance.now() - syncStarted;
    await drained(db);
    const syncMs = performance.now() - syncStarted;
    log(
      `sync: ${SETTINGS.syncFiles} files answered in ${fmt(syncAnswered / 1000)} s, with their jobs in ${fmt(syncMs / 1000)} s: ${fmt(syncMs / SETTINGS.syncFiles)} ms per file`,
    );

    // The list read on the idle API.
    const idle = await listReads(readList, SETTINGS.idleS);

    // The bulk import, the list read beside it.
    const zip = await zipOf(0, SETTINGS.files);
    log(`zip: ${SETTINGS.files} files, ${fmt(zip.length / 1e6)} MB`);
    const bulkStarted = performance.now();
    const posted = await fetch(`${base}/v2/file_import/activities?sport=121`, {
      method: 'POST',
      headers: { ...headers, 'content-type': 'application/zip' },
      body: new Uint8Array(zip),
    });
    const job = (await posted.json()) as { id: string };
    if (posted.status !== 202) throw new Error(`bulk import: ${posted.status} ${JSON.stringify(job)}`);
    const postedMs = performance.now() - bulkStarted;
    const finished = (async () => {
      for (;;) {
        const row = await db
          .selectFrom('jobs')
          .select(['state', 'done_count', 'failed_count'])
          .where('id', '=', job.id)
          .executeTakeFirstOrThrow();
        if (row.state !== 'pending' && row.state !== 'running') return row;
        await new Promise((r) => setTimeout(r, 200));
      }
    })();
    const busy = await listReads(readList, finished);
    const ended = await finished;
    await drained(db);
    const bulkMs = performance.now() - bulkStarted;
    log(
      `bulk: 202 after ${fmt(postedMs)} ms; job ${ended.state} (${ended.done_count} imported, ${ended.failed_count} failed), with its jobs in ${fmt(bulkMs / 1000)} s: ${fmt(bulkMs / SETTINGS.files)} ms per file`,
    );
    if (ended.state !== 'done' || ended.done_count !== SETTINGS.files) failed = true;

    const perFileRatio = syncMs / SETTINGS.syncFiles / (bulkMs / SETTINGS.files);
    const idleP99 = quantile(idle, 0.99);
    const busyP99 = quantile(busy, 0.99);
    const p99Ratio = busyP99 / idleP99;
    log('\n| | per file (ms) | list p50 (ms) | list p99 (ms) | list reads |');
    log('|---|---|---|---|---|');
    log(`| sync, one file per POST | ${fmt(syncMs / SETTINGS.syncFiles)} | | | |`);
    log(`| idle API | | ${fmt(quantile(idle, 0.5))} | ${fmt(idleP99)} | ${idle.length} |`);
    log(
      `| bulk zip | ${fmt(bulkMs / SETTINGS.files)} | ${fmt(quantile(busy, 0.5))} | ${fmt(busyP99)} | ${busy.length} |`,
    );
    const perFileOk = perFileRatio >= GOAL_PER_FILE_RATIO;
    const p99Ok = p99Ratio <= GOAL_P99_RATIO;
    log(
      `\nbulk speed per file / sync: ${fmt(perFileRatio)} (goal ≥ ${GOAL_PER_FILE_RATIO}) ${perFileOk ? 'PASS' : 'FAIL'}`,
    );
    log(`list p99 during the bulk / idle: ${fmt(p99Ratio)} (goal ≤ ${GOAL_P99_RATIO}) ${p99Ok ? 'PASS' : 'FAIL'}`);
    failed ||= !perFileOk || !p99Ok;
  } finally {
    if (api) await stopApiProcess(api.child);
    if (worker) await stopApiProcess(worker);
    if (previousPrefix === undefined) delete process.env.QUEUE_PREFIX;
    else process.env.QUEUE_PREFIX = previousPrefix;
    await removeRedisKeys(QUEUE_PREFIX);
    await db.destroy();
  }
  return { failed };
}
