import test from 'ava';
import { Redis } from 'ioredis';
import { JOB_QUEUES } from '../shared/queue/jobs.ts';
import { bullJobId } from '../shared/queue/outbox-epoch.ts';
import { markerKey } from '../shared/queue/redis-loss.ts';
import { DATATYPE, emptyDatastream, emptyTrack } from '../shared/tracking/activities/data.ts';
import { runScript } from './helpers/cli.ts';
import { waitFor } from './helpers/failing-jobs.ts';
import { insertTrackingUser, storeActivity } from './helpers/records.ts';
import { PrivateRedis } from './helpers/redis-server.ts';
import { startTrackingApi } from './helpers/tracking.ts';
import { WorkerProcess } from './helpers/worker-process.ts';

/**
 * Redis loses its data (FLUSHDB) while jobs wait in it: the relays see their queues' marker keys
 * gone and reconcile at once, long before the reconciler's age limit (OUTBOX_RECONCILE_AFTER_S,
 * left at its default here). Every job done before that limit shows the loss was noticed; how
 * soon (the issue's 10 s) is logged, not asserted: a busy machine must not fail it.
 */
const redis = await PrivateRedis.create();
await redis.start();
const api = await startTrackingApi({ env: { REDIS_URL: redis.url, OUTBOX_POLL_MS: '50' } });
const { db } = api.database;
const queues = api.api.context.queues;
const worker = WorkerProcess.of(api.config, {
  WORKER_QUEUES: 'records,thumbnails',
  OUTBOX_POLL_MS: '50',
  OUTBOX_RECONCILE_AFTER_S: '300',
});
test.after.always(async () => {
  await worker.stop();
  await api.close();
  await redis.stop();
});

const client = new Redis(redis.port, '127.0.0.1', { maxRetriesPerRequest: 1 });
test.after.always(() => client.disconnect());

async function writeActivities(n: number): Promise<string[]> {
  const user = await insertTrackingUser(db);
  const ids: string[] = [];
  for (let i = 0; i < n; i++) {
    const row = await storeActivity(db, user, {
      sportId: 121,
      name: null,
      startdate: new Date(Date.UTC(2026, 1, 1) + i * 3_600_000 + ids.length),
      duration: 1800 + i,
      summaries: new Map([[DATATYPE.DISTANCE, 5000 + i]]),
      datastream: emptyDatastream(),
      track: emptyTrack(),
    });
    ids.push(row.id);
  }
  return ids;
}

/** The outbox rows of these activities' jobs (one records and one thumbnail job each). */
const rowsOf = (ids: string[]) =>
  db
    .selectFrom('outbox')
    .select(['queue', 'job_id', 'epoch', 'reruns', 'sent_at', 'done_at'])
    .where((eb) => eb.or(ids.map((id) => eb('job_id', 'like', `%${id}%`))))
    .execute();

test.serial(
  'FLUSHDB while jobs wait: the worker notices at once and every job runs long before the reconciler would',
  async (t) => {
    await worker.started();
    t.true(
      await waitFor(async () => /runs without AOF/.test(worker.output), 120_000),
      'the private Redis has no AOF: said at start',
    );
    // The worker's relay has set its markers (its first look) before the loss.
    t.true(
      await waitFor(async () => (await client.exists(markerKey(queues, 'records'))) === 1, 120_000),
      worker.output.slice(-3_000),
    );
    // Jobs wait in Redis at the flush: the queues are paused (the pause goes with the data).
    for (const q of ['records', 'thumbnails'] as const) await queues.get(q).pause();
    const ids = await writeActivities(5);
    t.true(await waitFor(async () => (await rowsOf(ids)).every((r) => r.sent_at !== null), 120_000));
    t.is((await rowsOf(ids)).length, 10);

    await client.flushdb();
    const flushed = Date.now();
    // Well under OUTBOX_RECONCILE_AFTER_S (300 s): only the marker check brings them back this soon.
    t.true(
      await waitFor(async () => (await rowsOf(ids)).every((r) => r.done_at !== null), 150_000),
      worker.output.slice(-3_000),
    );
    const seconds = (Date.now() - flushed) / 1000;
    t.log(`every job done ${seconds.toFixed(1)} s after the FLUSHDB`);
    t.regex(worker.output, /marker keys missing from Redis/);

    const activities = await db
      .selectFrom('activities')
      .leftJoin('activity_records_state as s', 's.activity_id', 'activities.id')
      .select(['activities.version', 'activities.thumbnail', 's.version as recordsVersion'])
      .where('activities.id', 'in', ids)
      .execute();
    t.true(activities.every((a) => a.thumbnail !== null && a.recordsVersion === a.version));
  },
);

test.serial('npm run jobs -- reconcile relays at once the jobs Redis lost; --new-epoch under new ids', async (t) => {
  await worker.stop();
  // Only the API's relay runs now: it relays but does not reconcile.
  const ids = await writeActivities(3);
  t.true(await waitFor(async () => (await rowsOf(ids)).every((r) => r.sent_at !== null), 120_000));
  await client.flushdb();
  const env = {
    DATABASE_URL: api.config.DATABASE_URL,
    REDIS_URL: redis.url,
    QUEUE_PREFIX: api.config.QUEUE_PREFIX,
    MIGRATE_ON_START: 'false',
  };
  const run = await runScript('scripts/jobs.ts', ['reconcile'], env);
  t.is(run.code, 0, run.stderr);
  const result = JSON.parse(run.stdout);
  t.like(result, { epoch: { changed: false }, relayed: 6 });
  for (const r of await rowsOf(ids))
    t.not(await queues.get(r.queue as 'records').getJobState(r.job_id), 'unknown', `${r.job_id} is in Redis again`);
  for (const q of JOB_QUEUES) t.is(await client.exists(markerKey(queues, q)), 1, `${q} marker set`);

  const again = await runScript('scripts/jobs.ts', ['reconcile', '--new-epoch'], env);
  t.is(again.code, 0, again.stderr);
  const { epoch } = JSON.parse(again.stdout);
  t.like(epoch, { changed: true, reopened: 6 });
  // The API's relay sends the reopened rows under the new epoch's ids.
  t.true(
    await waitFor(async () => (await rowsOf(ids)).every((r) => r.sent_at !== null && r.epoch === epoch.epoch), 120_000),
  );
  for (const r of await rowsOf(ids))
    t.is(
      await queues.get(r.queue as 'records').getJobState(bullJobId(r.job_id, r.epoch, 0)),
      'waiting',
      `${r.job_id} relayed under epoch ${epoch.epoch}`,
    );
});
