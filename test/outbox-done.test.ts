import test from 'ava';
import { Queue, Worker } from 'bullmq';
import { sql } from 'kysely';
import { createRedis, waitForReady } from '../shared/queue/connection.ts';
import { job } from '../shared/queue/jobs.ts';
import { outboxStats, purgeOutbox, reconcileOutboxBatch, relayOutboxBatch } from '../shared/queue/outbox.ts';
import { bullJobId } from '../shared/queue/outbox-epoch.ts';
import { enqueueInTransaction } from '../shared/queue/outbox-write.ts';
import { QueueSet } from '../shared/queue/queues.ts';
import type { JobDeps, Processors } from '../workers/processor.ts';
import { startWorkers } from '../workers/worker.ts';
import { testConfig, uniquePrefix } from './helpers/app.ts';
import { createTestDatabase } from './helpers/db.ts';

const database = await createTestDatabase();
test.after.always(() => database.drop());
const { db } = database;
const REDIS = 'redis://127.0.0.1:6379';

const thumbnailJob = (n: number) =>
  job('thumbnails', 'activity-thumbnail', { activityId: n, imagePath: `places/p/121/done-${n}.png` });

async function producer(t: import('ava').ExecutionContext) {
  const queues = new QueueSet(createRedis(REDIS, 'producer'), uniquePrefix());
  await waitForReady(queues.connection);
  t.teardown(async () => {
    await queues.close();
    queues.connection.disconnect();
  });
  return queues;
}

const rowOf = (jobId: string) =>
  db.selectFrom('outbox').selectAll().where('job_id', '=', jobId).orderBy('id').executeTakeFirstOrThrow();

/** Pretends the row was relayed `seconds` ago. */
const age = (jobId: string, seconds: number) =>
  db
    .updateTable('outbox')
    .set({ sent_at: sql<Date>`now() - make_interval(secs => ${seconds})` })
    .where('job_id', '=', jobId)
    .execute();

const waitFor = async (check: () => Promise<boolean>, ms = 120_000) => {
  const end = Date.now() + ms;
  while (!(await check()) && Date.now() < end) await new Promise((r) => setTimeout(r, 25));
  return check();
};

test.serial('a row is done when its job completes, not when it is sent', async (t) => {
  const prefix = uniquePrefix();
  let release: () => void = () => {};
  const gate = new Promise<void>((r) => {
    release = r;
  });
  const ran: number[] = [];
  const processors = {
    thumbnails: {
      'activity-thumbnail': async (j: { data: { activityId: number } }) => {
        await gate;
        ran.push(j.data.activityId);
        return null;
      },
      'activity-track-thumbnail': async () => null,
      'thumbnails-rebuild-job': async () => null,
    },
  } as unknown as Partial<Processors>;
  const workers = await startWorkers(
    testConfig({ DATABASE_URL: database.url, QUEUE_PREFIX: prefix, WORKER_QUEUES: 'thumbnails', OUTBOX_POLL_MS: '20' }),
    { processors },
  );
  t.teardown(() => workers.close());
  const queued = thumbnailJob(1);
  await enqueueInTransaction(db, queued);
  t.true(await waitFor(async () => (await rowOf(queued.jobId)).sent_at !== null));
  t.is((await rowOf(queued.jobId)).done_at, null, 'sent, running, not done');
  release();
  t.true(await waitFor(async () => (await rowOf(queued.jobId)).done_at !== null));
  t.deepEqual(ran, [1]);
});

