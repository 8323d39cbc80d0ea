import test from 'ava';
import { createRedis, waitForReady } from '../shared/queue/connection.ts';
import { job } from '../shared/queue/jobs.ts';
import { enqueueInTransaction } from '../shared/queue/outbox-write.ts';
import { QueueSet } from '../shared/queue/queues.ts';
import type { Processors } from '../workers/processor.ts';
import { startWorkers } from '../workers/worker.ts';
import { testConfig } from './helpers/app.ts';
import { runScript } from './helpers/cli.ts';
import { createTestDatabase } from './helpers/db.ts';
import { FailingThumbnails, waitFor } from './helpers/failing-jobs.ts';

// `npm run jobs` against a real worker: thumbnail jobs fail for real (their handler throws) and
// end failed, then the CLI lists, retries and removes them.
const database = await createTestDatabase();
const { db } = database;
const config = testConfig({ DATABASE_URL: database.url, WORKER_QUEUES: 'thumbnails', OUTBOX_POLL_MS: '20' });
const thumbnails = new FailingThumbnails();
const workers = await startWorkers(config, { processors: thumbnails.processors as Partial<Processors> });
const queues = new QueueSet(createRedis(config.REDIS_URL, 'producer'), config.QUEUE_PREFIX);
await waitForReady(queues.connection);
test.after.always(async () => {
  await workers.close();
  await queues.get('thumbnails').obliterate({ force: true });
  await queues.close();
  queues.connection.disconnect();
  await database.drop();
});

async function jobsCli(...args: string[]) {
  const run = await runScript('scripts/jobs.ts', args, {
    DATABASE_URL: database.url,
    REDIS_URL: config.REDIS_URL,
    QUEUE_PREFIX: config.QUEUE_PREFIX,
    MIGRATE_ON_START: 'false',
  });
  return { ...run, json: () => JSON.parse(run.stdout) as Record<string, unknown> };
}

const rowOf = (jobId: string) =>
  db.selectFrom('outbox').selectAll().where('job_id', '=', jobId).executeTakeFirstOrThrow();

/** A thumbnail job written through the outbox whose handler throws: it ends failed, its row too. */
async function failedJob(activityId: number): Promise<string> {
  thumbnails.broken.add(activityId);
  const j = job('thumbnails', 'activity-thumbnail', { activityId, imagePath: `places/p/121/cli-${activityId}.png` });
  await enqueueInTransaction(db, j);
  if (!(await waitFor(async () => (await rowOf(j.jobId)).failed_at !== null)))
    throw new Error(`job ${j.jobId} did not fail`);
  return j.jobId;
}

test('bad arguments: a clear message and exit 2, before anything connects', async (t) => {
  const cases: [string[], RegExp][] = [
    [[], /give a command/],
    [['requeue', '--queue', 'thumbnails', '--state', 'failed'], /unknown command "requeue"/],
    [['list', '--state', 'failed'], /--queue is required/],
    [['list', '--queue', 'mail', '--state', 'failed'], /--queue: no queue "mail"/],
    [['list', '--queue', 'thumbnails'], /--state is required/],
    [['list', '--queue', 'thumbnails', '--state', 'broken'], /--state: no state "broken"/],
    [['retry', '--queue', 'thumbnails', '--state', 'completed'], /retry: only --state failed/],
    [['remove', '--queue', 'thumbnails', '--state', 'waiting'], /remove: only --state failed/],
    [['list', '--queue', 'thumbnails', '--state', 'failed', '--limit', '0'], /--limit: a whole number/],
    [['list', '--queue', 'thumbnails', '--state', 'failed', '--force'], /Unknown option '--force'/],
  ];
  const runs = await Promise.all(cases.map(([args]) => jobsCli(...args)));
  for (const [i, [args, message]] of cases.entries()) {
    const r = runs[i] as Awaited<ReturnType<typeof jobsCli>>;
    t.is(r.code, 2, args.join(' '));
    t.regex(r.stderr, message, args.join(' '));
    t.regex(r.stderr, /usage: npm run jobs -- list\|retry\|remove/);
    t.is(r.stdout, '');
  }
});

