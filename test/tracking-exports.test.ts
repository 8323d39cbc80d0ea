import { execFile } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, readFile, rm, stat, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import test from 'ava';
import { Queue } from 'bullmq';
import { sql } from 'kysely';
import yauzl from 'yauzl';
import { ConfigError, loadConfig } from '../shared/config.ts';
import { createLogger } from '../shared/observability/logger.ts';
import { createRedis } from '../shared/queue/connection.ts';
import { job } from '../shared/queue/jobs.ts';
import { enqueueInTransaction } from '../shared/queue/outbox.ts';
import { activityFields } from '../shared/tracking/activities/fields.ts';
import { cleanupExports, ORPHAN_FILE_AGE_S } from '../shared/tracking/exports/cleanup.ts';
import { buildExport } from '../shared/tracking/exports/job.ts';
import { type ExportRow, exportStoragePath, MAX_EXPORTS_PER_USER } from '../shared/tracking/exports/store.ts';
import { ensureTrackingUser } from '../shared/tracking/users/store.ts';
import type { TypedJob } from '../workers/processor.ts';
import { cleanupIntervalSeconds, EXPORTS_CLEANUP_SCHEDULER_ID, userExport } from '../workers/processors/exports.ts';
import { startWorkers } from '../workers/worker.ts';
import { startTrackingApi, type TrackingTestUser } from './helpers/tracking.ts';

const run = promisify(execFile);
const GPX_XSD = 'test/fixtures/tracking/schemas/gpx-1.1.xsd';

// PUBLIC_URL is the server's own URL, so the `url` an export answers can be fetched as is.
const api = await startTrackingApi({ publicUrl: true, env: { EXPORT_TTL_S: '3600' } });
const { db } = api.database;
const workers = await startWorkers({ ...api.config, WORKER_QUEUES: ['exports'], OUTBOX_POLL_MS: 50 });
test.after.always(async () => {
  await workers.close();
  await api.close();
  await rm(api.config.STORAGE_DIR, { recursive: true, force: true });
});

type Body = Record<string, unknown>;
const me = (u: TrackingTestUser) => `/v2/users/${u.ldid}`;

/** An activity of `u` through the API: `n` seconds at 1 Hz, with a GPS track and heart rate when `track`. */
async function activityOf(u: TrackingTestUser, startdate: string, options: { track?: boolean; name?: string } = {}) {
  const datastream: Body = {};
  const locations: Body = {};
  if (options.track)
    for (let s = 0; s < 5; s++) {
      datastream[String(s)] = { '1': 120 + s, '5': s * 3.5 };
      locations[String(s)] = { latitude: 50.6292 + s * 1e-5, longitude: 3.0573 + s * 1e-5, elevation: 21 + s };
    }
  const res = await api.call('POST', '/activities', u, {
    body: {
      name: options.name ?? 'Run',
      user: me(u),
      sport: '/v2/sports/121',
      startdate,
      duration: 4,
      dataSummaries: { '5': 14, '24': 4 },
      ...(options.track ? { datastream, locations } : {}),
    },
  });
  if (res.status !== 201) throw new Error(`POST /activities answered ${res.status}: ${JSON.stringify(res.body)}`);
  return res.body as Body & { id: string };
}

/**
 * A pending export of `u` written without its outbox job, so these tests run the job themselves
 * (with the job, the worker of this file would take it at once).
 */
async function exportWithoutJob(u: TrackingTestUser): Promise<ExportRow> {
  await ensureTrackingUser(db, { accountId: u.id, ldid: u.ldid, claims: {} });
  return db
    .insertInto('tracking_exports')
    .values({
      id: randomBytes(16).toString('hex'),
      user_id: u.ldid,
      download_token: randomBytes(32).toString('base64url'),
      activity_count: null,
      file_path: null,
      error: null,
      started_at: null,
      finished_at: null,
      expires_at: null,
    })
    .returningAll()
    .executeTakeFirstOrThrow();
}

const waitFor = async <T>(read: () => Promise<T>, done: (value: T) => boolean, ms = 20_000): Promise<T> => {
  const end = Date.now() + ms;
  let value = await read();
  while (!done(value) && Date.now() < end) {
    await new Promise((r) => setTimeout(r, 50));
    value = await read();
  }
  return value;
};

