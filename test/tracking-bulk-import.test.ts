import { existsSync } from 'node:fs';
import { mkdir, readdir, rm, utimes, writeFile } from 'node:fs/promises';
import path from 'node:path';
import test from 'ava';
import { runStartedDeletions, startAccountDeletion } from '../shared/services/account-deletion.ts';
import { IMPORTS_STORAGE_DIR } from '../shared/tracking/jobs/job-files.ts';
import { ORPHAN_JOB_FILE_AGE_S, sweepOrphanJobFiles } from '../shared/tracking/jobs/job-files-sweep.ts';
import { jobReader } from './helpers/jobs.ts';
import { drainOutbox } from './helpers/outbox.ts';
import { startTrackingApi, type TrackingTestUser } from './helpers/tracking.ts';
import { startReceiver } from './helpers/webhook-receiver.ts';
import { WorkerProcess } from './helpers/worker-process.ts';
import { gpxOf, makeZip, renameInZip, STRAVA_HEADER } from './helpers/zips.ts';

// Issue 38 §2: a bulk import of a whole history, end to end over HTTP with real worker processes.
// The API runs first without any worker of the imports queue (a zip waits as a pending job, its
// bytes never read by the API); the worker then splits it, imports its files, and the records,
// statistics and thumbnails follow once for the whole.

const env = { OUTBOX_POLL_MS: '50', WEBHOOKS_ALLOW_HTTP: 'true', WEBHOOKS_ALLOW_PRIVATE: 'true' };
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
const ZIP = { 'content-type': 'application/zip' };
const post = (u: TrackingTestUser, bytes: Uint8Array | string, headers: Record<string, string> = ZIP, query = '') =>
  api.call('POST', `/file_import/activities${query}`, u, { raw: bytes, headers });
const { jobOf, ended } = jobReader(api);

const run = (day: number, points = 120) => gpxOf(new Date(Date.UTC(2024, 4, day, 7)), points);
const me = (u: TrackingTestUser) => `/v2/users/${u.ldid}`;

async function startWorker(): Promise<void> {
  if (worker) return;
  worker = WorkerProcess.of(api.config, { ...env, WORKER_QUEUES: 'imports,records,thumbnails,webhooks' });
  await worker.started();
}

test.serial('without an imports worker a zip waits unread; a bulk import cancelled then is never split', async (t) => {
  const u = await api.user();
  const zip = await makeZip([{ name: '1.gpx', bytes: run(1) }]);
  const res = await post(u, zip, { ...ZIP, prefer: 'respond-async' });
  t.is(res.status, 202, JSON.stringify(res.body));
  t.is(res.headers.get('preference-applied'), 'respond-async');
  const job = res.body as Body;
  t.like(job, { '@type': 'Job', type: 'bulk_import', state: 'pending', progress: null, owner: me(u) });
  t.is(res.headers.get('location'), `${api.config.PUBLIC_URL}/v2/jobs/${job.id}`);
  // Nobody split it: no child job, no activity.
  t.is((await api.call('GET', `/jobs?parent=/v2/jobs/${job.id}`, u)).body['hydra:totalItems'], 0);
  const cancelled = await api.call('PUT', `/jobs/${job.id}`, u, { body: { state: 'cancelled' } });
  t.is(cancelled.status, 200);
  await startWorker();
  await drainOutbox(db);
  t.like(await jobOf(u, job.id as string), { state: 'cancelled', progress: null });
  t.is((await api.call('GET', '/activities', u)).body['hydra:totalItems'], 0);
  // Its worker found it cancelled and removed its zip.
  t.false(existsSync(path.join(api.config.STORAGE_DIR, IMPORTS_STORAGE_DIR, job.id as string)));
});

