import test from 'ava';
import { loadConfig } from '../shared/config.ts';
import { requestExport } from '../shared/tracking/exports/store.ts';
import { testConfig, uniquePrefix } from './helpers/app.ts';
import { createTestDatabase } from './helpers/db.ts';
import { insertActivity, insertTrackingUser } from './helpers/records.ts';
import { WorkerProcess } from './helpers/worker-process.ts';

/**
 * A worker killed with SIGKILL in the middle of a long job (an export): another worker takes the
 * job up (the default lock and stall settings add up to less than 5 s), and a job longer than the
 * lock keeps its lock (it is not taken up twice while it runs).
 */
const ACTIVITIES = 60;
const POINTS = 3_600;

const database = await createTestDatabase();
const { db } = database;
const config = testConfig({ DATABASE_URL: database.url, QUEUE_PREFIX: uniquePrefix() });
const workers: WorkerProcess[] = [];
test.after.always(async () => {
  await Promise.all(workers.map((w) => w.stop('SIGKILL')));
  await database.drop();
});

/** An hour at 1 Hz around a point. */
const track = (seed: number) => ({
  elapsed: Array.from({ length: POINTS }, (_, i) => i),
  latitude: Array.from({ length: POINTS }, (_, i) => 45 + seed * 0.001 + Math.sin(i / 300) * 0.01),
  longitude: Array.from({ length: POINTS }, (_, i) => 5 + Math.cos(i / 300) * 0.01),
});

const exportRow = (id: string) =>
  db
    .selectFrom('tracking_exports')
    .select(['status', 'attempts', 'processed_count', 'started_at', 'finished_at'])
    .where('id', '=', id)
    .executeTakeFirstOrThrow();

/** The backends waiting for a lock on `table` of this database. */
const lockWaiters = async (table: string) =>
  (
    await database.pool.query<{ pid: number }>(
      `select pid from pg_locks
        where not granted and database = (select oid from pg_database where datname = current_database())
          and relation = $1::regclass`,
      [table],
    )
  ).rows.map((r) => r.pid);

/** Polls until `done`; the deadline only catches a hang. */
async function until<T>(read: () => Promise<T>, done: (v: T) => boolean, ms = 120_000): Promise<T> {
  const end = Date.now() + ms;
  let value = await read();
  while (!done(value) && Date.now() < end) {
    await new Promise((r) => setTimeout(r, 20));
    value = await read();
  }
  return value;
}

