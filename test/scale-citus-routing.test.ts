import { mkdir, readFile, rm, utimes, writeFile } from 'node:fs/promises';
import path from 'node:path';
import test from 'ava';
import { sql } from 'kysely';
import sharp from 'sharp';
import { computeRecommendations } from '../shared/catalogue/recommendations-compute.ts';
import { createLogger } from '../shared/observability/logger.ts';
import { runStartedDeletions, startAccountDeletion, startDueDeletions } from '../shared/services/account-deletion.ts';
import { channelFromBytes } from '../shared/tracking/activities/binary.ts';
import { deadBandClimb, refreshComputedClimbs } from '../shared/tracking/activities/climb-store.ts';
import { DATATYPE } from '../shared/tracking/activities/data.ts';
import { fillMovingFields } from '../shared/tracking/activities/moving-store.ts';
import { expireTombstones } from '../shared/tracking/activities/tombstones.ts';
import { cleanupExports, ORPHAN_FILE_AGE_S } from '../shared/tracking/exports/cleanup.ts';
import { markExportFailed } from '../shared/tracking/exports/job.ts';
import { EXPORTS_STORAGE_DIR } from '../shared/tracking/exports/store.ts';
import { IMPORTS_STORAGE_DIR } from '../shared/tracking/jobs/job-files.ts';
import { sweepOrphanJobFiles } from '../shared/tracking/jobs/job-files-sweep.ts';
import { enqueueRecompute, recomputeProgress } from '../shared/tracking/records/recompute-requests.ts';
import { DEFAULT_RECORDS_SETTINGS } from '../shared/tracking/records/settings.ts';
import { fillStreamPreviews } from '../shared/tracking/streams/preview-store.ts';
import { enqueueSumupsRebuild, sumupsRebuildProgress } from '../shared/tracking/sumups/rebuild-requests.ts';
import { enqueueThumbnailRebuild } from '../shared/tracking/thumbnail/thumbnail-rebuild.ts';
import { purgeWebhookEvents } from '../shared/tracking/webhooks/cleanup.ts';
import { sweepLostDeliveries } from '../shared/tracking/webhooks/sweep.ts';
import { startWorkers } from '../workers/worker.ts';
import { type CapturedStatement, captureStatements, tableColumns } from './helpers/citus-capture.ts';
import { DISTRIBUTION, NOT_APPLICATION_TABLES } from './helpers/citus-distribution.ts';
import { loadSqlParser, routingOf } from './helpers/citus-routing.ts';
import { functionAt, type QuerySite, querySites } from './helpers/citus-sites.ts';
import { drainOutbox } from './helpers/outbox.ts';
import { startTrackingApi, type TrackingTestUser } from './helpers/tracking.ts';
import { startReceiver } from './helpers/webhook-receiver.ts';
import { gpxOf, makeZip } from './helpers/zips.ts';

// Issue 26 §5, the path to Citus (docs/scale-out.md): the tracking API and its workers run a
// scenario that sends every tracking statement the code has at least once; each statement, as
// sent, must route to one shard of the layout of helpers/citus-distribution.ts, or be one of
// UNROUTED below with its reason.

await loadSqlParser();
const env = {
  OUTBOX_POLL_MS: '50',
  WEBHOOKS_ALLOW_HTTP: 'true',
  WEBHOOKS_ALLOW_PRIVATE: 'true',
  WEBHOOKS_RETRY_BASE_MS: '20',
};
const api = await startTrackingApi({ publicUrl: true, env });
const { db } = api.database;
const receiver = await startReceiver();
const workers = await startWorkers(
  { ...api.config, WORKER_QUEUES: ['records', 'thumbnails', 'exports', 'webhooks'] },
  { logger: createLogger('silent', 'worker') },
);
// The imports queue's worker starts in the scenario, once a job was cancelled before it could run.
let importWorkers: Awaited<ReturnType<typeof startWorkers>> | undefined;
const columns = await tableColumns(db);
test.after.always(async () => {
  await receiver.close();
  await importWorkers?.close();
  await workers.close();
  await api.close();
  await rm(api.config.STORAGE_DIR, { recursive: true, force: true });
});

const me = (u: TrackingTestUser) => `/v2/users/${u.ldid}`;
type Body = Record<string, unknown>;

async function ok(res: Promise<{ status: number; body: unknown }>, ...expected: number[]): Promise<Body> {
  const { status, body } = await res;
  if (!expected.includes(status)) throw new Error(`answered ${status}: ${JSON.stringify(body)}`);
  return body as Body;
}

/** Waits until every outbox row is done (the jobs the scenario caused have run). */
async function drained(): Promise<void> {
  if ((await drainOutbox(db)) > 0) throw new Error('the outbox did not drain');
}

