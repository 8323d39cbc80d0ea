import { rm } from 'node:fs/promises';
import test from 'ava';
import { createLogger } from '../shared/observability/logger.ts';
import { type RunningWorkers, startWorkers } from '../workers/worker.ts';
import { jobReader, relayed } from './helpers/jobs.ts';
import { startTrackingApi, type TrackingTestUser } from './helpers/tracking.ts';
import { activityCalls, type Body, HIKING, RUNNING } from './helpers/tracking-activities.ts';

// Issue 38 §3: batch recomputes as staff jobs (POST /v2/jobs), run by the real workers started in
// this process. The API runs first without any worker: an accepted job waits, pending.

const api = await startTrackingApi({ publicUrl: true, env: { OUTBOX_POLL_MS: '50' } });
const { db } = api.database;
const { created } = activityCalls(api);
let workers: RunningWorkers | undefined;

const staff = await api.user(['staff']);
const runner = await api.user();
const other = await api.user();
// The runner: three runs and a hike; the other user: one run.
for (const [i, sport] of [RUNNING, RUNNING, RUNNING, HIKING].entries())
  await created(runner, { sport: `/v2/sports/${sport}`, startdate: `2024-05-0${i + 1}T08:30:00+02:00` });
await created(other);
test.after.always(async () => {
  await workers?.close();
  await api.close();
  await rm(api.config.STORAGE_DIR, { recursive: true, force: true });
});

const start = (u: TrackingTestUser, body: unknown) => api.call('POST', '/jobs', u, { body });
const { jobOf, ended } = jobReader(api);
const paths = (body: unknown) =>
  ((body as { violations?: { propertyPath: string }[] }).violations ?? []).map((v) => v.propertyPath);

let waiting: Body | undefined;

test.serial('a caller without the staff role gets 403, in the Hydra error format', async (t) => {
  const res = await start(runner, { type: 'records_recompute', params: { user: runner.ldid } });
  t.is(res.status, 403);
  t.is((res.body as Body)['@type'], 'hydra:Error');
  t.is(await db.selectFrom('jobs').select('id').executeTakeFirst(), undefined, 'no job written');
});

test.serial('bad params are a 422 naming params.<option>; imports and unknown types are no batch job', async (t) => {
  const refused = async (body: unknown) => {
    const res = await start(staff, body);
    t.is(res.status, 422, JSON.stringify(res.body));
    return paths(res.body);
  };
  t.deepEqual(await refused({ type: 'records_recompute', params: {} }), ['params.user']);
  t.deepEqual(await refused({ type: 'records_recompute', params: { user: runner.ldid, all: true } }), ['params.user']);
  t.deepEqual(await refused({ type: 'records_recompute', params: { user: runner.ldid, since: 'yesterday' } }), [
    'params.since',
  ]);
  t.deepEqual(
    await refused({ type: 'statistics_rebuild', params: { all: true, since: '2025-01-01', until: '2024-01-01' } }),
    ['params.until'],
  );
  t.deepEqual(await refused({ type: 'records_recompute', params: { all: true, sport: ['run'] } }), ['params.sport']);
  t.deepEqual(await refused({ type: 'records_recompute', params: { all: true, sport: 999999 } }), ['params.sport']);
  t.deepEqual(await refused({ type: 'thumbnails_rebuild', params: { user: 'nobody-here' } }), ['params.user']);
  t.true((await refused({ type: 'records_recompute', params: { all: true, force: true } })).includes('params'));
  for (const type of ['activity_import', 'bulk_import', 'everything'])
    t.deepEqual(await refused({ type, params: { all: true } }), ['type']);
  t.is(await db.selectFrom('jobs').select('id').executeTakeFirst(), undefined, 'no job written');
});

