import { rm } from 'node:fs/promises';
import test, { type ExecutionContext } from 'ava';
import { Queue } from 'bullmq';
import { sql } from 'kysely';
import { findApiKey } from '../shared/accounts/api-keys.ts';
import { ConfigError, loadConfig } from '../shared/config.ts';
import { createRedis } from '../shared/queue/connection.ts';
import { job } from '../shared/queue/jobs.ts';
import { enqueueInTransaction } from '../shared/queue/outbox-write.ts';
import {
  purgeAccounts,
  runAccountDeletion,
  runStartedDeletions,
  startAccountDeletion,
} from '../shared/services/account-deletion.ts';
import { scheduleDeleteProblem } from '../shared/tracking/users/schedule-delete.ts';
import { ACCOUNTS_PURGE_SCHEDULER_ID } from '../workers/processors/accounts-purge.ts';
import { startWorkers } from '../workers/worker.ts';
import { filesIn, populateUser, storedFileExists, type UserData } from './helpers/account-data.ts';
import { runScript } from './helpers/cli.ts';
import { startTrackingApi, type TrackingTestUser } from './helpers/tracking.ts';
import { type Body, waitFor } from './helpers/tracking-exports.ts';

// PUBLIC_URL is the server's own URL, so the links the API answers can be fetched as is.
const api = await startTrackingApi({ publicUrl: true });
const { db } = api.database;
const storageDir = api.config.STORAGE_DIR;
const workers = await startWorkers({
  ...api.config,
  WORKER_QUEUES: ['records', 'thumbnails', 'exports'],
  OUTBOX_POLL_MS: 50,
});
test.after.always(async () => {
  await workers.close();
  await api.close();
  await rm(storageDir, { recursive: true, force: true });
});

const DAY = 86_400_000;
const iso = (ms: number) => new Date(ms).toISOString();
const violations = (body: { violations: { propertyPath: string }[] }) => body.violations.map((v) => v.propertyPath);

/** The scheduleDelete of `u` put in the past, as if its date had come. */
const makeDue = (u: TrackingTestUser) =>
  db
    .updateTable('tracking_users')
    .set({ schedule_delete: sql<Date>`now() - interval '1 minute'` })
    .where('id', '=', u.ldid)
    .execute();

/** Rows of `u` in every table that holds some of theirs (anonymised content counts under its creator). */
async function footprint(u: TrackingTestUser, d: UserData): Promise<Record<string, number>> {
  const n = async (q: { execute: () => Promise<unknown[]> }) => (await q.execute()).length;
  const byUser = (table: 'activities' | 'user_measures' | 'user_records' | 'user_devices') =>
    n(db.selectFrom(table).select(sql<string>`user_id`.as('user_id')).where(sql.ref('user_id'), '=', u.ldid));
  const ids = d.activityIds;
  return {
    accounts: await n(db.selectFrom('accounts').select('id').where('id', '=', u.id)),
    tracking_users: await n(db.selectFrom('tracking_users').select('id').where('id', '=', u.ldid)),
    activities: await byUser('activities'),
    activity_tracks: await n(db.selectFrom('activity_tracks').select('activity_id').where('activity_id', 'in', ids)),
    activity_datastreams: await n(
      db.selectFrom('activity_datastreams').select('activity_id').where('activity_id', 'in', ids),
    ),
    activity_stream_channels: await n(
      db.selectFrom('activity_stream_channels').select('activity_id').where('activity_id', 'in', ids),
    ),
    activity_best_efforts: await n(
      db.selectFrom('activity_best_efforts').select('activity_id').where('user_id', '=', u.ldid),
    ),
    user_records: await byUser('user_records'),
    user_measures: await byUser('user_measures'),
    user_devices: await byUser('user_devices'),
    share_activities: await n(db.selectFrom('share_activities').select('token').where('user_id', '=', u.ldid)),
    tracking_uploads: await n(db.selectFrom('tracking_uploads').select('id').where('user_id', '=', u.ldid)),
    tracking_exports: await n(db.selectFrom('tracking_exports').select('id').where('user_id', '=', u.ldid)),
    idempotency_keys: await n(db.selectFrom('idempotency_keys').select('key').where('scope', '=', `account:${u.id}`)),
    oauth_consents: await n(db.selectFrom('oauth_consents').select('client_id').where('account_id', '=', u.id)),
    owned_clients: await n(db.selectFrom('oauth_clients').select('id').where('owner_account_id', '=', u.id)),
    places: await n(db.selectFrom('places').select('id').where('created_by', '=', u.id)),
    place_edits: await n(db.selectFrom('place_edits').select('place_id').where('created_by', '=', u.id)),
    partners: await n(db.selectFrom('partners').select('id').where('created_by', '=', u.id)),
    user_web_hooks: await n(db.selectFrom('user_web_hooks').select('id').where('user_id', '=', u.ldid)),
    user_equipments: await n(db.selectFrom('user_equipments').select('id').where('user_id', '=', u.ldid)),
    user_measure_goals: await n(db.selectFrom('user_measure_goals').select('id').where('user_id', '=', u.ldid)),
    user_challenges: await n(db.selectFrom('user_challenges').select('id').where('user_id', '=', u.ldid)),
    activity_progress_state: await n(
      db.selectFrom('activity_progress_state').select('activity_id').where('user_id', '=', u.ldid),
    ),
  };
}