/** Every tracking call: the API's routes for one user, then the jobs and the operators' runs. */
async function scenario(): Promise<TrackingTestUser> {
  const u = await api.user();
  const other = await api.user();
  const call = (
    method: string,
    path: string,
    options?: { body?: unknown; headers?: Record<string, string>; raw?: RequestInit['body'] },
  ) => api.call(method, path, u, options);

  // The user and the referentials.
  await ok(call('GET', '/me'), 200);
  await ok(call('GET', `/users/${u.ldid}`), 200);
  await ok(call('PUT', `/users/${u.ldid}`, { body: { timezone: 'Europe/Paris' } }), 200);
  for (const path of [
    '/sports/121',
    '/datatypes/5',
    '/universes/1',
    '/device_models/1',
    '/firmwares/2',
    '/connectors/1',
  ])
    await ok(call('GET', path), 200);

  // Webhooks: one answering, one failing (its retries, probe and giving up).
  receiver.on('/failing', (_req, res) => {
    res.statusCode = 500;
    res.end();
  });
  const events = [
    'activity_create',
    'activity_update',
    'activity_delete',
    'records_update',
    'export_ready',
    'equipment_alert',
    'challenge_achieved',
    'import_done',
    'import_failed',
  ];
  const hook = await ok(
    call('POST', '/user_web_hooks', { body: { user: me(u), url: `${receiver.url}/hook`, events } }),
    201,
  );
  const failing = await ok(
    call('POST', '/user_web_hooks', {
      body: { user: me(u), url: `${receiver.url}/failing`, events: ['activity_create'] },
    }),
    201,
  );
  await ok(call('GET', `/user_web_hooks/${hook.id}`), 200);
  await ok(call('GET', '/user_web_hooks'), 200);
  await ok(call('PUT', `/user_web_hooks/${hook.id}`, { body: { events } }), 200);
  await ok(call('POST', `/user_web_hooks/${hook.id}/rotate_secret`), 200, 201);

  // Devices.
  const device = await ok(
    call('POST', '/user_devices', {
      body: { serial: 'SN-1', model: '/v2/device_models/1', firmware: '/v2/firmwares/2', user: me(u), ownership: 1 },
    }),
    201,
  );
  const spare = await ok(
    call('POST', '/user_devices', {
      body: { serial: 'SN-2', model: '/v2/device_models/1', firmware: '/v2/firmwares/2', user: me(u), ownership: 1 },
    }),
    201,
  );
  await ok(
    call('POST', '/user_devices', {
      body: { serial: 'SN-1', model: '/v2/device_models/1', firmware: '/v2/firmwares/2', user: me(u), ownership: 1 },
    }),
    422,
  );
  await ok(call('GET', `/user_devices/${device.id}`), 200);
  await ok(call('GET', '/user_devices'), 200);
  await ok(call('PUT', `/user_devices/${spare.id}`, { body: { ownership: 2 } }), 200);
  await ok(call('DELETE', `/user_devices/${spare.id}`), 204);

  // Gear (auto-assigned to the runs below, its alert reached by the first) and a challenge (achieved by them).
  const shoes = await ok(
    call('POST', '/user_equipments', {
      body: {
        category: 'shoes',
        brand: 'Kalenji',
        name: 'Kiprun',
        sportsAutoAssigned: ['/v2/sports/121'],
        alertDistance: 5,
      },
    }),
    201,
  );
  const bike = await ok(
    call('POST', '/user_equipments', { body: { category: 'bike', brand: 'Triban', name: 'RC 520', user: me(u) } }),
    201,
  );
  await ok(call('GET', `/user_equipments/${shoes.id}`), 200);
  await ok(call('GET', `/user_equipments/${shoes.id}/sumups`), 200);
  await ok(call('GET', '/user_equipments?sportsAutoAssigned=121'), 200);
  await ok(call('GET', '/user_equipments?page=9'), 200);
  await ok(call('GET', '/user_equipments/autocomplete/brand/Kal'), 200);
  await ok(call('PUT', `/user_equipments/${shoes.id}`, { body: { alertDistance: 10 } }), 200);
  const challenge = await ok(
    call('POST', '/user_challenges', {
      body: {
        name: 'May',
        targetDatatype: '/v2/datatypes/5',
        target: 1000,
        startedAt: '2026-04-01T00:00:00+02:00',
        endedAt: '2026-06-01T00:00:00+02:00',
      },
    }),
    201,
  );
  const dropped = await ok(
    call('POST', '/user_challenges', {
      body: {
        name: 'Rides',
        targetDatatype: '/v2/datatypes/98',
        startedAt: '2026-04-01T00:00:00+02:00',
        endedAt: '2026-06-01T00:00:00+02:00',
        sport: '/v2/sports/385',
      },
    }),
    201,
  );
  await ok(call('GET', `/user_challenges/${challenge.id}`), 200);
  await ok(call('GET', '/user_challenges?order[target]=desc&sport=385'), 200);
  await ok(call('PUT', `/user_challenges/${challenge.id}`, { body: { target: 1500 } }), 200);
  await ok(call('DELETE', `/user_challenges/${dropped.id}`), 204);
  await drained();

  // An uploaded picture, for an activity's images.
  const picture = await sharp({ create: { width: 8, height: 8, channels: 3, background: '#c33' } })
    .png()
    .toBuffer();
  const form = new FormData();
  form.append('file', new Blob([new Uint8Array(picture)], { type: 'image/png' }), 'p.png');
  const upload = await ok(call('POST', '/upload', { raw: form }), 200);

  // Activities: one with a track, a long one (its streams get a preview), one a device block names.
  const datastream: Body = {};
  const locations: Body = {};
  for (let s = 0; s < 600; s++) {
    datastream[String(s)] = { '1': 120 + (s % 7), '5': s * 3.1 };
    locations[String(s)] = { latitude: 50.6292 + s * 2e-5, longitude: 3.0573 + s * 1e-5, elevation: 21 + (s % 5) };
  }
  const runBody = {
    name: 'Run',
    user: me(u),
    sport: '/v2/sports/121',
    startdate: '2026-05-01T08:30:00+02:00',
    duration: 600,
    dataSummaries: { '5': 1860, '24': 600 },
    userDevice: `/v2/user_devices/${device.id}`,
    connector: '/v2/connectors/1',
    images: [upload.url],
    datastream,
    locations,
  };
  const run = await ok(call('POST', '/activities', { body: runBody }), 201);
  await ok(call('POST', '/activities', { body: runBody }), 409);
  const long: Body = {};
  for (let s = 0; s < 4200; s++) long[String(s)] = { '1': 110 + (s % 13), '5': s * 2.9 };
  const ride = await ok(
    call('POST', '/activities', {
      body: {
        user: me(u),
        sport: '/v2/sports/121',
        startdate: '2026-05-02T08:30:00+02:00',
        duration: 4200,
        dataSummaries: {},
        datastream: long,
      },
    }),
    201,
  );
  const recorded = await ok(
    call('POST', '/activities', {
      body: {
        user: me(u),
        sport: '/v2/sports/121',
        startdate: '2026-05-03T08:30:00+02:00',
        duration: 60,
        dataSummaries: {},
        connector: '/v2/connectors/4',
        location: { elapsed_time: 0, latitude: 50.63, longitude: 3.06, device: { model: 1, firmware: 2, sn: 'SN-9' } },
      },
    }),
    201,
  );
  const gpx = await readFile(new URL('./fixtures/tracking/devices/gpx/korita-zbevnica.gpx', import.meta.url));
  await ok(
    call('POST', '/activities?sport=168', { raw: gpx, headers: { 'content-type': 'application/gpx+xml' } }),
    201,
  );
  await drained();

  // Imports as jobs: one cancelled before any worker of the imports queue runs, one imported, one
  // refused (the file above again), run by the worker started then.
  const fixture = (name: string) => readFile(new URL(`./fixtures/tracking/devices/gpx/${name}`, import.meta.url));
  const later = { 'content-type': 'application/gpx+xml', prefer: 'respond-async' };
  const cancelled = await ok(
    call('POST', '/file_import/activities', { raw: await fixture('cerknicko-jezero.gpx'), headers: later }),
    202,
  );
  await ok(call('PUT', `/jobs/${cancelled.id}`, { body: { state: 'cancelled' } }), 200);
  await ok(call('PUT', `/jobs/${cancelled.id}`, { body: { state: 'cancelled' } }), 409);
  const imported = await ok(
    call('POST', '/file_import/activities?sport=121', {
      raw: gpxOf(new Date('2026-05-06T06:00:00Z'), 300),
      headers: later,
    }),
    202,
  );
  await ok(call('POST', '/file_import/activities?sport=168', { raw: gpx, headers: later }), 202);
  await ok(call('GET', '/jobs?state=pending&type=activity_import&createdAt[after]=2026-01-01T00:00:00Z'), 200);
  importWorkers = await startWorkers(
    { ...api.config, WORKER_QUEUES: ['imports'] },
    { logger: createLogger('silent', 'worker') },
  );
  await drained();
  const job = await ok(call('GET', `/jobs/${imported.id}`), 200);
  if (job.state !== 'done') throw new Error(`the import job ended ${job.state}: ${JSON.stringify(job.error)}`);
  await ok(call('GET', '/jobs?state[]=done&state[]=failed'), 200);
  // A bulk import: a zip split into a job per file, finished by its last file.
  const zip = await makeZip([
    { name: 'activities/1.gpx', bytes: gpxOf(new Date('2026-05-07T06:00:00Z'), 120) },
    { name: 'activities/2.gpx.gz', bytes: gpxOf(new Date('2026-05-08T06:00:00Z'), 120), gzip: true },
    { name: 'notes.txt', bytes: 'not an activity' },
  ]);
  const bulk = await ok(
    call('POST', '/file_import/activities', { raw: zip, headers: { 'content-type': 'application/zip' } }),
    202,
  );
  await drained();
  await ok(call('GET', `/jobs?parent=/v2/jobs/${bulk.id}`), 200);
  const split = await ok(call('GET', `/jobs/${bulk.id}`), 200);
  if (split.state !== 'done') throw new Error(`the bulk import ended ${split.state}: ${JSON.stringify(split.error)}`);

  // Reads of the activities and what the jobs made of them.
  await ok(call('GET', `/activities/${run.id}`), 200);
  await ok(call('GET', '/activities?sport=/v2/sports/121'), 200);
  await ok(call('PUT', `/activities/${run.id}`, { body: { name: 'Evening run' } }), 200);
  await drained();
  await ok(call('PUT', `/activities/${run.id}`, { body: { sport: '/v2/sports/388' } }), 200);
  await ok(
    call('PUT', `/activities/${run.id}`, {
      body: { equipments: [`/v2/user_equipments/${bike.id}`], dataSummaries: { '5': 1900, '24': 600 } },
    }),
    200,
  );
  await ok(
    call('POST', '/activities', {
      body: { ...runBody, startdate: '2026-05-05T08:30:00+02:00', equipments: ['/v2/user_equipments/none'] },
    }),
    422,
  );
  // The challenge's crossing moves on: a later ride gets a distance, then the run that crossed it less.
  await drained();
  await ok(call('PUT', `/activities/${ride.id}`, { body: { dataSummaries: { '5': 800 } } }), 200);
  await drained();
  await ok(call('PUT', `/activities/${run.id}`, { body: { dataSummaries: { '5': 1000, '24': 600 } } }), 200);
  await ok(call('GET', `/activities/${run.id}/streams`), 200);
  await ok(call('GET', `/activities/${ride.id}/streams?resolution=low`), 200);
  await ok(call('GET', `/activities/${run.id}/best_efforts`), 200);
  await ok(call('GET', `/activities/${run.id}/splits`), 200);
  await ok(call('GET', `/activities/${run.id}/laps`), 200, 404);
  await ok(call('GET', `/activities/${run.id}/similar/5`), 200);
  await ok(call('GET', `/activities/${run.id}.gpx`), 200);
  await drained();
  const records = (await ok(call('GET', '/user_records'), 200))['hydra:member'] as Body[];
  if (records[0]) await ok(call('GET', `/user_records/${records[0].id}`), 200);
  await ok(call('GET', '/user_sumups?page=50'), 200);
  await ok(call('GET', '/user_sumups?datatype=/v2/datatypes/5'), 200);
  const sumups = (await ok(call('GET', '/user_sumups?type=month'), 200))['hydra:member'] as Body[];
  if (sumups[0]) await ok(call('GET', `/user_sumups/${sumups[0].id}`), 200);
  await ok(call('GET', `/users/${u.ldid}/stats`), 200);

  // Measures.
  const measure = await ok(
    call('POST', '/user_measures', {
      body: { user: me(u), datatype: '/v2/datatypes/22', value: 72500, date: '2026-05-01T08:30:00+02:00' },
    }),
    201,
  );
  await ok(call('GET', `/user_measures/${measure.id}`), 200);
  await ok(call('GET', '/user_measures'), 200);
  await ok(call('PUT', `/user_measures/${measure.id}`, { body: { value: 72000 } }), 200);
  await ok(call('DELETE', `/user_measures/${measure.id}`), 204);

  // Measure goals (read with their progress), and gear deleted (its activities keep the others).
  const goal = await ok(
    call('POST', '/user_measure_goals', {
      body: { user: me(u), datatype: '/v2/datatypes/22', goal: 71000, startdate: '2026-04-01T00:00:00+02:00' },
    }),
    201,
  );
  const spareGoal = await ok(
    call('POST', '/user_measure_goals', {
      body: { user: me(u), datatype: '/v2/datatypes/22', goal: 70000, startdate: '2026-04-01T00:00:00+02:00' },
    }),
    201,
  );
  await ok(call('GET', `/user_measure_goals/${goal.id}`), 200);
  await ok(call('GET', '/user_measure_goals?datatype=22&order[startdate]=desc'), 200);
  await ok(call('PUT', `/user_measure_goals/${goal.id}`, { body: { initial: 72500 } }), 200);
  await ok(call('DELETE', `/user_measure_goals/${spareGoal.id}`), 204);
  await ok(call('DELETE', `/user_equipments/${bike.id}`), 204);

  // Shares, and the public page.
  const share = await ok(
    call('POST', '/share_activities', { body: { user: me(u), activity: `/v2/activities/${run.id}` } }),
    201,
  );
  await ok(call('GET', `/share_activities/${share.id ?? share.token}`), 200);
  await ok(call('GET', '/share_activities'), 200);
  const page = await api.fetch(new URL(share.url as string).pathname);
  if (page.status !== 200) throw new Error(`share page: ${page.status}`);
  await ok(call('DELETE', `/share_activities/${share.id ?? share.token}`), 204);

  // Sharing between users: the request, the answer, what the friend reads, the public list.
  const byOther = (method: string, path: string, options?: { body?: unknown }) =>
    api.call(method, path, other, options);
  await ok(byOther('GET', '/me'), 200);
  await ok(call('PUT', `/activities/${run.id}`, { body: { visibility: 'public', mapHiddenEnds: 100 } }), 200);
  const friendship = await ok(call('POST', '/share_users', { body: { user: me(other) } }), 201);
  await ok(call('GET', '/share_users'), 200);
  await ok(call('GET', `/share_users/${friendship.id}`), 200);
  await ok(byOther('GET', '/share_users?direction=received&status=pending'), 200);
  await ok(byOther('PUT', `/share_users/${friendship.id}`, { body: { status: 'accepted' } }), 200);
  await ok(byOther('GET', `/friends/${u.ldid}/activities`), 200);
  await ok(byOther('GET', `/friends/${u.ldid}/activities/${run.id}`), 200);
  await ok(byOther('GET', '/feed'), 200);
  await ok(byOther('GET', `/share_users_stats/${friendship.id}`), 200);
  await ok(byOther('GET', '/public_activities'), 200);
  await ok(byOther('GET', `/public_activities/${run.id}`), 200);
  await ok(byOther('DELETE', `/share_users/${friendship.id}`), 204);

  // Exports: the activities', downloaded, and the personal data's.
  const made = await ok(call('POST', '/exports'), 201);
  await drained();
  const done = await ok(call('GET', `/exports/${made.id}`), 200);
  await ok(call('GET', '/exports'), 200);
  if (done.url) {
    const zip = await api.fetch(`${new URL(done.url as string).pathname}${new URL(done.url as string).search}`);
    if (zip.status !== 200) throw new Error(`download: ${zip.status}`);
    await zip.arrayBuffer();
  }
  await ok(call('POST', `/users/${u.ldid}/export_personal_data`), 201, 202);
  await drained();
  await ok(call('DELETE', `/exports/${made.id}`), 204);

  // Deletions, and the change feed.
  await ok(call('DELETE', `/activities/${recorded.id}`), 204);
  // Deliveries run beside the outbox: the failing hook's first tries, the other's successes.
  await receiver.until(() => receiver.at('/hook').length > 0 && receiver.at('/failing').length > 1);
  await ok(call('GET', `/user_web_hooks/${failing.id}/attempts`), 200);
  await ok(call('GET', '/deleted_activities'), 200);
  await ok(call('DELETE', `/user_web_hooks/${failing.id}`), 204);
  await ok(api.call('GET', `/activities/${run.id}`, other), 404);
  await drained();
  return u;
}