test.serial("a handler's done mark commits with its effect: rolled back together, then done together", async (t) => {
  await sql`create table if not exists effects (activity_id int primary key)`.execute(db);
  let attempts = 0;
  let openInside: boolean | undefined;
  const processors = {
    thumbnails: {
      'activity-thumbnail': async (j: { id: string; data: { activityId: number } }, { markDone }: JobDeps) =>
        db.transaction().execute(async (trx) => {
          await sql`insert into effects values (${j.data.activityId})`.execute(trx);
          await markDone(trx);
          // Seen from outside the transaction, the row is still open until the commit.
          openInside = (await rowOf(j.id)).done_at === null;
          if (++attempts === 1) throw new Error('the process dies before its commit');
          return null;
        }),
      'activity-track-thumbnail': async () => null,
      'thumbnails-rebuild-job': async () => null,
    },
  } as unknown as Partial<Processors>;
  const workers = await startWorkers(
    testConfig({
      DATABASE_URL: database.url,
      QUEUE_PREFIX: uniquePrefix(),
      WORKER_QUEUES: 'thumbnails',
      OUTBOX_POLL_MS: '20',
    }),
    { processors },
  );
  t.teardown(() => workers.close());
  const queued = thumbnailJob(7);
  await enqueueInTransaction(db, queued);
  t.true(await waitFor(async () => (await rowOf(queued.jobId)).done_at !== null));
  t.is(attempts, 2, 'the first attempt failed, the retry committed');
  t.true(openInside);
  const effects = await sql<{ activity_id: number }>`select activity_id from effects`.execute(db);
  t.deepEqual(
    effects.rows.map((r) => r.activity_id),
    [7],
    'the failed attempt left neither its effect nor its mark',
  );
});

test.serial('the reconciler relays again, with the same id, a job Redis lost', async (t) => {
  const queues = await producer(t);
  const lost = thumbnailJob(2);
  await enqueueInTransaction(db, lost);
  t.is(await relayOutboxBatch(db, queues), 1);
  // Redis loses its data.
  await queues.get('thumbnails').obliterate({ force: true });
  t.is((await reconcileOutboxBatch(db, queues, 60)).relayed, 0, 'relayed too recently to be looked at');
  await age(lost.jobId, 61);
  const result = await reconcileOutboxBatch(db, queues, 60);
  t.like(result, { relayed: 1, rerun: 0, failed: 0 });
  t.is(await queues.get('thumbnails').getJobState(lost.jobId), 'waiting');
  const row = await rowOf(lost.jobId);
  t.is(row.attempts, 2);
  t.is(row.done_at, null);
  t.true(Date.now() - (row.sent_at as Date).getTime() < 60_000, 'sent again now');
  // Relayed twice meanwhile (two relays, or the reconciler racing the first): still one job.
  await age(lost.jobId, 61);
  await db.updateTable('outbox').set({ checked_at: null }).where('job_id', '=', lost.jobId).execute();
  t.like(await reconcileOutboxBatch(db, queues, 60), { checked: 1, relayed: 0 });
  t.is(await queues.get('thumbnails').count(), 1);
});

test.serial('a job still queued is left alone and looked at again one period later', async (t) => {
  const queues = await producer(t);
  const queued = thumbnailJob(3);
  await enqueueInTransaction(db, queued);
  await relayOutboxBatch(db, queues);
  await age(queued.jobId, 61);
  t.like(await reconcileOutboxBatch(db, queues, 60), { checked: 1, relayed: 0 });
  t.like(await reconcileOutboxBatch(db, queues, 60), { checked: 0 }, 'checked: not before 60 s');
  t.not((await rowOf(queued.jobId)).checked_at, null);
  t.is((await rowOf(queued.jobId)).attempts, 1);
});

test.serial(
  'a row not done whose job Redis holds as completed runs again under a new id; one whose job failed is marked failed',
  async (t) => {
    const queues = await producer(t);
    const queue = new Queue('thumbnails', { connection: queues.connection, prefix: queues.prefix });
    t.teardown(() => queue.close());
    const completed = thumbnailJob(4);
    const failed = thumbnailJob(5);
    // The jobs run first (added with one attempt, so the failure is final at once); their rows come
    // after, as a `records:recompute` run repeated with the same ids would write them.
    for (const j of [completed, failed]) await queue.add(j.name, j.payload, { jobId: j.jobId, attempts: 1 });
    const connection = createRedis(REDIS, 'worker');
    const worker = new Worker(
      'thumbnails',
      async (j) => {
        if (j.id === failed.jobId) throw new Error('broken');
        return null;
      },
      { connection, prefix: queues.prefix },
    );
    t.teardown(async () => {
      await worker.close();
      connection.disconnect();
    });
    t.true(
      await waitFor(
        async () =>
          (await queue.getJobState(completed.jobId)) === 'completed' &&
          (await queue.getJobState(failed.jobId)) === 'failed',
      ),
    );
    await enqueueInTransaction(db, [completed, failed]);
    t.is(await relayOutboxBatch(db, queues), 2, 'relayed: BullMQ ignores the adds, the jobs exist');
    await age(completed.jobId, 61);
    await age(failed.jobId, 61);
    // Completed in Redis, not done here: the effect is not in this database (restored, or a row
    // written after the job ran), whatever Redis says.
    t.like(await reconcileOutboxBatch(db, queues, 60), { checked: 2, relayed: 0, rerun: 1, failed: 1 });
    t.is((await rowOf(completed.jobId)).done_at, null);
    t.is((await rowOf(completed.jobId)).reruns, 1);
    t.not(await queue.getJobState(bullJobId(completed.jobId, 0, 1)), 'unknown', 'its new job is in Redis');
    t.not((await rowOf(failed.jobId)).failed_at, null);
    t.is((await rowOf(failed.jobId)).done_at, null);
  },
);