/** Which of the files `d` names are still stored. */
async function filesOf(d: UserData) {
  return {
    upload: storedFileExists(storageDir, d.uploadPath),
    thumbnails: (await Promise.all(d.activityIds.map((id) => filesIn(storageDir, `tracking/thumbnails/${id}`)))).some(
      (f) => f.length > 0,
    ),
    export: storedFileExists(storageDir, `exports/${d.exportId}.zip`),
    placePictures: storedFileExists(storageDir, `places/${d.pendingPlaceUuid}`),
  };
}

/** Everything said about a user whose account was deleted: no row, no file, no token, no link. */
async function assertGone(t: ExecutionContext, u: TrackingTestUser, d: UserData) {
  const left = Object.entries(await footprint(u, d)).filter(([, count]) => count > 0);
  t.deepEqual(left, [], 'no row of theirs is left');
  t.deepEqual(await filesOf(d), { upload: false, thumbnails: false, export: false, placePictures: false });
  t.is((await api.call('GET', '/me', u)).status, 401, 'their token is refused');
  const staff = await api.user(['staff']);
  for (const id of d.activityIds) t.is((await api.call('GET', `/activities/${id}`, staff)).status, 404);
  t.is((await api.fetch(new URL(d.uploadUrl).pathname)).status, 404, 'the photo is no longer served');
  t.is((await fetch(d.exportUrl)).status, 404, 'the export link is dead');
  t.is((await api.call('GET', `/share_activities/${d.shareToken}`, null)).status, 404, 'the share is dead');
  // Their third-party app went with its API key; the community content stays, without creator.
  t.is(await findApiKey(db, d.thirdPartyKey), undefined, 'their API key is refused');
  t.is((await db.selectFrom('oauth_clients').select('id').where('id', '=', d.thirdPartyClient).execute()).length, 0);
  t.like(
    await db
      .selectFrom('oauth_clients')
      .select('owner_account_id')
      .where('id', '=', d.firstPartyClient)
      .executeTakeFirst(),
    { owner_account_id: null },
  );
  t.like(
    await db
      .selectFrom('places')
      .select(['created_by', 'status'])
      .where('id', '=', d.approvedPlaceId)
      .executeTakeFirst(),
    { created_by: null, status: 'approved' },
  );
  t.is((await db.selectFrom('places').select('id').where('uuid', '=', d.pendingPlaceUuid).execute()).length, 0);
  t.like(await db.selectFrom('partners').select('created_by').where('id', '=', d.partnerId).executeTakeFirst(), {
    created_by: null,
  });
  t.is(
    (await db.selectFrom('account_deletions').select('account_id').where('account_id', '=', u.id).execute()).length,
    0,
  );
  t.is(
    (await db.selectFrom('account_deletion_files').select('path').where('account_id', '=', u.id).execute()).length,
    0,
  );
}

/** A user with everything, and another one whose data must outlive the first's deletion. */
async function twoUsers() {
  const u = await api.user();
  const other = await api.user();
  const [d, od] = await Promise.all([populateUser(api, u), populateUser(api, other)]);
  return { u, d, other, od, otherBefore: await footprint(other, od) };
}