/** What operators and the scheduled jobs run: records:recompute, cleanups, derived:rebuild's backfills, a deletion. */
async function operatorRuns(u: TrackingTestUser): Promise<void> {
  // The same runs as staff jobs (POST /v2/jobs), followed by their workers to their end.
  const staff = await api.user(['staff']);
  for (const type of ['records_recompute', 'statistics_rebuild', 'thumbnails_rebuild']) {
    const started = await ok(
      api.call('POST', '/jobs', staff, { body: { type, params: { user: u.ldid, sport: [121] } } }),
      202,
    );
    await drained();
    const ended = await ok(api.call('GET', `/jobs/${started.id}`, staff), 200);
    if (ended.state !== 'done') throw new Error(`the ${type} job ended ${ended.state}: ${JSON.stringify(ended.error)}`);
  }
  // npm run derived:rebuild -- --thumbnails: every user's activities, and the place pictures.
  await enqueueThumbnailRebuild(db, api.config.STORAGE_DIR, { force: false, requestedAt: '20260101T000000000Z' });
  await drained();
  const scope = { userId: u.ldid };
  const summary = await enqueueRecompute(db, { scope, settings: DEFAULT_RECORDS_SETTINGS, force: true });
  await enqueueRecompute(db, { scope: { all: true }, settings: DEFAULT_RECORDS_SETTINGS, force: false });
  const requestedAt = new Date().toISOString();
  await enqueueSumupsRebuild(db, scope, requestedAt);
  await enqueueSumupsRebuild(db, { all: true }, requestedAt);
  // npm run records:recompute -- --all --sport 121 --since 2026-01-01: the users with such activities.
  await enqueueSumupsRebuild(db, { all: true, sportIds: [121], since: new Date('2026-01-01') }, requestedAt);
  await drained();
  await recomputeProgress(db, scope, summary);
  await recomputeProgress(db, { all: true }, summary);
  await sumupsRebuildProgress(db, requestedAt);

  // The sweep of deliveries whose job Redis lost (here: none lost).
  await sweepLostDeliveries(
    db,
    async () => 'waiting',
    async () => {},
    0,
  );
  await purgeWebhookEvents(db);
  await expireTombstones(db, 0);
  // An old file without its export row: the cleanup looks the ids up.
  const orphan = path.join(api.config.STORAGE_DIR, EXPORTS_STORAGE_DIR, `${'0'.repeat(32)}.zip`);
  await mkdir(path.dirname(orphan), { recursive: true });
  await writeFile(orphan, 'old');
  const old = new Date(Date.now() - 2 * ORPHAN_FILE_AGE_S * 1000);
  await utimes(orphan, old, old);
  await cleanupExports(db, api.config.STORAGE_DIR, 0);
  const oldImport = path.join(api.config.STORAGE_DIR, IMPORTS_STORAGE_DIR, '0'.repeat(32));
  await mkdir(path.dirname(oldImport), { recursive: true });
  await writeFile(oldImport, 'old');
  await utimes(oldImport, old, old);
  await sweepOrphanJobFiles(db, api.config.STORAGE_DIR);
  const exported = await db.selectFrom('tracking_exports').select('id').executeTakeFirst();
  if (exported) await markExportFailed(db, exported.id, 60, 'stopped by the test');

  // npm run derived:rebuild -- --moving --previews, over rows written before migration 0062.
  await db.updateTable('activities').set({ moving_time: null }).execute();
  await fillMovingFields(db);
  await db.deleteFrom('activity_stream_previews').execute();
  await fillStreamPreviews(db);
  // npm run derived:rebuild -- --moving --previews --force: every activity's, rewritten.
  await fillMovingFields(db, 200, { all: true });
  await fillStreamPreviews(db, 100, { all: true });
  // records:recompute's refresh of computed climbs, over an activity whose climb the old rule computed.
  const withElevation = await db
    .selectFrom('activity_stream_channels')
    .select(['activity_id', 'values'])
    .where('datatype_id', '=', DATATYPE.ELEVATION_CURRENT)
    .executeTakeFirst();
  const oldClimb = withElevation && deadBandClimb(channelFromBytes(withElevation.values));
  if (!withElevation || !oldClimb) throw new Error('the scenario holds no activity with an elevation channel');
  const oldSummaries = {
    '18': Math.round(oldClimb.ascent * 100) / 100,
    '19': Math.round(oldClimb.descent * 100) / 100,
  };
  await db
    .updateTable('activities')
    .set({ data_summaries: sql`data_summaries || ${JSON.stringify(oldSummaries)}::jsonb` })
    .where('id', '=', withElevation.activity_id)
    .execute();
  await refreshComputedClimbs(db);
  await computeRecommendations(db);

  // The deletion of everything of the user, as `npm run accounts:purge -- --account` starts it.
  await startDueDeletions(db);
  await startAccountDeletion(db, u.id);
  await runStartedDeletions(db, { storageDir: api.config.STORAGE_DIR, accountIds: [u.id] });
}

