import { rm } from 'node:fs/promises';
import test from 'ava';
import { jobReader, relayed } from './helpers/jobs.ts';
import { startTrackingApi, type TrackingTestUser } from './helpers/tracking.ts';
import { startReceiver } from './helpers/webhook-receiver.ts';
import { WorkerProcess } from './helpers/worker-process.ts';
import { gpxOf } from './helpers/zips.ts';

// Issue 38 §1: imports as jobs (/v2/jobs), run by real worker processes. The API runs first
// without any worker of the imports queue: an accepted file waits as a pending job, read by no
// one, until a worker with WORKER_QUEUES=imports starts.

const env = {
  OUTBOX_POLL_MS: '50',
  IMPORT_ASYNC_ABOVE: '200kb',
  WEBHOOKS_ALLOW_HTTP: 'true',
  WEBHOOKS_ALLOW_PRIVATE: 'true',
};
const api = await startTrackingApi({ publicUrl: true, env });
const { db } = api.database;
const receiver = await startReceiver();
let worker: WorkerProcess | undefined;
test.after.always(async () => {
  await worker?.stop();
  await receiver.close();
  await api.close();
  await rm(api.config.STORAGE_DIR, { recursive: true, force: true });
});

type Body = Record<string, unknown>;
const ASYNC = { 'content-type': 'application/gpx+xml', prefer: 'respond-async' };
const post = (u: TrackingTestUser, bytes: string | Uint8Array, headers: Record<string, string> = ASYNC, query = '') =>
  api.call('POST', `/file_import/activities${query}`, u, { raw: bytes, headers });
const { jobOf, ended } = jobReader(api);

const run = (minute: number, points = 60) => gpxOf(new Date(Date.UTC(2024, 4, 1, 7, minute)), points);

test.serial(
  'without an imports worker the job waits; a worker started with WORKER_QUEUES=imports imports it',
  async (t) => {
    const u = await api.user();
    const hook = await api.call('POST', '/user_web_hooks', u, {
      body: { user: `/v2/users/${u.ldid}`, url: `${receiver.url}/imports`, events: ['import_done', 'import_failed'] },
    });
    t.is(hook.status, 201);
    const res = await post(u, run(0));
    t.is(res.status, 202, JSON.stringify(res.body));
    t.is(res.headers.get('preference-applied'), 'respond-async');
    const job = res.body as Body;
    t.like(job, {
      '@type': 'Job',
      state: 'pending',
      type: 'activity_import',
      activity: null,
      owner: `/v2/users/${u.ldid}`,
    });
    t.is(res.headers.get('location'), `${api.config.PUBLIC_URL}/v2/jobs/${job.id}`);
    // The API's relay moved the job to Redis; no process runs the queue: it waits, unread.
    t.true(await relayed(db, `import-${job.id as string}`), 'the job is in Redis');
    await new Promise((r) => setTimeout(r, 500));
    t.like(await jobOf(u, job.id as string), { state: 'pending', startedAt: null });
    t.is((await api.call('GET', '/activities', u)).body['hydra:totalItems'], 0);

    worker = WorkerProcess.of(api.config, {
      WORKER_QUEUES: 'imports,webhooks',
      OUTBOX_POLL_MS: '50',
      WEBHOOKS_ALLOW_HTTP: 'true',
      WEBHOOKS_ALLOW_PRIVATE: 'true',
    });
    await worker.started();
    const done = await ended(u, job.id as string);
    t.like(done, { state: 'done', error: null, result: { format: 'gpx', sportSource: 'fallback' } });
    t.regex(done.activity as string, /^\/v2\/activities\/[0-9a-f]{32}$/);
    t.truthy(done.startedAt);
    const activity = await api.fetch(done.activity as string, {
      headers: { authorization: `Bearer ${u.token}`, 'x-api-key': api.apiKey },
    });
    t.is(activity.status, 200);
    t.true(await receiver.until(() => receiver.at('/imports').length >= 1));
    const event = JSON.parse(receiver.at('/imports')[0]?.body ?? '{}');
    t.like(event, {
      type: 'import_done',
      resource: `/v2/jobs/${job.id}`,
      data: { '@type': 'Job', state: 'done', activity: done.activity },
    });
  },
);

