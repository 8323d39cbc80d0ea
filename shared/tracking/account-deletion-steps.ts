import { sql } from 'kysely';
import type { DeletionStep } from '../kernel/registration.ts';
import { TRACKING_STORAGE_ROOT } from './activities/uploads.ts';
import { exportStoragePath } from './exports/store.ts';
import { storedJobFiles } from './jobs/job-files.ts';
import { deleteUserProgress } from './progress/owned.ts';
import { deleteUserWebHooks } from './webhooks/hooks.ts';

/**
 * The tracking service's steps of an account's deletion (shared/accounts/account-deletion.ts runs
 * them in the order of shared/services/index.ts; docs/accounts-lifecycle.md): the user's rows
 * table by table, children before parents, then the tracking user itself. The counters are those
 * of `account_deletions.deleted`.
 */

/** Activities per transaction (each carries its streams, several MB for a long one). */
const ACTIVITY_BATCH = 50;

/** The storage folder of an activity's drawn thumbnails (thumbnail/activity-thumbnail.ts). */
const thumbnailsFolder = (activityId: string) => `${TRACKING_STORAGE_ROOT}/thumbnails/${activityId}`;

/** Public shares first: the share pages stop at once. */
export const sharesStep: DeletionStep = {
  name: 'shares',
  run: ({ batches, target }) =>
    batches('shares', async (trx, limit) => {
      const rows = await trx
        .deleteFrom('share_activities')
        .where(
          'token',
          'in',
          trx.selectFrom('share_activities').select('token').where('user_id', '=', target.userId).limit(limit),
        )
        .returning('token')
        .execute();
      return { count: rows.length };
    }),
};

/** Shares between users, given and received: friends stop seeing the user's activities at once, and theirs close. */
export const userSharesStep: DeletionStep = {
  name: 'user-shares',
  run: ({ batches, target }) =>
    batches('user-shares', async (trx, limit) => {
      const rows = await trx
        .deleteFrom('share_users')
        .where(
          'id',
          'in',
          trx
            .selectFrom('share_users')
            .select('id')
            .where((eb) => eb.or([eb('user_id', '=', target.userId), eb('friend_id', '=', target.userId)]))
            .limit(limit),
        )
        .returning('id')
        .execute();
      return { count: rows.length };
    }),
};

export const exportsStep: DeletionStep = {
  name: 'exports',
  run: ({ batches, target }) =>
    batches('exports', async (trx, limit) => {
      const rows = await trx
        .deleteFrom('tracking_exports')
        .where(
          'id',
          'in',
          trx.selectFrom('tracking_exports').select('id').where('user_id', '=', target.userId).limit(limit),
        )
        .returning(['id', 'file_path'])
        .execute();
      return { count: rows.length, files: rows.map((r) => r.file_path ?? exportStoragePath(r.id)) };
    }),
};

/** A bulk import's files before it (its deletion would cascade to them, their stored files unnamed). */
export const jobsStep: DeletionStep = {
  name: 'jobs',
  run: ({ batches, target }) =>
    batches('jobs', async (trx, limit) => {
      const rows = await trx
        .deleteFrom('jobs')
        .where(
          'id',
          'in',
          trx
            .selectFrom('jobs')
            .select('id')
            .where('user_id', '=', target.userId)
            .orderBy(sql`parent_id is null`)
            .limit(limit),
        )
        .returning('file_path')
        .execute();
      return { count: rows.length, files: storedJobFiles(rows) };
    }),
};

/** Streams, tracks, best efforts, records and shares of an activity go with it (cascades). */
export const activitiesStep: DeletionStep = {
  name: 'activities',
  run: ({ batches, batchSize, target }) =>
    batches(
      'activities',
      async (trx, limit) => {
        const rows = await trx
          .deleteFrom('activities')
          .where(
            'id',
            'in',
            trx.selectFrom('activities').select('id').where('user_id', '=', target.userId).limit(limit),
          )
          .returning('id')
          .execute();
        return { count: rows.length, files: rows.map((r) => thumbnailsFolder(r.id)) };
      },
      Math.min(batchSize, ACTIVITY_BATCH),
    ),
};

/** The activities above leave no tombstone (the user goes too); these are of earlier deletions. */
export const activityTombstonesStep: DeletionStep = {
  name: 'activity-tombstones',
  run: ({ batches, target }) =>
    batches('activity_tombstones', async (trx, limit) => {
      const rows = await trx
        .deleteFrom('activity_tombstones')
        .where(
          'activity_id',
          'in',
          trx.selectFrom('activity_tombstones').select('activity_id').where('user_id', '=', target.userId).limit(limit),
        )
        .returning('activity_id')
        .execute();
      return { count: rows.length };
    }),
};