const ALL_USERS =
  'a batch over every user (an operator run or a scheduled cleanup): on Citus a multi-shard statement, run on every worker in parallel';
const RECORDS_JOB =
  'the records job works by activity id (its payload carries no user id; activity_records_state has no user_id yet)';
const SUMUPS_STEP = "the records job's statistics step works by activity id (its payload carries no user id)";
const EXPORT_JOB =
  'the export job works by export id (its payload carries no user id): tracking_exports is pinned by its id only';
const WEBHOOK_JOBS =
  'the webhooks jobs work by event, delivery or hook id, and their batched statements take several users at once; webhook_deliveries and webhook_attempts have no user_id yet';
const NO_USER_COLUMN =
  'the stream tables (activity_tracks, activity_datastreams, activity_stream_channels) have no user_id yet; the move to Citus adds it';

/**
 * The statements that do not route to one shard, by the function that sends them, with the
 * reason (docs/scale-out.md lists them). A new one fails the test; so does an entry no
 * statement needs any more.
 */
/** A share read by its id for either of its users (given by one, received by the other). */
const SHARE_EITHER_SIDE =
  'a share is read, answered or deleted by its id for either of its users: the id must carry the owner, or a table distributed by friend_id mirror the shares';
/** What a user received: share_users is distributed by the user who shares. */
const SHARE_RECEIVED =
  "what a user received (their friends, the feed's owners, a friend's statistics) reads share_users by friend_id: every shard, until a mirror distributed by friend_id";