test.serial('outbox stats: relay lag, outbox lag and failed rows per queue', async (t) => {
  await db.deleteFrom('outbox').execute();
  t.deepEqual((await outboxStats(db)).queues.records, {
    pending: 0,
    relayLagSeconds: 0,
    outboxLagSeconds: 0,
    failed: 0,
  });
  const unsent = thumbnailJob(6);
  const running = thumbnailJob(7);
  const failed = thumbnailJob(8);
  await enqueueInTransaction(db, [unsent, running, failed]);
  const ago = (s: number) => sql<Date>`now() - make_interval(secs => ${s})`;
  await db
    .updateTable('outbox')
    .set({ created_at: ago(30) })
    .where('job_id', '=', unsent.jobId)
    .execute();
  await db
    .updateTable('outbox')
    .set({ created_at: ago(90), sent_at: ago(89) })
    .where('job_id', '=', running.jobId)
    .execute();
  await db
    .updateTable('outbox')
    .set({ created_at: ago(900), sent_at: ago(899), failed_at: ago(800) })
    .where('job_id', '=', failed.jobId)
    .execute();
  const stats = await outboxStats(db);
  t.is(stats.pending, 1);
  const thumbnails = stats.queues.thumbnails;
  t.is(thumbnails?.pending, 1);
  t.is(thumbnails?.failed, 1);
  // The ages grow while the test runs: bounded by the next older row's, not by a time budget.
  const relayLag = thumbnails?.relayLagSeconds ?? 0;
  t.true(relayLag >= 30 && relayLag < 90, String(relayLag));
  // The failed row is older, but waits for an operator: not counted in the lag.
  const outboxLag = thumbnails?.outboxLagSeconds ?? 0;
  t.true(outboxLag >= 90 && outboxLag < 900, String(outboxLag));
});

test.serial('finished rows are purged after the retention; open rows stay', async (t) => {
  await db.deleteFrom('outbox').execute();
  const old = (n: number) => sql<Date>`now() - make_interval(days => ${n})`;
  await enqueueInTransaction(db, [thumbnailJob(9), thumbnailJob(10), thumbnailJob(11), thumbnailJob(12)]);
  const [a, b, c, d] = await db.selectFrom('outbox').select('id').orderBy('id').execute();
  await db
    .updateTable('outbox')
    .set({ sent_at: old(9), done_at: old(8) })
    .where('id', '=', a?.id ?? 0)
    .execute();
  await db
    .updateTable('outbox')
    .set({ sent_at: old(9), failed_at: old(8) })
    .where('id', '=', b?.id ?? 0)
    .execute();
  // Relayed long ago, never done: the reconciler's, never purged.
  await db
    .updateTable('outbox')
    .set({ sent_at: old(9) })
    .where('id', '=', c?.id ?? 0)
    .execute();
  await db
    .updateTable('outbox')
    .set({ sent_at: old(1), done_at: old(1) })
    .where('id', '=', d?.id ?? 0)
    .execute();
  await purgeOutbox(db);
  t.deepEqual(
    (await db.selectFrom('outbox').select('id').orderBy('id').execute()).map((r) => r.id),
    [c?.id, d?.id],
  );
});
