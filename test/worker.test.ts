import test from 'ava';
import type { Processor } from '../workers/processor.ts';
import { ConfigError } from '../shared/config.ts';
import { selectQueues, startWorkers } from '../workers/worker.ts';
import { enqueueInTransaction } from '../shared/queue/outbox.ts';
import { testConfig } from './helpers/app.ts';
import { createTestDatabase } from './helpers/db.ts';

const database = await createTestDatabase();
test.after.always(() => database.drop());

const waitFor = async (check: () => boolean, ms = 10_000) => {
  const end = Date.now() + ms;
  while (!check() && Date.now() < end) await new Promise((r) => setTimeout(r, 25));
  return check();
};

test('selectQueues runs the named queues that have a processor; an explicit unknown one is an error', (t) => {
  const processors: Record<string, Processor> = { records: async () => null };
  const config = testConfig({ WORKER_QUEUES: 'records,exports' });
  t.deepEqual(selectQueues(config, processors, false), ['records']);
  t.throws(() => selectQueues(config, processors, true), { instanceOf: ConfigError, message: /exports/ });
  t.deepEqual(selectQueues(testConfig({ WORKER_QUEUES: 'all' }), processors, false), ['records']);
});

test('an outbox row becomes a processed job; SIGTERM-style close lets the active job finish', async (t) => {
  const seen: unknown[] = [];
  let release: () => void = () => {};
  const gate = new Promise<void>((r) => {
    release = r;
  });
  let finished = false;
  const processors: Record<string, Processor> = {
    records: async (job) => {
      seen.push(job.data);
      if ((job.data as { slow?: boolean }).slow) {
        await gate;
        finished = true;
      }
      return 'done';
    },
  };
  const config = testConfig({ DATABASE_URL: database.url, WORKER_QUEUES: 'records', OUTBOX_POLL_MS: '20' });
  const workers = await startWorkers(config, { processors });
  t.deepEqual(workers.queues, ['records']);

  await database.db.transaction().execute((trx) =>
    enqueueInTransaction(trx, { queue: 'records', name: 'compute', payload: { n: 1 }, jobId: 'rec-1' }),
  );
  t.true(await waitFor(() => seen.length === 1), 'job processed');
  t.deepEqual(seen[0], { n: 1 });

  await enqueueInTransaction(database.db, { queue: 'records', name: 'compute', payload: { slow: true }, jobId: 'rec-2' });
  t.true(await waitFor(() => seen.length === 2), 'slow job started');
  const closing = workers.close();
  await new Promise((r) => setTimeout(r, 100));
  t.false(finished, 'close waits for the active job');
  release();
  await closing;
  t.true(finished, 'the active job finished before the worker closed');
});