test.serial('refusals end in the job: the status and reasons the synchronous path answers', async (t) => {
  const u = await api.user();
  const sync = await post(u, run(10), { 'content-type': 'application/gpx+xml' });
  t.is(sync.status, 201, 'small, without Prefer: at once, as before');
  const cases: [string | Uint8Array, string, number, RegExp][] = [
    [run(10), '', 409, /duplicate/],
    ['<gpx version="1.1"><trk><trkseg><trkpt lat="1" lon="1"></trkpt>', '', 422, /.+/],
    ['<html><body>hello</body></html>', '', 415, /is not a GPX, TCX or FIT file \(its XML root element is <html>\)/],
    [run(20), '?userDevice=nope', 422, /is not one of your devices/],
    [run(30), '?sport=999999', 422, /999999/],
  ];
  for (const [bytes, query, status, detail] of cases) {
    const syncRes = await post(u, bytes, { 'content-type': 'application/gpx+xml' }, query);
    const res = await post(u, bytes, ASYNC, query);
    t.is(res.status, 202);
    const job = await ended(u, (res.body as Body).id as string);
    t.is(job.state, 'failed', query);
    const error = job.error as Body;
    t.is(error.status, status, JSON.stringify(error));
    t.is(syncRes.status, status, 'the synchronous answer of the same file');
    t.regex(error.detail as string, detail);
    if (status === 409) t.is(error.activity, (sync.body as Body)['@id']);
    if (status === 422 && Array.isArray((syncRes.body as Body).violations))
      t.deepEqual(
        (error.violations as Body[]).map((v) => v.message),
        ((syncRes.body as Body).violations as Body[]).map((v) => v.message),
      );
  }
});

test.serial(
  'a file over IMPORT_ASYNC_ABOVE always runs as a job; an Idempotency-Key retry gets the same job',
  async (t) => {
    const u = await api.user();
    const big = run(40, 3000);
    t.true(big.length > 200 * 1024);
    const headers = { 'content-type': 'application/gpx+xml', 'idempotency-key': 'big-1' };
    const first = await post(u, big, headers);
    t.is(first.status, 202);
    t.is(first.headers.get('preference-applied'), null);
    const again = await post(u, big, headers);
    t.is(again.status, 202);
    t.is(again.headers.get('idempotent-replayed'), 'true');
    t.is((again.body as Body).id, (first.body as Body).id);
    t.like(await ended(u, (first.body as Body).id as string), { state: 'done' });
  },
);

test.serial(
  "/v2/jobs lists the caller's jobs with filters; another user's job is a 404; PUT cancels a pending job only",
  async (t) => {
    const u = await api.user();
    const other = await api.user();
    await worker?.stop();
    worker = undefined;
    const a = (await post(u, run(50))).body as Body;
    const b = (await post(u, run(55))).body as Body;
    t.is((await api.call('GET', `/jobs/${a.id}`, other)).status, 404);
    t.is((await api.call('PUT', `/jobs/${a.id}`, other, { body: { state: 'cancelled' } })).status, 404);
    const list = (await api.call('GET', '/jobs?state=pending&type=activity_import', u)).body as Body;
    t.is(list['hydra:totalItems'], 2);
    t.deepEqual(
      (list['hydra:member'] as Body[]).map((j) => j.id),
      [b.id, a.id],
    );
    t.is(((await api.call('GET', '/jobs?state=done', u)).body as Body)['hydra:totalItems'], 0);
    t.is(((await api.call('GET', '/jobs', other)).body as Body)['hydra:totalItems'], 0);

    t.is((await api.call('PUT', `/jobs/${a.id}`, u, { body: { state: 'done' } })).status, 422);
    const cancelled = await api.call('PUT', `/jobs/${a.id}`, u, { body: { state: 'cancelled' } });
    t.is(cancelled.status, 200);
    t.like(cancelled.body, { state: 'cancelled' });
    t.is((await api.call('PUT', `/jobs/${a.id}`, u, { body: { state: 'cancelled' } })).status, 409);
    // A job a worker has taken.
    await db
      .updateTable('jobs')
      .set({ state: 'running' })
      .where('id', '=', b.id as string)
      .execute();
    const running = await api.call('PUT', `/jobs/${b.id}`, u, { body: { state: 'cancelled' } });
    t.is(running.status, 409);
    t.regex((running.body as Body)['hydra:description'] as string, /is running/);
    await db
      .updateTable('jobs')
      .set({ state: 'pending' })
      .where('id', '=', b.id as string)
      .execute();

    // The cancelled job's worker finds nothing to do; the other is imported.
    worker = WorkerProcess.of(api.config, { WORKER_QUEUES: 'imports', OUTBOX_POLL_MS: '50' });
    await worker.started();
    t.like(await ended(u, b.id as string), { state: 'done' });
    t.like(await jobOf(u, a.id as string), { state: 'cancelled', activity: null });
  },
);

test('a job id that is no job id is a 404 (or 422 for a bad filter)', async (t) => {
  const u = await api.user();
  t.is((await api.call('GET', '/jobs/nope', u)).status, 404);
  t.is((await api.call('GET', '/jobs?state=bored', u)).status, 422);
  t.is((await api.call('GET', '/jobs', null)).status, 401);
});