const UNROUTED: Record<string, string> = {
  // Requests on tables without user_id yet.
  'shared/tracking/webhooks/attempts.ts#lastAttempts':
    "reads a hook's attempts by hook id (webhook_attempts has no user_id yet), once the hook was found the caller's",
  'shared/tracking/streams/read.ts#readActivityStreams': NO_USER_COLUMN,
  'shared/tracking/activities/duplicates.ts#findDuplicate': `the duplicate check of a file's track compares it with the stored tracks of the user's activities (joined by activity id); ${NO_USER_COLUMN}`,
  'shared/tracking/activities/changes.ts#availableDatatypesWith': `a PUT of an activity's summaries reads its channels' datatypes by its id; ${NO_USER_COLUMN}`,
  // Requests that write a coordinator table in the same statement.
  'shared/tracking/activities/store.ts#insertActivity': `one statement writes the activity, its streams and its outbox row: on Citus the outbox insert (coordinator) becomes a statement of its own in the same transaction; ${NO_USER_COLUMN}`,
  'shared/tracking/webhooks/events.ts#emitTrackingEvent':
    'writes the event and its outbox row in one statement: on Citus the outbox insert (coordinator) becomes a statement of its own in the same transaction',
  'shared/tracking/users/credentials.ts#findTrackingCredentials':
    "every call's credentials in one statement join the coordinator's accounts, clients, consents, keys and revocations with tracking_users (u.id = a.ldid): on Citus that join reaches every shard; read the user by id in a second statement",
  // Public links: the request names no user.
  'shared/tracking/shares/store.ts#shareByToken':
    'the public share page knows the token only: the token must carry the user id, or a reference table map tokens to users',
  'shared/tracking/exports/store.ts#exportDownload':
    'the download link carries the export id and its secret only: as share pages, the link must carry the user id',
  // Jobs keyed by another id.
  'shared/tracking/records/update-records.ts#updateActivityRecords': RECORDS_JOB,
  'shared/tracking/records/records-store.ts#recordsUpToDate': RECORDS_JOB,
  'shared/tracking/records/records-store.ts#replaceBestEfforts': RECORDS_JOB,
  'shared/tracking/records/records-store.ts#saveRecordsState': RECORDS_JOB,
  'shared/tracking/sumups/rollup.ts#readActivities': SUMUPS_STEP,
  'shared/tracking/sumups/rollup.ts#readState': SUMUPS_STEP,
  'shared/tracking/sumups/rollup.ts#applyActivitySumups': SUMUPS_STEP,
  'shared/tracking/thumbnail/activity-thumbnail.ts#drawActivityThumbnail':
    'the thumbnail job works by activity id (its payload carries no user id)',
  'shared/tracking/activities/content-read.ts#readActivityContent': `the jobs read an activity's content by its id; ${NO_USER_COLUMN}`,
  'shared/tracking/exports/job.ts#buildExport': EXPORT_JOB,
  'shared/tracking/exports/job.ts#countActivitiesToExport': EXPORT_JOB,
  'shared/tracking/exports/job.ts#activitiesToExport': EXPORT_JOB,
  'shared/tracking/exports/job.ts#onProgress': EXPORT_JOB,
  'shared/tracking/exports/job.ts#markExportFailed': EXPORT_JOB,
  'shared/tracking/webhooks/export-event.ts#emitExportReady': EXPORT_JOB,
  'shared/tracking/webhooks/fan-out.ts#fanOutEvent': WEBHOOK_JOBS,
  'shared/tracking/webhooks/deliver.ts#batchersOf': WEBHOOK_JOBS,
  'shared/tracking/webhooks/deliver.ts#recordFailure': WEBHOOK_JOBS,
  'shared/tracking/webhooks/deliver.ts#claimProbe': WEBHOOK_JOBS,
  'shared/tracking/webhooks/deliver.ts#pruneAttempts': WEBHOOK_JOBS,
  'shared/tracking/webhooks/deliver.ts#deliverWebhook': WEBHOOK_JOBS,
  'shared/tracking/webhooks/fan-out.ts#openDeliveriesOf': WEBHOOK_JOBS,
  // Shares between users: distributed by the user who shares, read from the friend's side too.
  'shared/tracking/sharing/share-users.ts#liveUser':
    'sharing checks that the friend exists and is not being deleted: tracking_users joined with account_deletions (coordinator)',
  'shared/tracking/sharing/share-users.ts#findShareUser': SHARE_EITHER_SIDE,
  'shared/tracking/sharing/share-users.ts#answerShareUser': SHARE_EITHER_SIDE,
  'shared/tracking/sharing/share-users.ts#deleteShareUser': SHARE_EITHER_SIDE,
  'shared/tracking/sharing/share-users.ts#listShareUsers': SHARE_RECEIVED,
  'shared/tracking/sharing/share-users.ts#sharersOf': SHARE_RECEIVED,
  'shared/tracking/sharing/share-users.ts#acceptedShareOwner': SHARE_RECEIVED,
  'shared/tracking/exports/personal-data.ts#writePersonalDataArchive': `the personal-data export lists the user's shares given and received; ${SHARE_RECEIVED}`,
  'shared/tracking/sharing/shared-activities.ts#feedActivities':
    "the feed reads the latest activities of every friend: one range per friend's shard",
  // Every user by design.
  'shared/tracking/sharing/shared-activities.ts#listPublicActivities':
    "everyone's public activities, newest first: every shard (or, later, a reference table of the public ones)",
  'shared/tracking/gear/autocomplete.ts#suggestEquipment':
    "the gear autocomplete reads everyone's brands and names, without their owners: a multi-shard statement (or, later, a reference table of the names the writes keep)",
  'shared/tracking/records/recompute-requests.ts#enqueueRecompute': ALL_USERS,
  'shared/tracking/records/recompute-requests.ts#recomputeProgress': ALL_USERS,
  'shared/tracking/sumups/rebuild-requests.ts#enqueueSumupsRebuild': ALL_USERS,
  'shared/tracking/webhooks/sweep.ts#sweepLostDeliveries': ALL_USERS,
  'shared/tracking/webhooks/cleanup.ts#purgeWebhookEvents': ALL_USERS,
  'shared/tracking/activities/tombstones.ts#expireTombstones': ALL_USERS,
  'shared/tracking/exports/store.ts#failStaleExports': ALL_USERS,
  'shared/tracking/exports/cleanup.ts#cleanupExports': ALL_USERS,
  'shared/tracking/exports/cleanup.ts#exportsOf': ALL_USERS,
  'shared/tracking/jobs/job-files-sweep.ts#openJobsOf': ALL_USERS,
  'shared/tracking/thumbnail/thumbnail-rebuild.ts#enqueueThumbnailRebuild': ALL_USERS,
  'shared/tracking/activities/moving-store.ts#fillMovingFields': ALL_USERS,
  'shared/tracking/activities/moving-store.ts#storedSpeedStreams': `${ALL_USERS}; ${NO_USER_COLUMN}`,
  'shared/tracking/activities/moving-store.ts#storedTrack': `reads one activity's track by its id (moving time, splits); ${NO_USER_COLUMN}`,
  'shared/tracking/activities/climb-store.ts#refreshComputedClimbs': `${ALL_USERS}; ${NO_USER_COLUMN}`,
  'shared/tracking/streams/preview-store.ts#fillStreamPreviews': ALL_USERS,
  'shared/catalogue/recommendations-compute.ts#computeRecommendations': `${ALL_USERS}; it joins account_deletions (coordinator), which Citus plans as a local table join`,
  'shared/accounts/account-purge.ts#startDueDeletions': `${ALL_USERS}; with account_deletions (coordinator) beside`,
  // The deletion of an account: coordinator rows and the tracking user read together.
  'shared/accounts/account-purge.ts#startAccountDeletion':
    'reads the account (coordinator) with its tracking user (joined on account_id): two statements on Citus, the second by user id',
  'shared/tracking/account-deletion-steps.ts#run':
    "deletes a user's rows in batches by id under a subquery pinned by user id (add user_id = the user to the outer delete)",
  'shared/tracking/account-deletion-steps.ts#remains':
    'the last check of the deletion looks for a tracking user by account_id (tracking_users is distributed by id): look it up by the user id',
};