test.serial('a worker killed mid-export: its job is taken up again, and runs to its end', async (t) => {
  const defaults = loadConfig({});
  t.true(
    defaults.WORKER_LOCK_DURATION_MS + defaults.WORKER_STALLED_INTERVAL_MS < 5_000,
    'the defaults take a job up within 5 s',
  );
  const userId = await insertTrackingUser(db);
  for (let i = 0; i < ACTIVITIES; i++)
    await insertActivity(db, {
      userId,
      sportId: 121,
      startdate: new Date(Date.UTC(2026, 0, 1) + i * 86_400_000),
      track: track(i),
    });
  const env = {
    WORKER_QUEUES: 'exports',
    OUTBOX_POLL_MS: '50',
    DATABASE_URL: config.DATABASE_URL,
    QUEUE_PREFIX: config.QUEUE_PREFIX,
    REDIS_URL: config.REDIS_URL,
    STORAGE_DIR: config.STORAGE_DIR,
  };
  // Lock and stall settings: the defaults.
  const first = new WorkerProcess(env);
  workers.push(first);
  await first.started();

  const requested = await requestExport(db, userId, 'gpx', config.EXPORT_TTL_S);
  const running = await until(
    () => exportRow(requested.id),
    (r) => r.status === 'running' && r.processed_count > 0,
  );
  t.is(running.status, 'running', JSON.stringify(running));
  t.is(running.attempts, 1, JSON.stringify(running));
  // From here on the export waits on a table lock the test holds: the first worker stays in the
  // middle of it (renewing its job's lock) while the second starts, however long that takes, and
  // the second run lasts as long as the test wants.
  const hold = await database.pool.connect();
  t.teardown(() => hold.release());
  await hold.query('begin');
  await hold.query('lock table activities in access exclusive mode');
  const firstWaiting = await until(
    () => lockWaiters('activities'),
    (pids) => pids.length > 0,
  );
  const second = new WorkerProcess(env);
  workers.push(second);
  await second.started();
  t.is((await exportRow(requested.id)).status, 'running', 'still running when the worker is killed');
  const killed = Date.now();
  await first.stop('SIGKILL');

  // Taken up again: the second worker's run waits on the lock too (the killed worker's statement
  // waits on until it gets the lock and finds its client gone).
  await until(
    () => lockWaiters('activities'),
    (pids) => pids.some((pid) => !firstWaiting.includes(pid)),
  );
  const startedAgain = Date.now();
  // How soon is the defaults' business (checked above), not this test's: a busy machine is slower.
  t.log(`taken up again ${startedAgain - killed} ms after SIGKILL`);
  // Twice the lock and stall settings: a lock not renewed meanwhile would be lost, the job taken up a third time.
  await new Promise((r) => setTimeout(r, 2 * (defaults.WORKER_LOCK_DURATION_MS + defaults.WORKER_STALLED_INTERVAL_MS)));
  await hold.query('commit');
  const resumed = await until(
    () => exportRow(requested.id),
    (r) => r.attempts >= 2,
  );
  t.is(resumed.attempts, 2, second.output.slice(-3_000));

  const done = await until(
    () => exportRow(requested.id),
    (r) => r.status === 'done',
  );
  const ranFor = Date.now() - startedAgain;
  t.log(`the second run took ${ranFor} ms (lock ${defaults.WORKER_LOCK_DURATION_MS} ms)`);
  t.is(done.status, 'done', second.output.slice(-3_000));
  // Longer than the lock, yet run once: the lock was renewed all along.
  t.is(done.attempts, 2, 'not taken up a third time while it ran');
  // Only the killed worker's job stalled (logged by the worker whose stalled check found it).
  t.is(second.output.match(/"msg":"job stalled/g)?.length, 1, second.output.slice(-3_000));
  // The worker marks the row right after the handler's commit, which the export row shows first.
  const outbox = await until(
    () =>
      db
        .selectFrom('outbox')
        .select(['done_at'])
        .where('job_id', '=', `export-${requested.id}`)
        .executeTakeFirstOrThrow(),
    (row) => row.done_at !== null,
  );
  t.not(outbox.done_at, null, 'its outbox row is done');
});

test.serial('an export never holds the event loop for as long as half a lock', async (t) => {
  // No worker process may take this export: it runs here.
  await Promise.all(workers.map((w) => w.stop('SIGKILL')));
  // The lock is renewed by a timer: a handler that held the loop longer than half the lock would
  // lose it while running. The export awaits between activities; its longest stretch without
  // yielding is measured here, in this process, on an export of the same activities, in CPU time
  // of this thread: time spent waiting for a core on a busy machine is not the handler's.
  const { buildExport } = await import('../shared/tracking/exports/job.ts');
  const { activityFields } = await import('../shared/tracking/activities/fields.ts');
  const userId = await insertTrackingUser(db);
  for (let i = 0; i < 50; i++)
    await insertActivity(db, {
      userId,
      sportId: 121,
      startdate: new Date(Date.UTC(2026, 0, 1) + i * 86_400_000),
      track: track(i),
    });
  const requested = await requestExport(db, userId, 'gpx', config.EXPORT_TTL_S);
  const stretches = cpuBetweenTurns();
  const outcome = await buildExport(db, requested.id, {
    storageDir: config.STORAGE_DIR,
    ttlSeconds: config.EXPORT_TTL_S,
    summaryOf: activityFields,
  });
  const longestMs = stretches.stop();
  t.is(outcome.status, 'done');
  t.log(`longest stretch without yielding during the export: ${longestMs.toFixed(1)} ms of CPU`);
  t.true(longestMs < loadConfig({}).WORKER_LOCK_DURATION_MS / 2, `${longestMs} ms`);
});

/**
 * The longest CPU time of this thread between two turns of its event loop (a timer every
 * millisecond), from now until stop().
 */
function cpuBetweenTurns(): { stop: () => number } {
  const cpuMs = () => {
    const { user, system } = process.threadCpuUsage();
    return (user + system) / 1_000;
  };
  let last = cpuMs();
  let longest = 0;
  const timer = setInterval(() => {
    const now = cpuMs();
    longest = Math.max(longest, now - last);
    last = now;
  }, 1);
  return {
    stop: () => {
      clearInterval(timer);
      return Math.max(longest, cpuMs() - last);
    },
  };
}
