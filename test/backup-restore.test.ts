import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import test from 'ava';
import { createDb } from '../shared/db/database.ts';
import { DATATYPE, emptyDatastream, emptyTrack } from '../shared/tracking/activities/data.ts';
import { runScript } from './helpers/cli.ts';
import { waitFor } from './helpers/failing-jobs.ts';
import { drainOutbox } from './helpers/outbox.ts';
import { dump, emptyDatabase, restore } from './helpers/pg-backup.ts';
import { insertTrackingUser, storeActivity } from './helpers/records.ts';
import { startTrackingApi } from './helpers/tracking.ts';
import { WorkerProcess } from './helpers/worker-process.ts';

/**
 * docs/operations.md, "Backup and restore", step by step: a dump taken while jobs wait, the jobs
 * then run against the old database, and the dump is restored into an empty database next to the
 * same Redis, which holds those jobs completed under the same ids. Every acknowledged write's
 * jobs run again against the restored database: its records and thumbnails are there.
 */
const api = await startTrackingApi({ env: { OUTBOX_POLL_MS: '50' } });
const { db } = api.database;
const queues = api.api.context.queues;
const workerEnv = { WORKER_QUEUES: 'records,thumbnails', OUTBOX_POLL_MS: '50', OUTBOX_RECONCILE_AFTER_S: '300' };
const worker = WorkerProcess.of(api.config, workerEnv);
const dir = await mkdtemp(path.join(tmpdir(), 'sb-backup-'));
test.after.always(async () => {
  await worker.stop();
  await api.close();
  await rm(dir, { recursive: true, force: true });
});

test('restored next to the old Redis (its jobs completed under the same ids): every job runs again', async (t) => {
  await worker.started();
  const user = await insertTrackingUser(db);
  // The jobs wait while the dump is taken: the queues are paused.
  for (const q of ['records', 'thumbnails'] as const) await queues.get(q).pause();
  const ids: string[] = [];
  for (let i = 0; i < 10; i++) {
    const row = await storeActivity(db, user, {
      sportId: 121,
      name: null,
      startdate: new Date(Date.UTC(2026, 2, 1) + i * 3_600_000),
      duration: 1800 + i,
      summaries: new Map([[DATATYPE.DISTANCE, 5000 + i]]),
      datastream: emptyDatastream(),
      track: emptyTrack(),
    });
    ids.push(row.id);
  }
  const sent = () => db.selectFrom('outbox').select('id').where('sent_at', 'is', null).execute();
  t.true(await waitFor(async () => (await sent()).length === 0, 30_000));

  // 1. pg_dump -Fc (the runbook's backup step).
  const file = path.join(dir, 'sports.dump');
  const dumped = await dump(api.config.DATABASE_URL, file);
  t.is(dumped.code, 0, dumped.stderr);
  // The jobs then run against the old database: Redis now holds them completed.
  for (const q of ['records', 'thumbnails'] as const) await queues.get(q).resume();
  t.is(await drainOutbox(db), 0, worker.output.slice(-3_000));
  await worker.stop();

  // 2. Restore into an empty database, then npm run migrate (which checks the schema).
  const target = await emptyDatabase();
  t.teardown(() => target.drop());
  const restored = await restore(target.url, file);
  t.is(restored.code, 0, restored.stderr);
  const migrate = await runScript('scripts/migrate.ts', [], { DATABASE_URL: target.url });
  t.is(migrate.code, 0, migrate.stderr);
  t.regex(migrate.stdout, /schema up to date/);
  const { db: restoredDb } = createDb(target.url, 2);
  t.teardown(() => restoredDb.destroy());
  const before = await restoredDb
    .selectFrom('activities')
    .select('thumbnail')
    .where('id', 'in', ids)
    .where('thumbnail', 'is not', null)
    .execute();
  t.is(before.length, 0, 'the dump was taken before the thumbnails');

  // 3. Workers on the restored database, next to the same Redis.
  const next = WorkerProcess.of({ ...api.config, DATABASE_URL: target.url }, workerEnv);
  t.teardown(() => next.stop());
  await next.started();
  t.is(await drainOutbox(restoredDb), 0, next.output.slice(-3_000));
  t.regex(next.output, /new epoch/);
  const activities = await restoredDb
    .selectFrom('activities')
    .leftJoin('activity_records_state as s', 's.activity_id', 'activities.id')
    .select(['activities.id', 'activities.version', 'activities.thumbnail', 's.version as recordsVersion'])
    .where('activities.id', 'in', ids)
    .execute();
  t.is(activities.length, 10);
  t.deepEqual(
    activities.filter((a) => a.thumbnail === null || a.recordsVersion !== a.version).map((a) => a.id),
    [],
    'records and thumbnail of every activity',
  );
  const best = await restoredDb
    .selectFrom('user_records')
    .select('value')
    .where('user_id', '=', user)
    .where('type', '=', 'all')
    .where('datatype_id', '=', DATATYPE.DISTANCE)
    .execute();
  t.deepEqual(
    best.map((r) => Number(r.value)),
    [5009],
  );
});