/** Statement sites the scenario does not reach, with the reason (paths no request takes at will). */
const NOT_DRIVEN: Record<string, string> = {
  'shared/tracking/exports/job.ts#buildExport': 'the export deleted while its archive was being written (a race)',
  'shared/tracking/webhooks/deliver.ts#pruneAttempts': 'about one success in ten drops old attempts (random)',
  'shared/tracking/webhooks/deliver.ts#claimProbe': 'a delivery due while its hook is failing (timing)',
  'shared/tracking/webhooks/deliver.ts#recordFailure':
    'giving a delivery or a hook up: only after WEBHOOKS_DISABLE_AFTER_S of failures',
  'shared/tracking/webhooks/deliver.ts#deliverWebhook': 'a delivery of a hook disabled meanwhile',
  'shared/tracking/webhooks/fan-out.ts#openDeliveriesOf':
    'a fan-out run again after a crash between its commit and its adds',
  'shared/accounts/account-deletion.ts#runAccountDeletion': 'a deletion step that failed',
  'shared/tracking/jobs/import-job.ts#ownActivity':
    'an import job run again after its worker stopped between storing the activity and ending the job',
};

/**
 * The call site that sent `statement`: the innermost of its frames on a site's line, or inside the
 * statement of a site of its kind (an awaiting caller's frame points at its `await`).
 */
