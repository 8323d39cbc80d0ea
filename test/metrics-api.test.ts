import test from 'ava';
import { UnrecoverableError } from 'bullmq';
import { sql } from 'kysely';
import { job } from '../shared/queue/jobs.ts';
import { enqueueInTransaction } from '../shared/queue/outbox-write.ts';
import { JOB_STATES, QUEUE_NAMES } from '../shared/queue/queues.ts';
import type { Processors } from '../workers/processor.ts';
import { startWorkers } from '../workers/worker.ts';
import { metricNames, readAlertRules } from './helpers/alert-rules.ts';
import { startTestApi, testConfig } from './helpers/app.ts';

const api = await startTestApi(null, { env: { OUTBOX_POLL_MS: '50' } });
const { db } = api.database;
const processors = {
  records: {
    'activity-changed': async () => null,
    'recompute-activity': async () => {
      throw new UnrecoverableError('broken on purpose');
    },
    'sumups-rebuild': async () => null,
    'challenge-refresh': async () => null,
    'records-recompute-job': async () => null,
    'statistics-rebuild-job': async () => null,
  },
} as unknown as Partial<Processors>;
const workers = await startWorkers(
  testConfig({
    DATABASE_URL: api.database.url,
    QUEUE_PREFIX: api.config.QUEUE_PREFIX,
    WORKER_QUEUES: 'records',
    OUTBOX_POLL_MS: '50',
    WORKER_METRICS_PORT: '0',
  }),
  { processors },
);
test.after.always(async () => {
  await workers.close();
  await api.close();
});

const apiMetrics = async () => (await api.fetch('/metrics')).text();
const workerMetrics = async () => (await fetch(workers.metricsUrl ?? 'http://missing')).text();
/** The value of one series, or undefined. */
const seriesValue = (text: string, series: string) => {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
};
const waitFor = async (check: () => Promise<boolean>, ms = 120_000) => {
  const end = Date.now() + ms;
  while (!(await check()) && Date.now() < end) await new Promise((r) => setTimeout(r, 50));
  return check();
};

const changed = job('records', 'activity-changed', {
  activityId: 'metrics-a',
  userId: 'u',
  sportId: 121,
  version: 1,
  change: 'created',
  previousSportId: null,
});
const recompute = job('records', 'recompute-activity', {
  activityId: 'metrics-b',
  userId: 'u',
  version: 1,
  settings: 's',
  forced: null,
});

test.serial('jobs per queue and state, failed ones included; durations and failures from the worker', async (t) => {
  await enqueueInTransaction(db, [changed, recompute]);
  t.true(
    await waitFor(async () => {
      const text = await apiMetrics();
      return (
        seriesValue(text, 'queue_jobs{queue="records",state="completed"}') === 1 &&
        seriesValue(text, 'queue_jobs{queue="records",state="failed"}') === 1
      );
    }),
    await apiMetrics(),
  );
  const text = await apiMetrics();
  for (const queue of QUEUE_NAMES)
    for (const state of JOB_STATES)
      t.not(seriesValue(text, `queue_jobs{queue="${queue}",state="${state}"}`), undefined, `${queue} ${state}`);
  t.is(seriesValue(text, 'queue_depth{queue="records"}'), 0);
  // The failed job's row waits for an operator; the completed one's is done.
  t.true(await waitFor(async () => seriesValue(await apiMetrics(), 'outbox_failed_rows{queue="records"}') === 1));
  const rows = await db
    .selectFrom('outbox')
    .select(['job_id', 'done_at', 'failed_at'])
    .where('job_id', 'in', [changed.jobId, recompute.jobId])
    .orderBy('job_id')
    .execute();
  t.deepEqual(
    rows.map((r) => [r.job_id, r.done_at !== null, r.failed_at !== null]),
    [
      [changed.jobId, true, false],
      [recompute.jobId, false, true],
    ],
  );

  const worker = await workerMetrics();
  t.is(
    seriesValue(worker, 'job_duration_seconds_count{queue="records",name="activity-changed",outcome="completed"}'),
    1,
    worker,
  );
  t.is(
    seriesValue(worker, 'job_duration_seconds_count{queue="records",name="recompute-activity",outcome="failed"}'),
    1,
  );
  t.is(seriesValue(worker, 'jobs_failed_total{queue="records",final="true"}'), 1);
  t.is(seriesValue(worker, 'jobs_stalled_total{queue="records"}'), 0);
  t.is(seriesValue(worker, 'outbox_reconciled_total{outcome="relayed"}'), 0);
});

test.serial('the outbox lag is the age of the oldest row not done; the relay lag of the oldest not sent', async (t) => {
  // A row relayed two minutes ago whose job never completed (e.g. Redis lost it: the reconciler's).
  await enqueueInTransaction(
    db,
    job('exports', 'user-export', {
      exportId: 'metrics-lag',
    }),
  );
  await waitFor(async () => {
    const row = await db
      .selectFrom('outbox')
      .select('sent_at')
      .where('job_id', '=', 'export-metrics-lag')
      .executeTakeFirst();
    return row?.sent_at !== null;
  });
  await db
    .updateTable('outbox')
    .set({ created_at: sql<Date>`now() - interval '120 seconds'` })
    .where('job_id', '=', 'export-metrics-lag')
    .execute();
  const text = await apiMetrics();
  const lag = seriesValue(text, 'outbox_lag_seconds{queue="exports"}') ?? 0;
  t.true(lag >= 120 && lag < 180, String(lag));
  t.is(seriesValue(text, 'outbox_relay_lag_seconds{queue="exports"}'), 0, 'sent');
  t.is(seriesValue(text, 'outbox_lag_seconds{queue="thumbnails"}'), 0);
  t.is(seriesValue(text, 'outbox_pending'), 0);
});

test('without DATABASE_READ_URL there is no replica, and no replica gauge', async (t) => {
  const text = await apiMetrics();
  t.false(text.includes('read_replica_in_use'));
  t.false(text.includes('read_replica_lag_seconds'));
});

test('every metric the alert rules read is one /metrics exports (API or worker)', async (t) => {
  const types = [await apiMetrics(), await workerMetrics()]
    .join('\n')
    .split('\n')
    .filter((l) => l.startsWith('# TYPE '))
    .map((l) => l.split(' '));
  // A histogram's series are its _bucket, _count and _sum.
  const exported = new Set(
    types.flatMap(([, , name, type]) =>
      type === 'histogram' ? [name, `${name}_bucket`, `${name}_count`, `${name}_sum`] : [name],
    ),
  );
  // Prometheus' own `up`; the replica gauges only with DATABASE_READ_URL (test/scale-read-replica.test.ts).
  for (const name of ['up', 'read_replica_in_use', 'read_replica_lag_seconds']) exported.add(name);
  const rules = readAlertRules();
  t.true(rules.length >= 3);
  for (const rule of rules) {
    const names = metricNames(rule.expr);
    t.true(names.length > 0, rule.alert);
    for (const name of names) t.true(exported.has(name), `${rule.alert}: ${name} is not exported`);
  }
});

test('the worker serves nothing but GET /metrics', async (t) => {
  const base = (workers.metricsUrl ?? '').replace(/\/metrics$/, '');
  t.is((await fetch(`${base}/`)).status, 404);
  t.is((await fetch(`${base}/metrics`, { method: 'POST' })).status, 404);
});
