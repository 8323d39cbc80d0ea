import test from 'ava';
import type { Job } from 'bullmq';
import { ConfigError, type QueueName } from '../shared/config.ts';
import { createLogger } from '../shared/observability/logger.ts';
import { job } from '../shared/queue/jobs.ts';
import { enqueueInTransaction } from '../shared/queue/outbox-write.ts';
import { checkProcessors, dispatch } from '../workers/dispatch.ts';
import type { Processors, QueueProcessor } from '../workers/processor.ts';
import { PROCESSORS } from '../workers/processors/index.ts';
import { queuesNamedExplicitly, selectQueues, startWorkers } from '../workers/worker.ts';
import { testConfig } from './helpers/app.ts';
import { createTestDatabase } from './helpers/db.ts';

const database = await createTestDatabase();
test.after.always(() => database.drop());

const waitFor = async (check: () => boolean, ms = 120_000) => {
  const end = Date.now() + ms;
  while (!check() && Date.now() < end) await new Promise((r) => setTimeout(r, 25));
  return check();
};

const noop: Processors = {
  records: {
    'activity-changed': async () => null,
    'recompute-activity': async () => null,
    'sumups-rebuild': async () => null,
    'challenge-refresh': async () => null,
    'records-recompute-job': async () => null,
    'statistics-rebuild-job': async () => null,
  },
  thumbnails: {
    'activity-thumbnail': async () => null,
    'activity-track-thumbnail': async () => null,
    'thumbnails-rebuild-job': async () => null,
  },
  recommendations: { 'compute-all': async () => null },
  exports: { 'user-export': async () => null, 'cleanup-expired': async () => null },
  maintenance: {
    'idempotency-expire': async () => null,
    'accounts-purge': async () => null,
    'tombstones-expire': async () => null,
  },
  webhooks: { event: async () => null, deliver: async () => null, 'cleanup-events': async () => null },
  imports: { 'import-file': async () => null, 'bulk-split': async () => null },
};
const thumbnailJob = (activityId: number) =>
  job('thumbnails', 'activity-thumbnail', { activityId, imagePath: `places/p/121/img-${activityId}.png` });

test('selectQueues runs the named queues that have jobs; naming a queue without jobs explicitly is an error', (t) => {
  // Every planned queue has jobs in this build: a queue of a later plan stands for one without.
  const config = { ...testConfig(), WORKER_QUEUES: ['later' as QueueName, 'thumbnails' as const] };
  t.deepEqual(selectQueues(config, noop, false), ['thumbnails']);
  t.throws(() => selectQueues(config, noop, true), {
    instanceOf: ConfigError,
    message:
      'WORKER_QUEUES: no jobs in this build for later (queues with jobs: records, thumbnails, recommendations, exports, maintenance, webhooks, imports)',
  });
  t.deepEqual(selectQueues(testConfig({ WORKER_QUEUES: 'all' }), noop, false), [
    'records',
    'thumbnails',
    'exports',
    'recommendations',
    'maintenance',
    'webhooks',
    'imports',
  ]);
});

test('WORKER_QUEUES is explicit unless unset, empty or all', (t) => {
  t.false(queuesNamedExplicitly({}));
  t.false(queuesNamedExplicitly({ WORKER_QUEUES: '' }));
  t.false(queuesNamedExplicitly({ WORKER_QUEUES: ' all ' }));
  t.true(queuesNamedExplicitly({ WORKER_QUEUES: 'thumbnails' }));
});

test('the build has a processor with a handler for every job of the map', (t) => {
  t.notThrows(() => checkProcessors(['thumbnails', 'recommendations'], PROCESSORS));
});

test('the worker refuses to start a queue without a processor, without a handler or with a stray handler', async (t) => {
  t.throws(() => checkProcessors(['thumbnails'], {}), {
    instanceOf: ConfigError,
    message: 'Workers cannot start:\n  thumbnails: no processor (add it to workers/processors/index.ts)',
  });
  // Casts: the types forbid these processors; the start check is for the ones built at run time.
  const noHandler = { thumbnails: {} as QueueProcessor<'thumbnails'> };
  t.throws(() => checkProcessors(['thumbnails'], noHandler), {
    instanceOf: ConfigError,
    message: /thumbnails: no handler for job "activity-thumbnail"/,
  });
  const stray = { thumbnails: { ...noop.thumbnails, render: async () => null } as QueueProcessor<'thumbnails'> };
  t.throws(() => checkProcessors(['thumbnails'], stray), {
    instanceOf: ConfigError,
    message: /thumbnails: handler for "render", which is not a job of this queue/,
  });
  // startWorkers checks before opening any connection (DATABASE_URL points nowhere).
  const config = testConfig({ DATABASE_URL: 'postgres://nobody@127.0.0.1:1/none', WORKER_QUEUES: 'all' });
  await t.throwsAsync(() => startWorkers(config, { processors: noHandler }), {
    instanceOf: ConfigError,
    message: /no handler for job "activity-thumbnail"/,
  });
});

test('a job name the queue does not have is a clear error, even one named like an Object member', async (t) => {
  const deps = { config: testConfig(), db: database.db, logger: createLogger('silent', 'test') };
  const run = dispatch('thumbnails', noop.thumbnails, deps);
  for (const name of ['render', 'constructor'])
    await t.throwsAsync(() => run({ name, data: {} } as Job), {
      message: `queue thumbnails has no job "${name}" (its jobs: activity-thumbnail, activity-track-thumbnail, thumbnails-rebuild-job)`,
    });
  t.is(await run({ name: 'activity-thumbnail', data: {} } as Job), null);
});

test('an outbox row becomes a processed job; SIGTERM-style close lets the active job finish', async (t) => {
  const seen: unknown[] = [];
  let release: () => void = () => {};
  const gate = new Promise<void>((r) => {
    release = r;
  });
  let finished = false;
  const processors: Processors = {
    records: noop.records,
    thumbnails: {
      'activity-thumbnail': async (job) => {
        seen.push(job.data);
        if (job.data.activityId === 2) {
          await gate;
          finished = true;
        }
        return 'done';
      },
      'activity-track-thumbnail': noop.thumbnails['activity-track-thumbnail'],
      'thumbnails-rebuild-job': noop.thumbnails['thumbnails-rebuild-job'],
    },
    recommendations: noop.recommendations,
    exports: noop.exports,
    maintenance: noop.maintenance,
    webhooks: noop.webhooks,
    imports: noop.imports,
  };
  const config = testConfig({ DATABASE_URL: database.url, WORKER_QUEUES: 'thumbnails', OUTBOX_POLL_MS: '20' });
  const workers = await startWorkers(config, { processors });
  t.deepEqual(workers.queues, ['thumbnails']);

  await database.db.transaction().execute((trx) => enqueueInTransaction(trx, thumbnailJob(1)));
  t.true(await waitFor(() => seen.length === 1), 'job processed');
  t.deepEqual(seen[0], { activityId: 1, imagePath: 'places/p/121/img-1.png' });

  await enqueueInTransaction(database.db, thumbnailJob(2));
  t.true(await waitFor(() => seen.length === 2), 'slow job started');
  const closing = workers.close();
  await new Promise((r) => setTimeout(r, 100));
  t.false(finished, 'close waits for the active job');
  release();
  await closing;
  t.true(finished, 'the active job finished before the worker closed');
});