test.serial(
  'a Strava-style zip: each file a job, the listing applied, duplicates and other files answered per file, the rest once at the end',
  async (t) => {
    await startWorker();
    const u = await api.user();
    const hook = await api.call('POST', '/user_web_hooks', u, {
      body: { user: me(u), url: `${receiver.url}/bulk`, events: ['import_done', 'import_failed', 'activity_create'] },
    });
    t.is(hook.status, 201);
    const csv = `${STRAVA_HEADER}
1,"May 1, 2024",Morning Run,Run,"Easy, with strides",120,1,,,false,,,activities/1.gpx,,,120,120,1
2,"May 2, 2024",Lunch Ride,Ride,,120,1,,,false,,,activities/2.gpx.gz,,,120,120,1
`;
    const zip = await makeZip([
      { name: 'activities.csv', bytes: csv },
      { name: 'activities/1.gpx', bytes: run(1) },
      { name: 'activities/2.gpx.gz', bytes: run(2), gzip: true },
      { name: 'activities/3.gpx', bytes: run(3) },
      { name: 'activities/copy-of-1.gpx', bytes: run(1) },
      { name: 'profile.jpg', bytes: Buffer.from([0xff, 0xd8, 0xff, 0xe0]) },
    ]);
    const res = await post(u, zip, ZIP, '?sport=/v2/sports/168');
    t.is(res.status, 202, JSON.stringify(res.body));
    const bulk = await ended(u, (res.body as Body).id as string);
    t.like(bulk, { state: 'done', progress: { total: 5, done: 3, failed: 2 }, result: { imported: 3, failed: 2 } });
    t.truthy(bulk.finishedAt);

    const children = (await api.call('GET', `/jobs?parent=/v2/jobs/${bulk.id}`, u)).body['hydra:member'] as Body[];
    t.deepEqual(
      children.map((c) => [c.fileName, c.state, c.parent]),
      [
        ['activities/1.gpx', 'done', `/v2/jobs/${bulk.id}`],
        ['activities/2.gpx.gz', 'done', `/v2/jobs/${bulk.id}`],
        ['activities/3.gpx', 'done', `/v2/jobs/${bulk.id}`],
        ['activities/copy-of-1.gpx', 'failed', `/v2/jobs/${bulk.id}`],
        ['profile.jpg', 'skipped', `/v2/jobs/${bulk.id}`],
      ],
    );
    const [first, second, third, copy, photo] = children;
    t.like(copy, { error: { status: 409, activity: first?.activity } });
    t.like(photo, { error: { status: 415 } });
    t.regex(String((photo?.error as Body | undefined)?.detail), /not a GPX, TCX or FIT file|not an activity/i);
    // The listing names and sports its files; a file it does not list keeps the request's sport.
    const activity = async (job: Body | undefined) =>
      (
        await api.fetch(job?.activity as string, {
          headers: { authorization: `Bearer ${u.token}`, 'x-api-key': api.apiKey },
        })
      ).json() as Promise<Body>;
    t.like(await activity(first), { name: 'Morning Run', sport: '/v2/sports/121', comment: 'Easy, with strides' });
    t.like(await activity(second), { name: 'Lunch Ride', sport: '/v2/sports/381' });
    t.like(await activity(third), { sport: '/v2/sports/168' });

    // Once every file ended: one import_done for the whole, no activity_create per file.
    t.true(await receiver.until(() => receiver.at('/bulk').length >= 1));
    await drainOutbox(db);
    const events = receiver.at('/bulk').map((r) => JSON.parse(r.body) as Body);
    t.deepEqual(
      events.map((e) => [e.type, e.resource]),
      [['import_done', `/v2/jobs/${bulk.id}`]],
    );
    t.like(events[0]?.data, { '@type': 'Job', type: 'bulk_import', progress: { total: 5, done: 3, failed: 2 } });
    // The records, statistics and thumbnails of the three followed.
    const state = await db
      .selectFrom('activity_records_state')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where(
        'activity_id',
        'in',
        [first, second, third].map((j) => String(j?.activity).split('/').pop() as string),
      )
      .executeTakeFirstOrThrow();
    t.is(Number(state.n), 3);
    const sumups = await api.call('GET', '/user_sumups?type=year', u);
    t.true((sumups.body['hydra:totalItems'] as number) > 0);
    // Every file the jobs kept is gone once they ended.
    const left = await readdir(path.join(api.config.STORAGE_DIR, IMPORTS_STORAGE_DIR)).catch(() => []);
    t.deepEqual(
      left.filter((f) => [bulk.id, ...children.map((c) => c.id)].includes(f)),
      [],
    );
  },
);

