import { createHash } from 'node:crypto';
import { mkdir, mkdtemp, readFile, rm, stat, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import test from 'ava';
import { Queue } from 'bullmq';
import { sql } from 'kysely';
import { createLogger } from '../shared/observability/logger.ts';
import { createRedis } from '../shared/queue/connection.ts';
import { job } from '../shared/queue/jobs.ts';
import { NO_MARK } from '../shared/queue/outbox.ts';
import { enqueueInTransaction } from '../shared/queue/outbox-write.ts';
import { activityFields } from '../shared/tracking/activities/fields.ts';
import { cleanupExports, ORPHAN_FILE_AGE_S } from '../shared/tracking/exports/cleanup.ts';
import { buildExport } from '../shared/tracking/exports/job.ts';
import { exportStoragePath } from '../shared/tracking/exports/store.ts';
import { ensureTrackingUser } from '../shared/tracking/users/store.ts';
import type { TypedJob } from '../workers/processor.ts';
import { cleanupIntervalSeconds, EXPORTS_CLEANUP_SCHEDULER_ID, userExport } from '../workers/processors/exports.ts';
import { startWorkers } from '../workers/worker.ts';
import { startTrackingApi } from './helpers/tracking.ts';
import { type Body, exportCalls, waitFor } from './helpers/tracking-exports.ts';

// PUBLIC_URL is the server's own URL, so the `url` an export answers can be fetched as is.
const api = await startTrackingApi({ publicUrl: true, env: { EXPORT_TTL_S: '3600' } });
const { db } = api.database;
const workers = await startWorkers({ ...api.config, WORKER_QUEUES: ['exports'], OUTBOX_POLL_MS: 50 });
test.after.always(async () => {
  await workers.close();
  await api.close();
  await rm(api.config.STORAGE_DIR, { recursive: true, force: true });
});

const { activityOf, exportWithoutJob, exportDone } = exportCalls(api);

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
    markDone: NO_MARK,
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