test.serial('a failed job is listed, retried (its outbox row open again), then completes', async (t) => {
  const jobId = await failedJob(1);
  t.is(await queues.get('thumbnails').getJobState(jobId), 'failed');

  const listed = await jobsCli('list', '--queue', 'thumbnails', '--state', 'failed');
  t.is(listed.code, 0, listed.stderr);
  const list = listed.json() as { total: number; jobs: { id: string; name: string; failedReason: string }[] };
  t.like(listed.json(), { queue: 'thumbnails', state: 'failed', total: 1 });
  t.like(list.jobs[0], { id: jobId, name: 'activity-thumbnail', failedReason: 'the original is missing' });

  // The cause is fixed; the job waits in the handler so the reopened row is seen before it completes.
  thumbnails.broken.delete(1);
  const release = thumbnails.hold(1);
  const retried = await jobsCli('retry', '--queue', 'thumbnails', '--state', 'failed');
  t.is(retried.code, 0, retried.stderr);
  t.deepEqual(retried.json(), {
    queue: 'thumbnails',
    state: 'failed',
    retried: [jobId],
    skipped: [],
    reopenedOutboxRows: 1,
  });
  t.like(await rowOf(jobId), { failed_at: null, done_at: null });
  release();
  t.true(await waitFor(async () => (await rowOf(jobId)).done_at !== null), 'the worker marks the row done');
  t.is(await queues.get('thumbnails').getJobState(jobId), 'completed');
  t.like((await jobsCli('list', '--queue', 'thumbnails', '--state', 'failed')).json(), { total: 0, jobs: [] });
  t.like((await jobsCli('list', '--queue', 'thumbnails', '--state', 'completed')).json(), { total: 1 });
});

test.serial('--id: one job; a job not failed is refused with exit 1; remove leaves the row failed', async (t) => {
  const first = await failedJob(2);
  const second = await failedJob(3);
  const removed = await jobsCli('remove', '--queue', 'thumbnails', '--state', 'failed', '--id', first);
  t.is(removed.code, 0, removed.stderr);
  t.deepEqual(removed.json(), { queue: 'thumbnails', state: 'failed', removed: [first], skipped: [] });
  t.is(await queues.get('thumbnails').getJobState(first), 'unknown');
  t.not((await rowOf(first)).failed_at, null, 'given up: the row stays failed until purged');
  t.is(await queues.get('thumbnails').getJobState(second), 'failed', 'the other failed job is left alone');

  const gone = await jobsCli('retry', '--queue', 'thumbnails', '--state', 'failed', '--id', first);
  t.is(gone.code, 1);
  t.regex(gone.stderr, new RegExp(`no job ${first} in queue thumbnails`));

  thumbnails.broken.delete(3);
  t.like((await jobsCli('retry', '--queue', 'thumbnails', '--state', 'failed', '--id', second)).json(), {
    retried: [second],
  });
  t.true(await waitFor(async () => (await rowOf(second)).done_at !== null));
  const done = await jobsCli('remove', '--queue', 'thumbnails', '--state', 'failed', '--id', second);
  t.is(done.code, 1);
  t.regex(done.stderr, new RegExp(`job ${second} of queue thumbnails is completed, not failed`));
});

test.serial('a retried job that fails again keeps its row failed', async (t) => {
  const jobId = await failedJob(4);
  const before = (await rowOf(jobId)).failed_at;
  const retried = await jobsCli('retry', '--queue', 'thumbnails', '--state', 'failed', '--id', jobId);
  t.is(retried.code, 0, retried.stderr);
  t.true(await waitFor(async () => (await queues.get('thumbnails').getJobState(jobId)) === 'failed'));
  // Reopened or not depending on how fast the job failed again: either way it ends failed.
  t.true(await waitFor(async () => (await rowOf(jobId)).failed_at !== null));
  t.is((await rowOf(jobId)).done_at, null);
  t.truthy(before);
});

test('Redis unreachable: exit 2 naming REDIS_URL', async (t) => {
  const run = await runScript('scripts/jobs.ts', ['list', '--queue', 'records', '--state', 'failed'], {
    DATABASE_URL: database.url,
    REDIS_URL: 'redis://127.0.0.1:1',
    MIGRATE_ON_START: 'false',
  });
  t.is(run.code, 2);
  t.regex(run.stderr, /Cannot connect to Redis at redis:\/\/127\.0\.0\.1:1 \(REDIS_URL\)/);
});