test.serial('a zip over a limit is refused whole, naming the limit; nothing is imported', async (t) => {
  await startWorker();
  const u = await api.user();
  const bomb = await makeZip([{ name: 'zeros.gpx', bytes: Buffer.alloc(4 * 1024 * 1024) }]);
  const res = await post(u, bomb);
  t.is(res.status, 202);
  const job = await ended(u, (res.body as Body).id as string);
  t.like(job, { state: 'failed', progress: null, error: { status: 422 } });
  t.regex((job.error as Body).detail as string, /ZIP_LIMITS\.maxRatio: 100/);

  const climbing = renameInZip(await makeZip([{ name: 'ab/1.gpx', bytes: run(5) }]), 'ab/1.gpx', '../1.gpx');
  const refused = await ended(u, ((await post(u, climbing)).body as Body).id as string);
  t.like(refused, { state: 'failed', error: { status: 422 } });
  t.regex((refused.error as Body).detail as string, /path/);
  t.is((await api.call('GET', '/activities', u)).body['hydra:totalItems'], 0);

  const empty = await ended(u, ((await post(u, await makeZip([]))).body as Body).id as string);
  t.like(empty, { state: 'failed', error: { status: 422, detail: 'the zip holds no file' } });
});

test.serial('a listing that does not parse is reported; its files are still imported', async (t) => {
  await startWorker();
  const u = await api.user();
  const zip = await makeZip([
    { name: 'activities.csv', bytes: 'Filename,Activity Name\n"activities/1.gpx,Unclosed\n' },
    { name: 'activities/1.gpx', bytes: run(14) },
  ]);
  const bulk = await ended(u, ((await post(u, zip)).body as Body).id as string);
  t.like(bulk, { state: 'done', progress: { total: 1, done: 1, failed: 0 } });
  t.regex((bulk.result as Body).listingProblem as string, /does not parse/);
});

test('bad input: not a zip or no body (415), another user’s bulk import (404)', async (t) => {
  const u = await api.user();
  const other = await api.user();
  const notZip = await post(u, run(1));
  t.is(notZip.status, 415, JSON.stringify(notZip.body));
  t.regex(notZip.body['hydra:description'] as string, /not a zip/);
  // A request without a body is read by no input (as for the other file inputs).
  t.is((await post(u, '')).status, 415);
  const zip = await makeZip([{ name: '1.gpx', bytes: run(9) }]);
  const res = await post(u, zip);
  t.is(res.status, 202);
  t.is((await api.call('GET', `/jobs/${(res.body as Body).id}`, other)).status, 404);
  t.is((await api.call('PUT', `/jobs/${(res.body as Body).id}`, other, { body: { state: 'cancelled' } })).status, 404);
  // No job was left for the refused bodies.
  const jobs = await db
    .selectFrom('jobs')
    .select('id')
    .where('user_id', '=', u.ldid)
    .where('parent_id', 'is', null)
    .execute();
  t.is(jobs.length, 1);
});

test.serial(
  'old files no open job names are swept; an account deletion removes its pending imports and their files',
  async (t) => {
    const folder = path.join(api.config.STORAGE_DIR, IMPORTS_STORAGE_DIR);
    await mkdir(folder, { recursive: true });
    // A pending job of a user whose account goes: no worker runs while it is deleted.
    await worker?.stop();
    worker = undefined;
    const u = await api.user();
    const pending = await post(u, await makeZip([{ name: '1.gpx', bytes: run(12) }]));
    t.is(pending.status, 202);
    const pendingFile = path.join(folder, (pending.body as Body).id as string);
    t.true(existsSync(pendingFile));
    const old = new Date(Date.now() - 2 * ORPHAN_JOB_FILE_AGE_S * 1000);
    const orphan = path.join(folder, 'a'.repeat(32));
    const temporary = path.join(folder, `${'b'.repeat(32)}.0a1b.tmp`);
    const young = path.join(folder, 'c'.repeat(32));
    for (const file of [orphan, temporary, young]) await writeFile(file, 'x');
    for (const file of [orphan, temporary, pendingFile]) await utimes(file, old, old);
    t.is(await sweepOrphanJobFiles(db, api.config.STORAGE_DIR), 2);
    t.deepEqual([orphan, temporary, young, pendingFile].map(existsSync), [false, false, true, true]);

    await startAccountDeletion(db, u.id);
    await runStartedDeletions(db, { storageDir: api.config.STORAGE_DIR, accountIds: [u.id] });
    t.false(existsSync(pendingFile));
    t.is((await db.selectFrom('jobs').select('id').where('user_id', '=', u.ldid).execute()).length, 0);
    await rm(young);
  },
);