function siteOf(sites: QuerySite[], statement: CapturedStatement): QuerySite | undefined {
  for (const frame of statement.frames) {
    const [file, row] = frame.split(':');
    const line = Number(row);
    const exact = sites.find((s) => s.file === file && s.line === line);
    if (exact) return exact;
    const around = sites.filter((s) => s.file === file && s.kind === statement.via && s.from <= line && line <= s.line);
    if (around.length === 1) return around[0];
  }
  return undefined;
}

/** Files of helpers that send statements for others: a statement is named after their caller. */
const HELPERS = ['shared/db/', 'shared/accounts/prepared.ts'];

/** `file#function` of the code that had a statement sent, outside the sites (a helper's caller). */
function callerOf(locations: string[]): string {
  const caller = locations.find((l) => !HELPERS.some((h) => l.startsWith(h)));
  if (!caller) return '(unknown)';
  const [file = '', line] = caller.split(':');
  return functionAt(file, Number(line));
}

/** Where the statements are looked for (the scenario must reach every one). */
const SCANNED = ['shared/tracking'];
const SCANNED_FILES = [
  'shared/accounts/account-deletion.ts',
  'shared/accounts/account-purge.ts',
  // The other services' steps of the deletion, and the account's part of the personal data export.
  'shared/accounts/account-deletion-steps.ts',
  'shared/accounts/personal-data.ts',
  'shared/idempotency/account-deletion-step.ts',
  'shared/places/account-deletion-steps.ts',
  'shared/partners/account-deletion-steps.ts',
];

