import { spawn } from 'node:child_process';
import test from 'ava';
import { Queue } from 'bullmq';
import { sql } from 'kysely';
import { ConfigError, loadConfig } from '../shared/config.ts';
import { createRedis } from '../shared/queue/connection.ts';
import { job } from '../shared/queue/jobs.ts';
import { enqueueInTransaction } from '../shared/queue/outbox-write.ts';
import { RECOMMENDATIONS_SCHEDULER_ID } from '../workers/processors/recommendations.ts';
import { startWorkers } from '../workers/worker.ts';
import { testConfig } from './helpers/app.ts';
import { createTestDatabase } from './helpers/db.ts';

const database = await createTestDatabase();
const { db } = database;
const [a, b] = (
  await db.selectFrom('sports').select('id').where('active', '=', true).orderBy('id').limit(2).execute()
).map((r) => r.id) as [number, number];
test.after.always(() => database.drop());

const waitFor = async (check: () => Promise<boolean>, ms = 120_000) => {
  const end = Date.now() + ms;
  while (!(await check()) && Date.now() < end) await new Promise((r) => setTimeout(r, 50));
  return check();
};
const runs = async () => (await db.selectFrom('recommendations_runs').selectAll().executeTakeFirst()) ?? null;
const pairs = async () =>
  Number((await sql<{ n: string }>`select count(*) as n from sport_copractice`.execute(db)).rows[0]?.n);

test('RECOMMENDATIONS_INTERVAL_S: default one hour, 0 or 60 s to 30 days', (t) => {
  t.is(loadConfig({}).RECOMMENDATIONS_INTERVAL_S, 3600);
  t.is(loadConfig({ RECOMMENDATIONS_INTERVAL_S: '0' }).RECOMMENDATIONS_INTERVAL_S, 0);
  for (const bad of ['30', '2592001', 'hourly'])
    t.throws(() => loadConfig({ RECOMMENDATIONS_INTERVAL_S: bad }), {
      instanceOf: ConfigError,
      message: /RECOMMENDATIONS_INTERVAL_S/,
    });
});

test.serial(
  'the worker of the queue upserts the job scheduler, whose first job runs at once; outbox jobs run too',
  async (t) => {
    const config = testConfig({
      DATABASE_URL: database.url,
      WORKER_QUEUES: 'recommendations',
      RECOMMENDATIONS_INTERVAL_S: '120',
      OUTBOX_POLL_MS: '20',
    });
    const redis = createRedis(config.REDIS_URL, 'producer');
    const queue = new Queue('recommendations', { connection: redis, prefix: config.QUEUE_PREFIX });
    t.teardown(async () => {
      await queue.obliterate({ force: true }).catch(() => {});
      await queue.close();
      redis.disconnect();
    });

    const workers = await startWorkers(config);
    t.deepEqual(workers.queues, ['recommendations']);
    const scheduler = await queue.getJobScheduler(RECOMMENDATIONS_SCHEDULER_ID);
    t.is(scheduler?.every, 120_000);
    t.is(scheduler?.template?.data?.requestedBy, 'schedule');
    t.true(await waitFor(async () => (await runs()) !== null), 'the first scheduled job ran');
    t.is(await pairs(), 0);

    // New data, then a one-off request through the outbox: the job replaces the result.
    const { rows } = await sql<{ id: number }>`
    insert into places (slug, name, geom, country, status)
    values ('rec-job', 'P', st_setsrid(st_makepoint(6.1, 49.6), 4326), 'LU', 'approved') returning id`.execute(db);
    for (const sport of [a, b])
      await sql`insert into place_activities (place_id, sport_id) values (${rows[0]?.id}, ${sport})`.execute(db);
    await enqueueInTransaction(db, job('recommendations', 'compute-all', { requestedBy: new Date().toISOString() }));
    t.true(await waitFor(async () => (await pairs()) === 2), 'the outbox job recomputed (a→b, b→a)');
    await workers.close();

    // Interval 0: the next worker start removes the schedule.
    const again = await startWorkers({ ...config, RECOMMENDATIONS_INTERVAL_S: 0 });
    t.is(await queue.getJobScheduler(RECOMMENDATIONS_SCHEDULER_ID), undefined);
    await again.close();
  },
);

test.serial('npm run recommendations:compute computes in the process and says what it wrote', async (t) => {
  const child = spawn(process.execPath, ['scripts/recommendations-compute.ts'], {
    env: { ...process.env, DATABASE_URL: database.url, MIGRATE_ON_START: 'false' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (d) => {
    output += d;
  });
  child.stderr.on('data', (d) => {
    output += d;
  });
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  t.is(code, 0, output);
  t.regex(output, /recommendations computed in \d+ ms/);
  t.regex(output, /co-practice: 2 sport pairs/);
  t.regex(output, /countries: 2 \(country, sport\) rows/);
});