async function assertUntouched(
  t: ExecutionContext,
  other: TrackingTestUser,
  od: UserData,
  before: Record<string, number>,
) {
  t.deepEqual(await footprint(other, od), before, "the other user's rows are all there");
  t.deepEqual(await filesOf(od), { upload: true, thumbnails: true, export: true, placePictures: true });
  t.is((await api.call('GET', '/me', other)).status, 200);
  t.is((await api.call('GET', `/activities/${od.activityIds[0]}`, other)).status, 200);
  t.is((await api.fetch(new URL(od.uploadUrl).pathname)).status, 200);
  t.is((await fetch(od.exportUrl)).status, 200);
}

const runCli = (args: string[] = []) =>
  runScript('scripts/accounts-purge.ts', args, {
    DATABASE_URL: api.database.url,
    STORAGE_DIR: storageDir,
    MIGRATE_ON_START: 'false',
    LOG_LEVEL: 'silent',
  });

test('ACCOUNT_DELETE_GRACE_S: 7 days by default, 0 (now) to a year', (t) => {
  t.is(loadConfig({}).ACCOUNT_DELETE_GRACE_S, 604_800);
  t.is(loadConfig({ ACCOUNT_DELETE_GRACE_S: '0' }).ACCOUNT_DELETE_GRACE_S, 0);
  for (const bad of ['-1', '31536001', 'week', '1.5'])
    t.throws(() => loadConfig({ ACCOUNT_DELETE_GRACE_S: bad }), {
      instanceOf: ConfigError,
      message: /ACCOUNT_DELETE_GRACE_S/,
    });
  const now = new Date('2026-01-01T00:00:00Z');
  t.is(scheduleDeleteProblem(new Date('2026-01-08T00:00:00Z'), now, 604_800), undefined);
  t.regex(scheduleDeleteProblem(new Date('2026-01-07T00:00:00Z'), now, 604_800) ?? '', /at least 7 days from now/);
  t.is(scheduleDeleteProblem(now, now, 0), undefined, 'no grace: now is fine');
  t.regex(scheduleDeleteProblem(new Date('2025-12-31T00:00:00Z'), now, 0) ?? '', /must not be in the past/);
});

test.serial(
  'scheduleDelete: a date inside the grace period is a 422 naming it; later is kept; null cancels; nothing is deleted before the date',
  async (t) => {
    const u = await api.user();
    const path = `/users/${u.ldid}`;
    for (const when of [Date.now() - DAY, Date.now() + DAY, Date.now() + 6 * DAY]) {
      const res = await api.call('PUT', path, u, { body: { scheduleDelete: iso(when) } });
      t.is(res.status, 422, iso(when));
      t.is(res.body['@type'], 'ConstraintViolationList');
      t.deepEqual(violations(res.body), ['scheduleDelete']);
      t.regex(res.body.violations[0].message, /at least 7 days from now/);
    }
    t.is((await api.call('GET', '/me', u)).body.scheduleDelete, null, 'a refused date changes nothing');

    const date = new Date(Math.floor((Date.now() + 8 * DAY) / 1000) * 1000);
    const planned = await api.call('PUT', path, u, { body: { scheduleDelete: iso(date.getTime()) } });
    t.is(planned.status, 200);
    t.is(planned.body.scheduleDelete, iso(date.getTime()).replace('.000Z', '+00:00'));

    // Until the date everything works; the purge leaves the account alone.
    t.is(
      (
        await api.call('POST', '/activities', u, {
          body: {
            user: `/v2/users/${u.ldid}`,
            sport: '/v2/sports/121',
            startdate: '2024-01-01T10:00:00+00:00',
            duration: 60,
            dataSummaries: {},
          },
        })
      ).status,
      201,
    );
    const purged = await purgeAccounts(db, { storageDir });
    t.false(purged.deleted.some((x) => x.accountId === u.id));

    // Sending back what was read is fine even once the date is nearer than the grace period.
    await db
      .updateTable('tracking_users')
      .set({ schedule_delete: sql<Date>`now() + interval '1 day'` })
      .where('id', '=', u.ldid)
      .execute();
    const read = (await api.call('GET', '/me', u)).body as Body;
    t.is((await api.call('PUT', path, u, { body: { ...read, gender: 2 } })).status, 200);

    const cancelled = await api.call('PUT', path, u, { body: { scheduleDelete: null } });
    t.is(cancelled.status, 200);
    t.is(cancelled.body.scheduleDelete, null);
    // A cancelled account is never purged, even had its date come.
    t.false((await purgeAccounts(db, { storageDir })).deleted.some((x) => x.accountId === u.id));
    t.is((await api.call('GET', '/me', u)).status, 200);

    // Once the deletion started, nothing can be changed nor cancelled any more.
    await db
      .insertInto('account_deletions')
      .values({ account_id: u.id, requested_by: 'operator', due_at: null })
      .execute();
    const late = await api.call('PUT', path, u, { body: { scheduleDelete: null } });
    t.is(late.status, 409);
    t.is(late.body['@type'], 'hydra:Error');
    await db.deleteFrom('account_deletions').where('account_id', '=', u.id).execute();
  },
);