/** Requests an export of `u` and waits until the worker finished it. */
async function exportDone(u: TrackingTestUser) {
  const res = await api.call('POST', '/exports', u);
  if (res.status !== 201) throw new Error(`POST /exports answered ${res.status}: ${JSON.stringify(res.body)}`);
  return waitFor(
    async () => (await api.call('GET', `/exports/${res.body.id}`, u)).body as Body,
    (e) => e.status === 'done' || e.status === 'failed',
  );
}

/** Every entry of a zip, read with yauzl (another implementation than the writer's). */
function unzip(data: Buffer): Promise<Map<string, Buffer>> {
  return new Promise((resolve, reject) => {
    yauzl.fromBuffer(data, { lazyEntries: true, strictFileNames: true, validateEntrySizes: true }, (err, zip) => {
      if (err || !zip) return reject(err);
      const entries = new Map<string, Buffer>();
      zip.on('error', reject);
      zip.on('end', () => resolve(entries));
      zip.on('entry', (entry: yauzl.Entry) => {
        zip.openReadStream(entry, (e, stream) => {
          if (e || !stream) return reject(e);
          const chunks: Buffer[] = [];
          stream.on('data', (c: Buffer) => chunks.push(c));
          stream.on('end', () => {
            entries.set(entry.fileName, Buffer.concat(chunks));
            zip.readEntry();
          });
        });
      });
      zip.readEntry();
    });
  });
}

async function download(url: string) {
  const res = await fetch(url);
  return { res, data: Buffer.from(await res.arrayBuffer()) };
}