test.serial('every tracking statement filters or joins on the user id, so it routes to one shard', async (t) => {
  const capture = captureStatements();
  try {
    const u = await scenario();
    await operatorRuns(u);
  } finally {
    capture.stop();
  }
  const sites = querySites(SCANNED, SCANNED_FILES);
  const run = new Set<QuerySite>();
  const unrouted = new Map<string, { sql: string; tables: string }>();
  let tracking = 0;
  let routed = 0;
  for (const statement of capture.statements) {
    const locations = statement.frames.map((f) => f.split(':').slice(0, 2).join(':'));
    // The test's own statements (its waits and set-ups) are not the code's.
    if (locations[0]?.startsWith('test/')) continue;
    const site = siteOf(sites, statement);
    if (site) run.add(site);
    const routing = routingOf(statement.sql, statement.parameters, columns);
    if (routing.distributed.length === 0) continue;
    tracking++;
    if (routing.oneShard) {
      routed++;
      continue;
    }
    const key = site?.name ?? callerOf(locations);
    const tables = [
      ...routing.distributed.map((d) => `${d.table}${d.values.length ? '' : ' (not pinned)'}`),
      ...routing.local.map((l) => `${l} (coordinator)`),
    ];
    unrouted.set(key, {
      sql: statement.sql.replace(/\s+/g, ' ').slice(0, 300),
      tables: [...new Set(tables)].join(', '),
    });
  }
  t.log(
    `${capture.statements.length} statements sent, ${tracking} on distributed tables, ${routed} of them on one shard; ${run.size} of ${sites.length} statement sites run`,
  );

  const unexpected = [...unrouted]
    .filter(([key]) => !(key in UNROUTED))
    .map(([key, s]) => `${key}: ${s.tables}\n    ${s.sql}`);
  t.deepEqual(unexpected, [], 'statements that do not route to one shard and are not in UNROUTED');
  // An entry of a site that may go unreached (NOT_DRIVEN) is not stale for that.
  const stale = Object.keys(UNROUTED).filter((key) => !unrouted.has(key) && !(key in NOT_DRIVEN));
  t.deepEqual(stale, [], 'UNROUTED entries no statement needs');

  const notRun = sites.filter((s) => !run.has(s) && !(s.name in NOT_DRIVEN)).map((s) => `${s.name} (line ${s.line})`);
  t.deepEqual(notRun, [], 'statement sites the scenario did not reach');
});

test('every table of the database has its place on Citus', (t) => {
  const unplaced = [...columns.keys()].filter(
    (table) => !(table in DISTRIBUTION) && !NOT_APPLICATION_TABLES.has(table),
  );
  t.deepEqual(unplaced, []);
  const gone = Object.keys(DISTRIBUTION).filter((table) => !columns.has(table));
  t.deepEqual(gone, [], 'placed tables the database does not have');
  // A distributed table has its column, unless the move to Citus adds it.
  for (const [table, placement] of Object.entries(DISTRIBUTION))
    if (placement.kind === 'distributed')
      t.is(columns.get(table)?.has(placement.column), !placement.added, `${table}.${placement.column}`);
});

test('the routing check tells one-shard statements from the others', (t) => {
  const route = (sql: string, parameters: unknown[] = ['u1', 'x']) => routingOf(sql, parameters, columns).oneShard;
  t.true(route('select * from activities where user_id = $1 and id = $2'));
  t.true(route('select * from activities a join user_records r on r.user_id = a.user_id where a.user_id = $1'));
  t.true(route("select * from activities a join sports s on s.id = a.sport_id where a.user_id in ('u1')"));
  t.true(
    route('insert into user_measures (user_id, datatype_id, value, date) values ($1, 1, 2, now()), ($1, 1, 3, now())'),
  );
  t.true(
    route(
      'with mine as (select id, user_id from activities where user_id = $1) delete from user_records r using mine m where r.user_id = m.user_id',
    ),
  );
  t.true(
    route(
      'select 1 from activities a where a.user_id = $1 and exists (select from user_records r where r.user_id = a.user_id)',
    ),
  );
  t.false(route('select * from activities where id = $2'), 'by activity id alone');
  t.false(route('select * from activities where user_id = $1 or id = $2'), 'under OR');
  t.false(
    route('select * from activities a join user_records r on r.activity_id = a.id where a.user_id = $1'),
    'joined off the user id',
  );
  t.false(
    route('select * from activities where user_id = $1 union all select * from activities where user_id = $2'),
    'two users',
  );
  t.false(
    route(
      'with a as (insert into activities (id, user_id) values ($2, $1) returning id) insert into outbox (job_id) select id from a',
    ),
    'a coordinator table beside',
  );
  t.false(route('select * from activities where user_id = any($1)', [['u1', 'u2']]), 'two users in an array');
  t.true(route('select * from activities where user_id = any($1)', [['u1']]));
});