export const recordsStep: DeletionStep = {
  name: 'records',
  run: ({ batches, target }) =>
    batches('records', async (trx, limit) => {
      const rows = await trx
        .deleteFrom('user_records')
        .where(
          'id',
          'in',
          trx.selectFrom('user_records').select('id').where('user_id', '=', target.userId).limit(limit),
        )
        .returning('id')
        .execute();
      return { count: rows.length };
    }),
};

export const measuresStep: DeletionStep = {
  name: 'measures',
  run: ({ batches, target }) =>
    batches('measures', async (trx, limit) => {
      const rows = await trx
        .deleteFrom('user_measures')
        .where(
          'id',
          'in',
          trx.selectFrom('user_measures').select('id').where('user_id', '=', target.userId).limit(limit),
        )
        .returning('id')
        .execute();
      return { count: rows.length };
    }),
};

export const devicesStep: DeletionStep = {
  name: 'devices',
  run: ({ batches, target }) =>
    batches('devices', async (trx, limit) => {
      const rows = await trx
        .deleteFrom('user_devices')
        .where(
          'id',
          'in',
          trx.selectFrom('user_devices').select('id').where('user_id', '=', target.userId).limit(limit),
        )
        .returning('id')
        .execute();
      return { count: rows.length };
    }),
};

export const progressStep: DeletionStep = {
  name: 'gear-goals-challenges',
  run: async ({ transaction, target }) => {
    await transaction(async (trx) => ({ counts: await deleteUserProgress(trx, target.userId) }));
  },
};

export const uploadsStep: DeletionStep = {
  name: 'uploads',
  run: ({ batches, target }) =>
    batches('uploads', async (trx, limit) => {
      const rows = await trx
        .deleteFrom('tracking_uploads')
        .where(
          'id',
          'in',
          trx.selectFrom('tracking_uploads').select('id').where('user_id', '=', target.userId).limit(limit),
        )
        .returning('path')
        .execute();
      return { count: rows.length, files: rows.map((r) => r.path) };
    }),
};

/**
 * Hooks, their events, deliveries and attempts (the tracking user's row cascades to them too;
 * deleted here so the step counts them).
 */
export const webhooksStep: DeletionStep = {
  name: 'webhooks',
  run: async ({ transaction, target }) => {
    await transaction(async (trx) => ({ counts: { webhooks: await deleteUserWebHooks(trx, target.userId) } }));
  },
};

export const trackingUserStep: DeletionStep = {
  name: 'tracking-user',
  run: async ({ transaction, target }) => {
    const user = target.userId;
    await transaction(async (trx) => {
      // Locked first: a request that passed before the account was disabled cannot add a row
      // under it meanwhile. Whatever such a request added is deleted here with its files.
      const found = await trx
        .selectFrom('tracking_users')
        .select('id')
        .where('id', '=', user)
        .forUpdate()
        .executeTakeFirst();
      if (!found) return {};
      const uploads = await trx.deleteFrom('tracking_uploads').where('user_id', '=', user).returning('path').execute();
      const exports = await trx
        .deleteFrom('tracking_exports')
        .where('user_id', '=', user)
        .returning(['id', 'file_path'])
        .execute();
      const jobs = await trx.deleteFrom('jobs').where('user_id', '=', user).returning('file_path').execute();
      const activities = await trx.deleteFrom('activities').where('user_id', '=', user).returning('id').execute();
      await trx.deleteFrom('tracking_users').where('id', '=', user).execute();
      return {
        counts: {
          tracking_user: 1,
          uploads: uploads.length,
          exports: exports.length,
          jobs: jobs.length,
          activities: activities.length,
        },
        files: [
          ...uploads.map((r) => r.path),
          ...exports.map((r) => r.file_path ?? exportStoragePath(r.id)),
          ...activities.map((r) => thumbnailsFolder(r.id)),
          ...storedJobFiles(jobs),
        ],
      };
    });
  },
  // A tracking user made again by a request that passed before the account was disabled.
  remains: async (trx, target) =>
    (await trx
      .selectFrom('tracking_users')
      .select('id')
      .where('account_id', '=', target.accountId)
      .executeTakeFirst()) !== undefined,
};
