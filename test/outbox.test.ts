import test from 'ava';
import { Queue } from 'bullmq';
import { createRedis } from '../shared/queue/connection.ts';
import { enqueueInTransaction, pendingOutboxCount, relayOutboxBatch, OutboxRelay } from '../shared/queue/outbox.ts';
import { QueueSet } from '../shared/queue/queues.ts';
import { uniquePrefix } from './helpers/app.ts';
import { createTestDatabase } from './helpers/db.ts';
import { PrivateRedis } from './helpers/redis-server.ts';

const database = await createTestDatabase();
test.after.always(() => database.drop());
const { db } = database;

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

  await db.transaction().execute((trx) =>
    enqueueInTransaction(trx, { queue: 'records', name: 'compute', payload: { activity: 1 }, jobId: 'records-activity-1' }),
  );
  await t.throwsAsync(() => relayOutboxBatch(db, queues));
  t.is(await pendingOutboxCount(db), 1, 'the row waits in Postgres');

  await redis.start();
  // The relay keeps trying in the background; it drains the row once Redis answers.
  const relay = new OutboxRelay(db, queues, 50);
  relay.start();
  t.teardown(() => relay.stop());
  for (let i = 0; i < 200 && (await pendingOutboxCount(db)) > 0; i++) {
    relay.kick();
    await new Promise((r) => setTimeout(r, 50));
  }
  t.is(await pendingOutboxCount(db), 0);
  t.deepEqual(await jobIds(redis.url, prefix, 'records'), ['records-activity-1']);
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
  await enqueueInTransaction(db, { queue: 'thumbnails', name: 'render', payload: { a: 1 }, jobId: 'thumb-place-1-v1' });
  t.is(await relayOutboxBatch(db, queues), 1);
  // Simulate a relay that crashed after adding the job but before marking the row sent.
  await db.updateTable('outbox').set({ sent_at: null }).where('job_id', '=', 'thumb-place-1-v1').execute();
  t.is(await relayOutboxBatch(db, queues), 1);
  t.deepEqual(await jobIds(url, prefix, 'thumbnails'), ['thumb-place-1-v1']);
});

test('a row is only written when its transaction commits', async (t) => {
  const before = await pendingOutboxCount(db);
  await t.throwsAsync(() =>
    db.transaction().execute(async (trx) => {
      await enqueueInTransaction(trx, { queue: 'records', name: 'compute', payload: {}, jobId: 'never-1' });
      throw new Error('rollback');
    }),
  );
  t.is(await pendingOutboxCount(db), before);
});

test('job ids that BullMQ would refuse are rejected when written', async (t) => {
  await t.throwsAsync(() => enqueueInTransaction(db, { queue: 'records', name: 'x', payload: {}, jobId: 'a:b' }), {
    message: /invalid job id/,
  });
  await t.throwsAsync(() => enqueueInTransaction(db, { queue: 'records', name: 'x', payload: {}, jobId: '42' }));
});