test.serial(
  'npm run accounts:purge deletes a due account and everything of it, prints what it deleted, and leaves the others alone',
  async (t) => {
    const { u, d, other, od, otherBefore } = await twoUsers();
    const before = await footprint(u, d);
    t.true(
      Object.values(before).every((n) => n > 0),
      `every table holds some of theirs: ${JSON.stringify(before)}`,
    );
    await makeDue(u);

    const { code, stdout, stderr } = await runCli();
    t.is(code, 0, stderr);
    const out = JSON.parse(stdout) as { deleted: Body[]; busy: string[]; failed: unknown[] };
    t.deepEqual(out.busy, []);
    t.deepEqual(out.failed, []);
    t.is(out.deleted.length, 1);
    t.like(out.deleted[0], {
      accountId: u.id,
      ldid: u.ldid,
      requestedBy: 'schedule',
      deleted: {
        activities: 2,
        measures: 1,
        devices: 1,
        equipments: 1,
        measure_goals: 1,
        challenges: 1,
        shares: 1,
        exports: 1,
        uploads: 1,
        places: 1,
        places_anonymised: 1,
        place_edits: 1,
        partners_anonymised: 1,
        clients: 1,
        clients_kept: 1,
        tracking_user: 1,
        account: 1,
      },
    });
    await assertGone(t, u, d);
    await assertUntouched(t, other, od, otherBefore);

    const again = await runCli();
    t.is(again.code, 0);
    t.deepEqual(JSON.parse(again.stdout), { deleted: [], busy: [], failed: [] }, 'nothing left to do');
  },
);

test('ACCOUNTS_PURGE_INTERVAL_S: an hour by default, 10 s to a day', (t) => {
  t.is(loadConfig({}).ACCOUNTS_PURGE_INTERVAL_S, 3600);
  t.is(loadConfig({ ACCOUNTS_PURGE_INTERVAL_S: '10' }).ACCOUNTS_PURGE_INTERVAL_S, 10);
  t.is(loadConfig({ ACCOUNTS_PURGE_INTERVAL_S: '86400' }).ACCOUNTS_PURGE_INTERVAL_S, 86_400);
  for (const bad of ['0', '9', '86401', 'hourly', '1.5', '-60'])
    t.throws(() => loadConfig({ ACCOUNTS_PURGE_INTERVAL_S: bad }), {
      instanceOf: ConfigError,
      message: /ACCOUNTS_PURGE_INTERVAL_S/,
    });
});

test.serial('the scheduled maintenance job deletes the due accounts', async (t) => {
  const { u, d, other, od, otherBefore } = await twoUsers();
  await makeDue(u);
  const maintenance = await startWorkers({
    ...api.config,
    WORKER_QUEUES: ['maintenance'],
    OUTBOX_POLL_MS: 50,
    ACCOUNTS_PURGE_INTERVAL_S: 45,
  });
  t.teardown(() => maintenance.close());
  // The purge's scheduler runs every ACCOUNTS_PURGE_INTERVAL_S.
  const redis = createRedis(api.config.REDIS_URL, 'producer');
  const queue = new Queue('maintenance', { connection: redis, prefix: api.config.QUEUE_PREFIX });
  t.teardown(async () => {
    await queue.close();
    redis.disconnect();
  });
  t.is((await queue.getJobScheduler(ACCOUNTS_PURGE_SCHEDULER_ID))?.every, 45_000);
  // The worker runs its schedule at start; a one-off request goes through the outbox as well.
  await enqueueInTransaction(db, job('maintenance', 'accounts-purge', { requestedBy: new Date().toISOString() }));
  const left = await waitFor(
    () => db.selectFrom('accounts').select('id').where('id', '=', u.id).executeTakeFirst(),
    (row) => row === undefined,
  );
  t.is(left, undefined);
  await assertGone(t, u, d);
  await assertUntouched(t, other, od, otherBefore);
});

