import test from 'ava';
import { Queue } from 'bullmq';
import { createRedis } from '../shared/queue/connection.ts';
import { job, type OutboxJob } from '../shared/queue/jobs.ts';
import { pendingOutboxCount, relayOutboxBatch } from '../shared/queue/outbox.ts';
import { OutboxRelay } from '../shared/queue/outbox-relay.ts';
import { enqueueInTransaction } from '../shared/queue/outbox-write.ts';
import { QueueSet } from '../shared/queue/queues.ts';
import { uniquePrefix } from './helpers/app.ts';
import { createTestDatabase } from './helpers/db.ts';
import { PrivateRedis } from './helpers/redis-server.ts';

const database = await createTestDatabase();
test.after.always(() => database.drop());
const { db } = database;

/** A job of the map; its id is built from the payload (`thumb-places_p_121_img-<n>_png`). */
const thumbnailJob = (n: number) =>
  job('thumbnails', 'activity-thumbnail', { activityId: n, imagePath: `places/p/121/img-${n}.png` });

async function jobIds(url: string, prefix: string, queue: string): Promise<string[]> {
  const connection = createRedis(url, 'client');
  await new Promise((r) => connection.once('ready', r));
  const q = new Queue(queue, { connection, prefix });
  const jobs = await q.getJobs(['waiting', 'delayed', 'active', 'completed']);
  await q.close();
  connection.disconnect();
  return jobs.map((j) => String(j.id)).sort();
}

test.serial('a row written while Redis is unreachable is enqueued once Redis is back', async (t) => {
  const redis = await PrivateRedis.create();
  const prefix = uniquePrefix();
  // Redis is down: the producer connection cannot reach it.
  const queues = new QueueSet(createRedis(redis.url, 'producer'), prefix);
  t.teardown(async () => {
    await queues.close();
    queues.connection.disconnect();
    await redis.stop();
  });

  const queued = thumbnailJob(1);
  await db.transaction().execute((trx) => enqueueInTransaction(trx, queued));
  await t.throwsAsync(() => relayOutboxBatch(db, queues));
  t.is(await pendingOutboxCount(db), 1, 'the row waits in Postgres');

  await redis.start();
  // The relay keeps trying in the background; it drains the row once Redis answers.
  const relay = new OutboxRelay(db, queues, 50);
  relay.start();
  t.teardown(() => relay.stop());
  for (let i = 0; i < 2400 && (await pendingOutboxCount(db)) > 0; i++) {
    relay.kick();
    await new Promise((r) => setTimeout(r, 50));
  }
  t.is(await pendingOutboxCount(db), 0);
  t.deepEqual(await jobIds(redis.url, prefix, 'thumbnails'), ['thumb-places_p_121_img-1_png']);
});

test.serial('a row relayed twice makes one job', async (t) => {
  const prefix = uniquePrefix();
  const url = 'redis://127.0.0.1:6379';
  const queues = new QueueSet(createRedis(url, 'producer'), prefix);
  await new Promise((r) => queues.connection.once('ready', r));
  t.teardown(async () => {
    await queues.close();
    queues.connection.disconnect();
  });
  const queued = thumbnailJob(2);
  await enqueueInTransaction(db, queued);
  t.is(await relayOutboxBatch(db, queues), 1);
  // Simulate a relay that crashed after adding the job but before marking the row sent.
  await db.updateTable('outbox').set({ sent_at: null }).where('job_id', '=', queued.jobId).execute();
  t.is(await relayOutboxBatch(db, queues), 1);
  t.deepEqual(await jobIds(url, prefix, 'thumbnails'), [queued.jobId]);
});

test('a row is only written when its transaction commits', async (t) => {
  const before = await pendingOutboxCount(db);
  await t.throwsAsync(() =>
    db.transaction().execute(async (trx) => {
      await enqueueInTransaction(trx, thumbnailJob(3));
      throw new Error('rollback');
    }),
  );
  t.is(await pendingOutboxCount(db), before);
});

test('job ids that BullMQ would refuse are rejected when written', async (t) => {
  // Only job() makes an id; a cast stands for a future id builder that gets it wrong.
  const withId = (jobId: string): OutboxJob => ({ ...thumbnailJob(4), jobId: jobId as OutboxJob['jobId'] });
  const before = await pendingOutboxCount(db);
  await t.throwsAsync(() => enqueueInTransaction(db, withId('a:b')), {
    message: `invalid job id "a:b" for thumbnails/activity-thumbnail: contains ':'`,
  });
  await t.throwsAsync(() => enqueueInTransaction(db, withId('42')), { message: /is all digits/ });
  await t.throwsAsync(() => enqueueInTransaction(db, [thumbnailJob(5), withId('')]), { message: /is empty/ });
  t.is(await pendingOutboxCount(db), before, 'nothing written, not even the valid job of the batch');
});

test.serial(
  'a kick during a pass is not lost: the row it announces is relayed at once, not at the next poll',
  async (t) => {
    const prefix = uniquePrefix();
    const url = 'redis://127.0.0.1:6379';
    const connection = createRedis(url, 'producer');
    await new Promise((r) => connection.once('ready', r));
    // The first addBulk waits at a gate, so the second row is committed and kicked mid-pass.
    let release: () => void = () => {};
    const gate = new Promise<void>((r) => {
      release = r;
    });
    let calls = 0;
    class GatedQueues extends QueueSet {
      override get(name: Parameters<QueueSet['get']>[0]) {
        const queue = super.get(name);
        const addBulk = queue.addBulk.bind(queue);
        queue.addBulk = async (jobs) => {
          if (calls++ === 0) await gate;
          return addBulk(jobs);
        };
        return queue;
      }
    }
    const queues = new GatedQueues(connection, prefix);
    // Polls far apart: only a kick can make the second row go soon.
    const relay = new OutboxRelay(db, queues, 60_000);
    t.teardown(async () => {
      await relay.stop();
      await queues.close();
      connection.disconnect();
    });
    await db.transaction().execute((trx) => enqueueInTransaction(trx, thumbnailJob(31)));
    relay.start();
    while (calls === 0) await new Promise((r) => setTimeout(r, 10));
    await db.transaction().execute((trx) => enqueueInTransaction(trx, thumbnailJob(32)));
    relay.kick();
    release();
    const started = Date.now();
    while ((await pendingOutboxCount(db)) > 0 && Date.now() - started < 120_000)
      await new Promise((r) => setTimeout(r, 20));
    t.is(await pendingOutboxCount(db), 0, 'both rows relayed well before the next poll');
    t.deepEqual(await jobIds(url, prefix, 'thumbnails'), [
      'thumb-places_p_121_img-31_png',
      'thumb-places_p_121_img-32_png',
    ]);
  },
);