/** xmllint against the official GPX 1.1 schema; rejects naming the line on an invalid file. */
async function validateGpx(t: { true: (v: boolean, m?: string) => void }, name: string, gpx: Buffer) {
  const dir = await mkdtemp(path.join(tmpdir(), 'export-gpx-'));
  try {
    const file = path.join(dir, 'a.gpx');
    await writeFile(file, gpx);
    const { stderr } = await run('xmllint', ['--noout', '--schema', GPX_XSD, file]);
    t.true(/validates/.test(stderr), `${name}: ${stderr}`);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

const violations = (body: { violations: { propertyPath: string }[] }) => body.violations.map((v) => v.propertyPath);

test('EXPORT_TTL_S: one day by default, 60 s to 30 days', (t) => {
  t.is(loadConfig({}).EXPORT_TTL_S, 86_400);
  t.is(loadConfig({ EXPORT_TTL_S: '60' }).EXPORT_TTL_S, 60);
  for (const bad of ['59', '2592001', 'daily', '1.5'])
    t.throws(() => loadConfig({ EXPORT_TTL_S: bad }), { instanceOf: ConfigError, message: /EXPORT_TTL_S/ });
});

test('an export end to end: requested, built by the worker, downloaded without credentials; a schema-valid GPX per activity and activities.json', async (t) => {
  const u = await api.user();
  const a = await activityOf(u, '2024-05-02T07:00:05+02:00', { track: true, name: 'Track & <field>' });
  const b = await activityOf(u, '2024-05-01T06:30:00+00:00');
  const c = await activityOf(u, '2024-05-03T18:00:00-03:00', { track: true });

  const res = await api.call('POST', '/exports', u);
  t.is(res.status, 201, JSON.stringify(res.body));
  t.regex(res.headers.get('content-type') ?? '', /^application\/ld\+json/);
  const e = res.body as Body & { id: string };
  t.regex(e.id, /^[0-9a-f]{32}$/);
  t.is(res.headers.get('location'), `${api.config.PUBLIC_URL}/v2/exports/${e.id}`);
  t.like(e, {
    '@context': '/v2/contexts/Export',
    '@id': `/v2/exports/${e.id}`,
    '@type': 'Export',
    user: me(u),
    format: 'gpx',
    status: 'pending',
    progress: 0,
    activityCount: null,
    size: null,
    url: null,
    error: null,
    startedAt: null,
    finishedAt: null,
    expiresAt: null,
  });

  const done = await waitFor(
    async () => (await api.call('GET', `/exports/${e.id}`, u)).body as Body,
    (x) => x.status === 'done',
  );
  t.like(done, { status: 'done', progress: 1, activityCount: 3, error: null });
  t.true((done.size as number) > 0);
  const finished = Date.parse(done.finishedAt as string);
  t.is(Date.parse(done.expiresAt as string) - finished, 3600 * 1000, 'expires EXPORT_TTL_S after it finished');
  t.true(Date.parse(done.startedAt as string) <= finished);
  const url = done.url as string;
  t.regex(url, new RegExp(`^${api.config.PUBLIC_URL}/v2/exports/${e.id}/download\\?token=[A-Za-z0-9_-]{43}$`));

  const { res: got, data } = await download(url);
  t.is(got.status, 200);
  t.is(got.headers.get('content-type'), 'application/zip');
  t.is(Number(got.headers.get('content-length')), done.size as number);
  t.is(data.length, done.size as number);
  t.regex(
    got.headers.get('content-disposition') ?? '',
    /^attachment; filename="activities-\d{4}-\d{2}-\d{2}-[0-9a-f]{8}\.zip"$/,
  );
  t.is(got.headers.get('cache-control'), 'private, no-store');

  const entries = await unzip(data);
  // Oldest start first, named by the start in UTC and the id; activities.json last.
  t.deepEqual(
    [...entries.keys()],
    [
      `gpx/2024-05-01_063000_${b.id}.gpx`,
      `gpx/2024-05-02_050005_${a.id}.gpx`,
      `gpx/2024-05-03_210000_${c.id}.gpx`,
      'activities.json',
    ],
  );
  for (const [name, content] of entries) if (name.endsWith('.gpx')) await validateGpx(t, name, content);
  const gpxA = entries.get(`gpx/2024-05-02_050005_${a.id}.gpx`)?.toString() ?? '';
  t.is((gpxA.match(/<trkpt /g) ?? []).length, 5);
  t.regex(gpxA, /<name>Track &amp; &lt;field&gt;<\/name>/);
  t.regex(gpxA, /<gpxtpx:hr>124<\/gpxtpx:hr>/);

  // activities.json: each activity as the API answers it in plain JSON, without its streams.
  const summaries = JSON.parse(entries.get('activities.json')?.toString() ?? '') as Body[];
  const expected = [];
  for (const activity of [b, a, c]) {
    const one = await api.call('GET', `/activities/${activity.id}`, u, { headers: { accept: 'application/json' } });
    const { datastream: _d, locations: _l, ...fields } = one.body as Body;
    expected.push(fields);
  }
  t.deepEqual(summaries, expected);

  // The list shows it; the BullMQ job's progress ended at every activity handled.
  const list = await api.call('GET', '/exports', u);
  t.is(list.status, 200);
  t.deepEqual(
    (list.body['hydra:member'] as Body[]).map((x) => x.id),
    [e.id],
  );
  t.is(list.body['hydra:totalItems'], 1);
});

test('a user without activities gets a valid zip holding an empty activities.json array', async (t) => {
  const u = await api.user();
  const done = await exportDone(u);
  t.like(done, { status: 'done', progress: 1, activityCount: 0 });
  const { res, data } = await download(done.url as string);
  t.is(res.status, 200);
  const entries = await unzip(data);
  t.deepEqual([...entries.keys()], ['activities.json']);
  t.deepEqual(JSON.parse(entries.get('activities.json')?.toString() ?? ''), []);
});

test("another user's export answers 404 everywhere; the link needs its exact token; no credentials is a 401", async (t) => {
  const owner = await api.user();
  const other = await api.user();
  await activityOf(owner, '2024-06-01T08:00:00+00:00');
  const done = await exportDone(owner);
  const id = done.id as string;

  for (const [method, p] of [
    ['GET', `/exports/${id}`],
    ['DELETE', `/exports/${id}`],
  ] as const) {
    const res = await api.call(method, p, other);
    t.is(res.status, 404, `${method} ${p}`);
    t.is(res.body['@type'], 'hydra:Error');
  }
  t.deepEqual((await api.call('GET', '/exports', other)).body['hydra:member'], []);
  t.is((await api.call('POST', `/users/${owner.ldid}/export_personal_data`, other)).status, 404);
  for (const p of ['/exports', `/exports/${id}`]) t.is((await api.call('GET', p, null)).status, 401);
  t.is((await api.call('POST', '/exports', null)).status, 401);
  t.is((await api.call('GET', '/exports/not-an-id', owner)).status, 404);

  const url = new URL(done.url as string);
  const token = url.searchParams.get('token') as string;
  const at = (q: string) => fetch(`${api.config.PUBLIC_URL}/v2/exports/${id}/download${q}`);
  const wrong = `${token.slice(0, -1)}${token.endsWith('A') ? 'B' : 'A'}`;
  for (const q of [`?token=${wrong}`, `?token=${token}x`, '?token=short']) {
    const res = await at(q);
    t.is(res.status, 404, q);
    t.is(((await res.json()) as Body)['@type'], 'hydra:Error');
  }
  const missing = await at('');
  t.is(missing.status, 422);
  t.deepEqual(violations((await missing.json()) as never), ['token']);
  // Another export's id with this token: the token belongs to one export only.
  const second = await exportDone(other);
  t.is((await fetch(`${api.config.PUBLIC_URL}/v2/exports/${second.id}/download?token=${token}`)).status, 404);
  t.is((await at(`?token=${token}`)).status, 200);
});

test('one export at a time, at most MAX_EXPORTS_PER_USER held (409); DELETE removes the row and the file', async (t) => {
  const u = await api.user();
  await ensureTrackingUser(db, { accountId: u.id, ldid: u.ldid, claims: {} });
  // A pending export (written directly: the worker would finish it too quickly to be seen).
  const pending = await exportWithoutJob(u);
  const busy = await api.call('POST', '/exports', u);
  t.is(busy.status, 409);
  t.regex(busy.body.detail as string, new RegExp(`already in progress: /v2/exports/${pending.id}`));
  await db.deleteFrom('tracking_exports').where('id', '=', pending.id).execute();

  const ids: string[] = [];
  for (let i = 0; i < MAX_EXPORTS_PER_USER; i++) ids.push((await exportDone(u)).id as string);
  const full = await api.call('POST', '/exports', u);
  t.is(full.status, 409);
  t.regex(full.body.detail as string, /delete one/);

  const first = ids[0] as string;
  const file = path.join(api.config.STORAGE_DIR, exportStoragePath(first));
  t.true((await stat(file)).isFile());
  const { url } = (await api.call('GET', `/exports/${first}`, u)).body as { url: string };
  t.is((await api.call('DELETE', `/exports/${first}`, u)).status, 204);
  await t.throwsAsync(() => stat(file), { code: 'ENOENT' });
  t.is((await api.call('GET', `/exports/${first}`, u)).status, 404);
  t.is((await fetch(url)).status, 404);
  t.is((await api.call('POST', '/exports', u)).status, 201, 'room for one more');
});

test('the request body is optional; format gpx is the only one; unknown members are refused', async (t) => {
  const u = await api.user();
  const bad = await api.call('POST', '/exports', u, { body: { format: 'tcx', activities: [] } });
  t.is(bad.status, 422);
  t.deepEqual(violations(bad.body as never).sort(), ['activities', 'format']);
  const ok = await api.call('POST', '/exports', u, { body: { format: 'gpx', status: 'done', '@type': 'Export' } });
  t.is(ok.status, 201, JSON.stringify(ok.body));
  t.like(ok.body, { format: 'gpx', status: 'pending' });
});

test('the v2.26 path POST /v2/users/{id}/export_personal_data starts an export of the caller', async (t) => {
  const u = await api.user();
  await activityOf(u, '2024-07-01T08:00:00+00:00');
  const res = await api.call('POST', `/users/${u.ldid}/export_personal_data`, u);
  t.is(res.status, 201, JSON.stringify(res.body));
  t.like(res.body, { '@type': 'Export', '@context': '/v2/contexts/Export', status: 'pending', user: me(u) });
  t.is(res.headers.get('location'), `${api.config.PUBLIC_URL}/v2/exports/${res.body.id}`);
  const done = await waitFor(
    async () => (await api.call('GET', `/exports/${res.body.id}`, u)).body as Body,
    (x) => x.status === 'done',
  );
  t.is(done.activityCount, 1);
});

// Serial: the cleanup deletes every expired export, so two tests running it must not overlap.
test.serial(
  'an expired link answers 410; the cleanup job deletes the row and the file, then the link is a 404',
  async (t) => {
    const u = await api.user();
    await activityOf(u, '2024-08-01T08:00:00+00:00');
    const done = await exportDone(u);
    const id = done.id as string;
    const file = path.join(api.config.STORAGE_DIR, exportStoragePath(id));
    await db
      .updateTable('tracking_exports')
      .set({ expires_at: sql<Date>`now() - interval '1 second'` })
      .where('id', '=', id)
      .execute();

    const gone = await fetch(done.url as string);
    t.is(gone.status, 410);
    t.like(await gone.json(), { '@type': 'hydra:Error', status: 410 });
    const read = (await api.call('GET', `/exports/${id}`, u)).body as Body;
    t.like(read, { status: 'expired', url: null });
    t.true((await stat(file)).isFile(), 'the file waits for the cleanup');

    // The scheduled job, enqueued once more through the outbox (the worker scheduled it at start).
    await enqueueInTransaction(db, job('exports', 'cleanup-expired', { requestedBy: new Date().toISOString() }));
    const row = await waitFor(
      () => db.selectFrom('tracking_exports').select('id').where('id', '=', id).executeTakeFirst(),
      (r) => r === undefined,
    );
    t.is(row, undefined);
    // The row goes first, then its file (a crash in between leaves a file the sweep removes).
    const fileLeft = await waitFor(
      () =>
        stat(file).then(
          () => true,
          () => false,
        ),
      (exists) => !exists,
    );
    t.false(fileLeft);
    t.is((await fetch(done.url as string)).status, 404);
    t.is((await api.call('GET', `/exports/${id}`, u)).status, 404);
  },
);

test.serial(
  'the cleanup fails exports stuck in progress for a day, and sweeps old files no row names and old temporary files',
  async (t) => {
    const u = await api.user();
    await ensureTrackingUser(db, { accountId: u.id, ldid: u.ldid, claims: {} });
    const stuck = await exportWithoutJob(u);
    await db
      .updateTable('tracking_exports')
      .set({ created_at: sql<Date>`now() - interval '25 hours'`, status: 'running' })
      .where('id', '=', stuck.id)
      .execute();

    // A new request is not blocked by it: the stuck one is failed first.
    const fresh = await api.call('POST', '/exports', u);
    t.is(fresh.status, 201, JSON.stringify(fresh.body));
    t.like((await api.call('GET', `/exports/${stuck.id}`, u)).body, {
      status: 'failed',
      error: 'the export did not finish in time',
    });

    const storage = await mkdtemp(path.join(tmpdir(), 'export-cleanup-'));
    t.teardown(() => rm(storage, { recursive: true, force: true }));
    const folder = path.join(storage, 'exports');
    await mkdir(folder, { recursive: true });
    const old = new Date(Date.now() - (ORPHAN_FILE_AGE_S + 60) * 1000);
    const orphan = 'a'.repeat(32);
    const files = {
      oldOrphan: `${orphan}.zip`,
      newOrphan: `${'b'.repeat(32)}.zip`,
      oldTemp: `${fresh.body.id}.zip.0a1b2c3d4e5f.tmp`,
      oldKnown: `${stuck.id}.zip`,
      other: 'notes.txt',
    };
    for (const name of Object.values(files)) await writeFile(path.join(folder, name), 'x');
    for (const name of [files.oldOrphan, files.oldTemp, files.oldKnown, files.other])
      await utimes(path.join(folder, name), old, old);
    const result = await cleanupExports(db, storage, 3600);
    t.is(result.orphanFiles, 2);
    const left = async (name: string) =>
      stat(path.join(folder, name)).then(
        () => true,
        () => false,
      );
    t.false(await left(files.oldOrphan));
    t.false(await left(files.oldTemp));
    t.true(await left(files.newOrphan), 'too recent');
    t.true(await left(files.oldKnown), 'its row is still there');
    t.true(await left(files.other), 'not an export file');
  },
);

test('progress moves activity by activity, in the job and in the row; the export holds the activities created before it', async (t) => {
  const u = await api.user();
  await ensureTrackingUser(db, { accountId: u.id, ldid: u.ldid, claims: {} });
  for (let day = 1; day <= 4; day++) await activityOf(u, `2024-09-0${day}T08:00:00+00:00`, { track: day % 2 === 0 });
  const row = await exportWithoutJob(u);
  await activityOf(u, '2024-09-05T08:00:00+00:00');

  const storage = await mkdtemp(path.join(tmpdir(), 'export-progress-'));
  t.teardown(() => rm(storage, { recursive: true, force: true }));
  const seen: { handled: number; total: number; stored: number }[] = [];
  const outcome = await buildExport(db, row.id, {
    storageDir: storage,
    ttlSeconds: 3600,
    summaryOf: activityFields,
    onProgress: async (p) => {
      const stored = await db
        .selectFrom('tracking_exports')
        .select(['processed_count', 'status'])
        .where('id', '=', row.id)
        .executeTakeFirstOrThrow();
      t.is(stored.status, 'running');
      seen.push({ ...p, stored: stored.processed_count });
    },
  });
  t.like(outcome, { status: 'done', activities: 4 });
  t.deepEqual(
    seen.map((s) => [s.handled, s.total]),
    [
      [1, 4],
      [2, 4],
      [3, 4],
      [4, 4],
    ],
  );
  // The row follows one step behind the callback (it is written after it): 0, 1, 2, 3.
  t.deepEqual(
    seen.map((s) => s.stored),
    [0, 1, 2, 3],
  );
  const stored = await db.selectFrom('tracking_exports').selectAll().where('id', '=', row.id).executeTakeFirstOrThrow();
  t.like(stored, { status: 'done', processed_count: 4, activity_count: 4, attempts: 1 });
});

test('idempotent: a rerun of a done export does nothing; a rebuild writes the same bytes; a deleted one is skipped', async (t) => {
  const u = await api.user();
  await ensureTrackingUser(db, { accountId: u.id, ldid: u.ldid, claims: {} });
  await activityOf(u, '2024-10-01T08:00:00+00:00', { track: true });
  await activityOf(u, '2024-10-02T08:00:00+00:00');
  const row = await exportWithoutJob(u);
  const storage = await mkdtemp(path.join(tmpdir(), 'export-rerun-'));
  t.teardown(() => rm(storage, { recursive: true, force: true }));
  const options = { storageDir: storage, ttlSeconds: 3600, summaryOf: activityFields };
  const file = path.join(storage, exportStoragePath(row.id));
  const digest = async () =>
    createHash('sha256')
      .update(await readFile(file))
      .digest('hex');

  t.like(await buildExport(db, row.id, options), { status: 'done', activities: 2 });
  const first = await digest();
  t.like(await buildExport(db, row.id, options), { status: 'skipped', reason: 'export already done' });

  // As after a crash mid-run: the job runs again from the start and writes the same archive.
  await db
    .updateTable('tracking_exports')
    .set({ status: 'running', file_path: null, expires_at: null })
    .where('id', '=', row.id)
    .execute();
  await new Promise((r) => setTimeout(r, 1100)); // a different second: entries carry the request's time, not the run's
  t.like(await buildExport(db, row.id, options), { status: 'done', activities: 2 });
  t.is(await digest(), first);

  await db.deleteFrom('tracking_exports').where('id', '=', row.id).execute();
  t.like(await buildExport(db, row.id, options), { status: 'skipped', reason: 'export deleted' });
});

test('the last failed attempt marks the export failed; an earlier one leaves it to the retry', async (t) => {
  const u = await api.user();
  await ensureTrackingUser(db, { accountId: u.id, ldid: u.ldid, claims: {} });
  const row = await exportWithoutJob(u);
  // STORAGE_DIR is a file: the archive's folder cannot be made.
  const dir = await mkdtemp(path.join(tmpdir(), 'export-fail-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const notADir = path.join(dir, 'file');
  await writeFile(notADir, 'x');
  const deps = {
    config: { ...api.config, STORAGE_DIR: notADir },
    db,
    logger: createLogger('silent', 'test'),
  };
  const jobAt = (attemptsMade: number) =>
    ({
      data: { exportId: row.id },
      attemptsMade,
      opts: { attempts: 5 },
      updateProgress: async () => {},
    }) as unknown as TypedJob<'exports', 'user-export'>;
  const status = async () =>
    await db
      .selectFrom('tracking_exports')
      .select(['status', 'error'])
      .where('id', '=', row.id)
      .executeTakeFirstOrThrow();

  await t.throwsAsync(() => userExport(jobAt(0), deps));
  t.is((await status()).status, 'running');
  await t.throwsAsync(() => userExport(jobAt(4), deps));
  t.deepEqual(await status(), { status: 'failed', error: 'the archive could not be built' });
  const read = (await api.call('GET', `/exports/${row.id}`, u)).body as Body;
  t.like(read, { status: 'failed', url: null, error: 'the archive could not be built' });
  t.truthy(read.expiresAt, 'a failed export expires too');
  // The user may ask again at once.
  t.is((await api.call('POST', '/exports', u)).status, 201);
});

test('paging of the list: newest first, limit at most 100', async (t) => {
  const u = await api.user();
  const a = await exportDone(u);
  const b = await exportDone(u);
  const page1 = await api.call('GET', '/exports?limit=1', u);
  t.deepEqual(
    (page1.body['hydra:member'] as Body[]).map((x) => x.id),
    [b.id],
  );
  t.is(page1.body['hydra:totalItems'], 2);
  const page2 = await api.call('GET', '/exports?limit=1&page=2', u);
  t.deepEqual(
    (page2.body['hydra:member'] as Body[]).map((x) => x.id),
    [a.id],
  );
  const bad = await api.call('GET', '/exports?limit=101', u);
  t.is(bad.status, 422);
  t.deepEqual(violations(bad.body as never), ['limit']);
});

test('every query path of the exports has its index', async (t) => {
  const plans: string[] = [];
  await db.transaction().execute(async (trx) => {
    await sql`set local enable_seqscan = off`.execute(trx);
    for (const query of [
      sql`select * from tracking_exports where user_id = 'u' order by created_at desc, id desc limit 30`,
      sql`select id from tracking_exports where expires_at <= now() limit 500`,
      sql`select id from tracking_exports where status in ('pending', 'running') and created_at < now() - interval '1 day'`,
      sql`select id, startdate from activities where user_id = 'u' and (startdate, id) > (now(), 'x') order by startdate, id limit 200`,
    ]) {
      const { rows } = await sql<{ 'QUERY PLAN': string }>`explain ${query}`.execute(trx);
      plans.push(rows.map((r) => r['QUERY PLAN']).join('\n'));
    }
  });
  for (const plan of plans) t.notRegex(plan, /Seq Scan/, plan);
  t.regex(plans[0] ?? '', /tracking_exports_user_idx/);
  t.regex(plans[1] ?? '', /tracking_exports_expiry_idx/);
  t.regex(plans[2] ?? '', /tracking_exports_stale_idx/);
});

test('the worker of the queue schedules the cleanup: hourly, or every EXPORT_TTL_S when shorter', async (t) => {
  const redis = createRedis(api.config.REDIS_URL, 'producer');
  const queue = new Queue('exports', { connection: redis, prefix: api.config.QUEUE_PREFIX });
  t.teardown(async () => {
    await queue.close();
    redis.disconnect();
  });
  const scheduler = await queue.getJobScheduler(EXPORTS_CLEANUP_SCHEDULER_ID);
  t.is(scheduler?.every, 3600 * 1000);
  t.is(scheduler?.name, 'cleanup-expired');
  t.is(cleanupIntervalSeconds({ EXPORT_TTL_S: 600 }), 600);
  t.is(cleanupIntervalSeconds({ EXPORT_TTL_S: 86_400 }), 3600);
});

test('two requests at the same moment start one export; the other is a 409', async (t) => {
  const u = await api.user();
  await api.call('GET', '/me/', u); // the tracking user exists before the race
  const answers = await Promise.all([1, 2, 3].map(() => api.call('POST', '/exports', u)));
  t.deepEqual(answers.map((a) => a.status).sort(), [201, 409, 409]);
  const rows = await db.selectFrom('tracking_exports').select('id').where('user_id', '=', u.ldid).execute();
  t.is(rows.length, 1);
});

test('an export deleted while its job runs leaves no file behind', async (t) => {
  const u = await api.user();
  await ensureTrackingUser(db, { accountId: u.id, ldid: u.ldid, claims: {} });
  await activityOf(u, '2024-11-01T08:00:00+00:00', { track: true });
  await activityOf(u, '2024-11-02T08:00:00+00:00');
  const row = await exportWithoutJob(u);
  const storage = await mkdtemp(path.join(tmpdir(), 'export-deleted-'));
  t.teardown(() => rm(storage, { recursive: true, force: true }));
  const outcome = await buildExport(db, row.id, {
    storageDir: storage,
    ttlSeconds: 3600,
    summaryOf: activityFields,
    onProgress: async ({ handled }) => {
      if (handled === 1) await db.deleteFrom('tracking_exports').where('id', '=', row.id).execute();
    },
  });
  t.like(outcome, { status: 'skipped', reason: 'export finished or deleted while building' });
  await t.throwsAsync(() => stat(path.join(storage, exportStoragePath(row.id))), { code: 'ENOENT' });
});