test.serial('without a worker of the records queue, an accepted job waits, pending', async (t) => {
  const res = await start(staff, {
    type: 'records_recompute',
    params: { user: runner.ldid, sport: [`/v2/sports/${RUNNING}`] },
  });
  t.is(res.status, 202, JSON.stringify(res.body));
  const job = res.body as Body;
  t.is(res.headers.get('location'), `${api.config.PUBLIC_URL}/v2/jobs/${job.id}`);
  t.like(job, { state: 'pending', type: 'records_recompute', owner: `/v2/users/${staff.ldid}`, progress: null });
  t.deepEqual(job.params, [`user=${runner.ldid}`, `sport=${RUNNING}`]);
  t.true(await relayed(db, `records-recompute-job-${job.id as string}`), 'the job is in Redis');
  t.like(await jobOf(staff, job.id as string), { state: 'pending', startedAt: null });
  const listed = await api.call('GET', '/jobs?type=records_recompute', staff);
  t.deepEqual(
    (listed.body as { 'hydra:member': Body[] })['hydra:member'].map((m) => m.id),
    [job.id],
  );
  waiting = job;
});

test.serial("another user's job is 404, to read and to cancel", async (t) => {
  if (!waiting) return t.fail('no job from the test before');
  t.is((await api.call('GET', `/jobs/${waiting.id}`, runner)).status, 404);
  t.is((await api.call('PUT', `/jobs/${waiting.id}`, runner, { body: { state: 'cancelled' } })).status, 404);
  t.is(((await api.call('GET', '/jobs', runner)).body as Body)['hydra:totalItems'], 0);
});

test.serial('once a worker runs, the records_recompute job follows its activities to done', async (t) => {
  if (!waiting) return t.fail('no job from the test before');
  workers = await startWorkers(
    { ...api.config, WORKER_QUEUES: ['records', 'thumbnails'] },
    { logger: createLogger('silent', 'worker') },
  );
  const job = await ended(staff, waiting.id as string);
  t.is(job.state, 'done', JSON.stringify(job));
  // The runner's three runs, not the hike nor the other user's run.
  t.deepEqual(job.progress, { total: 3, done: 3, failed: 0 });
  t.truthy(job.startedAt);
  t.truthy(job.finishedAt);
  t.like(job.result, { activities: 3 });
  t.is(job.error, null);

  // Activities whose records do not reflect their version any more (changed behind the workers'
  // back): the job's worker enqueues them again and stays running until each is recomputed.
  await db
    .updateTable('activities')
    .set((eb) => ({ version: eb('version', '+', 1) }))
    .where('user_id', '=', runner.ldid)
    .execute();
  const again = await start(staff, { type: 'records_recompute', params: { user: runner.ldid } });
  t.is(again.status, 202);
  const done = await ended(staff, (again.body as Body).id as string);
  t.like(done, { state: 'done', progress: { total: 4, done: 4, failed: 0 }, result: { activities: 4, enqueued: 4 } });
  const states = await db
    .selectFrom('activity_records_state as s')
    .innerJoin('activities as a', 'a.id', 's.activity_id')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('a.user_id', '=', runner.ldid)
    .whereRef('s.version', '=', 'a.version')
    .executeTakeFirstOrThrow();
  t.is(Number(states.n), 4, 'every activity recomputed at its version');
});

test.serial('statistics_rebuild for all: one rebuild per tracking user, followed to done', async (t) => {
  const res = await start(staff, { type: 'statistics_rebuild', params: { all: true } });
  t.is(res.status, 202, JSON.stringify(res.body));
  t.deepEqual((res.body as Body).params, ['all=true']);
  const users = await db
    .selectFrom('tracking_users')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .executeTakeFirstOrThrow();
  const job = await ended(staff, (res.body as Body).id as string);
  t.like(job, { state: 'done', error: null });
  t.deepEqual(job.progress, { total: Number(users.n), done: Number(users.n), failed: 0 });
  t.like(job.result, { users: Number(users.n) });
  t.truthy(job.finishedAt);
});

test.serial("thumbnails_rebuild for a user: their activities' thumbnails, followed to done", async (t) => {
  const res = await start(staff, { type: 'thumbnails_rebuild', params: { user: runner.ldid } });
  t.is(res.status, 202, JSON.stringify(res.body));
  const job = await ended(staff, (res.body as Body).id as string);
  t.like(job, { state: 'done', error: null, progress: { total: 4, done: 4, failed: 0 } });
  const result = job.result as { activities: { total: number }; pictures: { total: number } };
  t.is(result.activities.total, 4);
  t.is(result.pictures.total, 0, 'place pictures belong to no user');
  t.truthy(job.finishedAt);
  const listed = await api.call('GET', '/jobs?state=done', staff);
  t.is((listed.body as Body)['hydra:totalItems'], 4);
});
