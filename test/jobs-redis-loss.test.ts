import test from 'ava';
import { Redis } from 'ioredis';
import { DATATYPE, emptyDatastream, emptyTrack } from '../shared/tracking/activities/data.ts';
import { createActivity } from '../shared/tracking/activities/store.ts';
import { drainOutbox } from './helpers/outbox.ts';
import { insertTrackingUser } from './helpers/records.ts';
import { PrivateRedis } from './helpers/redis-server.ts';
import { startTrackingApi } from './helpers/tracking.ts';
import { WorkerProcess } from './helpers/worker-process.ts';

/**
 * Redis loses its data in the middle of the writes (FLUSHALL, then a restart of a redis-server
 * without persistence): every job the writes caused still runs, and its effect is there once.
 * Each write creates a tracking activity without streams (as POST /v2/activities does), which
 * causes two jobs: its records and its thumbnail.
 */
// The 1,000 writes (2,000 jobs); the jobs themselves (placeholder rendering, records
// queries) bound the test's time, not the faults.
const WRITES = 1000;
const USERS = 20;
const RUNNING = 121;

const redis = await PrivateRedis.create();
await redis.start();
// Polls close together and a reconciler that looks for lost jobs after 2 s keep the test short;
// production defaults are in the README.
const api = await startTrackingApi({ env: { REDIS_URL: redis.url, OUTBOX_POLL_MS: '50' } });
const { db } = api.database;
const workerEnv = {
  WORKER_QUEUES: 'records,thumbnails',
  OUTBOX_POLL_MS: '50',
  OUTBOX_RECONCILE_AFTER_S: '2',
};
const workers = [WorkerProcess.of(api.config, workerEnv), WorkerProcess.of(api.config, workerEnv)];
test.after.always(async () => {
  await Promise.all(workers.map((w) => w.stop()));
  await api.close();
  await redis.stop();
});

async function flushall() {
  const client = new Redis(redis.port, '127.0.0.1', { maxRetriesPerRequest: 1 });
  await client.flushall();
  client.disconnect();
}

test(`Redis flushed, then restarted empty, in the middle of ${WRITES} writes: every job runs, once in effect`, async (t) => {
  await Promise.all(workers.map((w) => w.started()));
  const users: string[] = [];
  for (let i = 0; i < USERS; i++) users.push(await insertTrackingUser(db));
  const started = Date.now();
  let written = 0;
  const faults: string[] = [];
  const ids: string[] = [];
  // The write POST /v2/activities makes once its body is read (through HTTP the test would
  // measure the API's parsing, not the pipeline: the same rows, several times slower).
  const post = async (n: number) => {
    const u = users[n % USERS] as string;
    const row = await createActivity(db, u, {
      userId: u,
      userDeviceId: null,
      connectorId: null,
      comment: null,
      userSession: null,
      images: [],
      tags: null,
      location: null,
      content: {
        sportId: RUNNING,
        name: null,
        startdate: new Date(Date.UTC(2026, 0, 1) + n * 3_600_000),
        duration: 1800 + n,
        summaries: new Map([[DATATYPE.DISTANCE, 5000 + n]]),
        datastream: emptyDatastream(),
        track: emptyTrack(),
      },
    });
    ids.push(row.id);
  };
  // Eight clients write at once; the faults strike while they do.
  let next = 0;
  const client = async () => {
    while (next < WRITES) {
      const n = next++;
      await post(n);
      written++;
      if (written === Math.round(WRITES * 0.3)) {
        faults.push(`FLUSHALL after ${written} writes`);
        await flushall();
      }
      if (written === Math.round(WRITES * 0.65)) {
        faults.push(`restart after ${written} writes`);
        await redis.stop();
        // Writes go on while Redis is down: their jobs wait in the outbox.
        setTimeout(() => void redis.start(), 1_000);
      }
    }
  };
  await Promise.all(Array.from({ length: 8 }, client));
  t.log(`${WRITES} writes in ${Date.now() - started} ms; ${faults.join(', ')}`);

  const open = await drainOutbox(db);
  t.log(`all jobs done ${Date.now() - started} ms after the first write`);
  t.is(open, 0, workers.map((w) => w.output.slice(-3_000)).join('\n---\n'));

  const outbox = await db.selectFrom('outbox').select(['queue', 'job_name', 'attempts', 'failed_at']).execute();
  t.is(outbox.length, 2 * WRITES, 'one records and one thumbnail job per write');
  t.true(
    outbox.every((r) => r.failed_at === null),
    'no job failed',
  );
  const relayedAgain = outbox.filter((r) => r.attempts > 1).length;
  t.log(`${relayedAgain} rows relayed again by the reconciler`);
  t.true(relayedAgain > 0, 'the faults did lose jobs from Redis');

  // The effects: each activity's records computed for its version, its thumbnail drawn.
  const activities = await db
    .selectFrom('activities')
    .leftJoin('activity_records_state as s', 's.activity_id', 'activities.id')
    .select(['activities.id', 'activities.version', 'activities.thumbnail', 's.version as recordsVersion'])
    .where('activities.id', 'in', ids)
    .execute();
  t.is(activities.length, WRITES);
  t.deepEqual(
    activities.filter((a) => a.recordsVersion !== a.version),
    [],
    'records computed for every activity',
  );
  t.deepEqual(
    activities.filter((a) => a.thumbnail === null),
    [],
    'a thumbnail for every activity',
  );
  // Once in effect: each user's distance record is their best activity's, whatever ran twice.
  for (const [i, u] of users.entries()) {
    const record = await db
      .selectFrom('user_records')
      .select(['value'])
      .where('user_id', '=', u)
      .where('type', '=', 'all')
      .where('datatype_id', '=', DATATYPE.DISTANCE)
      .execute();
    const best = 5000 + (WRITES - USERS + i);
    t.deepEqual(
      record.map((r) => Number(r.value)),
      [best],
      `user ${i}`,
    );
  }
});