test.serial(
  'a deletion that dies midway leaves the account disabled and is resumed to the end by the next purge',
  async (t) => {
    const { u, d, other, od, otherBefore } = await twoUsers();
    await makeDue(u);
    const die = (at: string) => (step: string) => {
      if (step === at) throw new Error(`died after ${at}`);
    };

    // Dies after the activities: the account is refused already, half its rows are gone.
    const first = await purgeAccounts(db, { storageDir, afterStep: die('activities') });
    t.deepEqual(first.deleted, []);
    t.deepEqual(first.failed, [{ accountId: u.id, error: 'died after activities' }]);
    t.is((await api.call('GET', '/me', u)).status, 401, 'refused from the first step on');
    t.is(await findApiKey(db, d.thirdPartyKey), undefined, "their app's API key too");
    const half = await footprint(u, d);
    t.like(half, {
      accounts: 1,
      tracking_users: 1,
      activities: 0,
      user_measures: 1,
      user_devices: 1,
      tracking_uploads: 1,
    });
    t.like(
      await db
        .selectFrom('account_deletions')
        .select(['step', 'deleted'])
        .where('account_id', '=', u.id)
        .executeTakeFirst(),
      { step: 'activities', deleted: { shares: 1, exports: 1, activities: 2 } },
    );

    // Dies after the tracking user: every row is gone, the files are still listed and still stored.
    const second = await purgeAccounts(db, { storageDir, afterStep: die('tracking-user') });
    t.deepEqual(second.failed, [{ accountId: u.id, error: 'died after tracking-user' }]);
    const listed = await db
      .selectFrom('account_deletion_files')
      .select('path')
      .where('account_id', '=', u.id)
      .orderBy('path')
      .execute();
    t.deepEqual(
      listed.map((r) => r.path),
      [
        `exports/${d.exportId}.zip`,
        `places/${d.pendingPlaceUuid}`,
        ...d.activityIds.map((id) => `tracking/thumbnails/${id}`).sort(),
        d.uploadPath,
      ].sort(),
    );
    t.deepEqual(await filesOf(d), { upload: true, thumbnails: true, export: true, placePictures: true });

    // A run holding the account (its lease) is left alone until its lease lapses.
    await db
      .updateTable('account_deletions')
      .set({ run_token: '00000000-0000-4000-8000-000000000000', run_until: sql<Date>`now() + interval '1 hour'` })
      .where('account_id', '=', u.id)
      .execute();
    const held = await runStartedDeletions(db, { storageDir });
    t.deepEqual(held.busy, [u.id]);
    t.is(await runAccountDeletion(db, u.id, { storageDir }), undefined);
    await db
      .updateTable('account_deletions')
      .set({ run_until: sql<Date>`now() - interval '1 second'` })
      .where('account_id', '=', u.id)
      .execute();

    const resumed = await purgeAccounts(db, { storageDir });
    t.deepEqual(resumed.failed, []);
    t.is(resumed.deleted.length, 1);
    t.like(resumed.deleted[0], {
      accountId: u.id,
      deleted: { activities: 2, measures: 1, uploads: 1, files: listed.length, account: 1 },
    });
    await assertGone(t, u, d);
    await assertUntouched(t, other, od, otherBefore);
  },
);

test.serial('--account deletes one account now whatever its date; an unknown one is refused', async (t) => {
  const u = await api.user();
  const d = await populateUser(api, u);
  const keep = await api.user();
  await api.call('GET', '/me', keep);
  const { code, stdout, stderr } = await runCli(['--account', u.ldid]);
  t.is(code, 0, stderr);
  const out = JSON.parse(stdout) as { deleted: Body[] };
  t.like(out.deleted[0], { accountId: u.id, requestedBy: 'operator', dueAt: null });
  await assertGone(t, u, d);
  t.is((await api.call('GET', '/me', keep)).status, 200);

  t.false(await startAccountDeletion(db, '00000000-0000-4000-8000-000000000000'));
  const unknown = await runCli(['--account', 'nobody']);
  t.is(unknown.code, 1);
  t.regex(unknown.stderr, /no account nobody/);
  const bad = await runCli(['--account', '../x']);
  t.is(bad.code, 2);
  t.regex(bad.stderr, /usage/);
});
