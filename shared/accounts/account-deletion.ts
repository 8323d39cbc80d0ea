import { randomUUID } from 'node:crypto';
import { rm } from 'node:fs/promises';
import { sql, type Transaction } from 'kysely';
import type { Db } from '../db/database.ts';
import type { DeletedCounts } from '../db/schema/account-deletions.ts';
import type { Database } from '../db/schema/index.ts';
import { resolveStoragePath } from '../media/storage.ts';
import { TRACKING_STORAGE_ROOT } from '../tracking/activities/uploads.ts';
import { exportStoragePath } from '../tracking/exports/store.ts';
import { storedJobFiles } from '../tracking/jobs/job-files.ts';
import { deleteUserProgress } from '../tracking/progress/owned.ts';
import { deleteUserWebHooks } from '../tracking/webhooks/hooks.ts';
import { setAccountDisabled } from './revocation.ts';

/**
 * Deletes one account and everything of it, for good (docs/accounts-lifecycle.md). The deletion
 * has started once its `account_deletions` row exists (account-purge.ts writes it): from then on
 * the account is `deleting`, and a run that dies anywhere is resumed by the next one.
 *
 * A run does every step in order, each in short transactions of at most a batch of rows:
 * 1. `revoke`: the account is disabled and its sessions, grants and tokens ended (every token in
 *    flight is refused from then on); the third-party clients it owns and their API keys revoked.
 * 2. the rows of the account, table by table, children before parents: public shares first (the
 *    share pages stop at once), exports, idempotency keys, activities (their streams, best efforts
 *    and records go with them; no tombstones), the tombstones of earlier deletions, records,
 *    measures, devices, gear, measure goals and challenges, uploads; its places that are not approved are deleted, the approved ones
 *    and the place activities it created are kept without their creator (community content), so
 *    are the partners it created; the clients it owns are deleted (third-party) or kept without
 *    owner (first-party: the platform's own apps).
 * 3. the tracking user, then the files, then the account row, whose deletion removes its
 *    `account_deletions` row in the same commit: the deletion is over.
 *
 * Files: a transaction that deletes a row naming a file (an upload, an export's zip, an
 * activity's drawn thumbnails, a deleted place's pictures) records that file in
 * `account_deletion_files`; the `files` step removes them after those commits and forgets each
 * once it is gone. So a file is named by a row or by that table whenever the run dies, and is
 * never removed while a row still shows it.
 *
 * Every step only deletes what is left, so a step done twice is harmless and a resumed run
 * simply starts again from the first step. One run at a time works on an account (a lease each
 * of its transactions renews): another run takes over only once a dead run's lease has lapsed.
 */

type Trx = Transaction<Database>;

/** How long a run holds an account without renewing it (each of its transactions renews it). */
export const DELETION_LEASE_S = 300;
/** Rows per transaction. */
export const DELETION_BATCH = 500;
/** Activities per transaction (each carries its streams, several MB for a long one). */
const ACTIVITY_BATCH = 50;

export const DELETION_STEPS = [
  'revoke',
  'shares',
  'exports',
  'jobs',
  'idempotency-keys',
  'activities',
  'activity-tombstones',
  'records',
  'measures',
  'devices',
  'gear-goals-challenges',
  'uploads',
  'places',
  'partners',
  'clients',
  'webhooks',
  'tracking-user',
  'files',
  'account',
] as const;
export type DeletionStep = (typeof DELETION_STEPS)[number];

/** Another run took the account over (this one's lease lapsed): this run stops, the other goes on. */
export class DeletionLeaseLost extends Error {}

export interface DeletionOptions {
  /** STORAGE_DIR. */
  storageDir: string;
  /** Rows per transaction (DELETION_BATCH). */
  batchSize?: number;
  /** Called after each step; tests stop a run there, as a process that dies would. */
  afterStep?: (step: DeletionStep) => Promise<void> | void;
}

export interface AccountDeletionOutcome {
  accountId: string;
  /** The tracking user id. */
  ldid: string;
  requestedBy: 'schedule' | 'operator';
  /** The `scheduleDelete` it followed (null: forced by an operator). */
  dueAt: string | null;
  startedAt: string;
  /** What went, per table (`files`: files and folders removed), over every run of this deletion. */
  deleted: DeletedCounts;
}

/** One transaction's work: what it deleted (per counter) and the files its deleted rows named. */
interface Batch {
  counts?: DeletedCounts;
  files?: string[];
}

/** The storage folder of an activity's drawn thumbnails (shared/tracking/thumbnail/activity-thumbnail.ts). */
const thumbnailsFolder = (activityId: string) => `${TRACKING_STORAGE_ROOT}/thumbnails/${activityId}`;
/** The storage folder of a place's pictures (shared/places/images.ts). */
const placeFolder = (uuid: string) => `places/${uuid.toLowerCase()}`;

class DeletionRun {
  readonly #db: Db;
  readonly #accountId: string;
  readonly #ldid: string;
  readonly #token: string;
  readonly #storageDir: string;
  readonly #batch: number;
  deleted: DeletedCounts;

  constructor(
    db: Db,
    row: { accountId: string; ldid: string; token: string; deleted: DeletedCounts },
    o: DeletionOptions,
  ) {
    this.#db = db;
    this.#accountId = row.accountId;
    this.#ldid = row.ldid;
    this.#token = row.token;
    this.#storageDir = o.storageDir;
    this.#batch = o.batchSize ?? DELETION_BATCH;
    this.deleted = row.deleted;
  }

  /**
   * One transaction of the run: renews the lease (refused if another run took the account over),
   * records the files of the rows `work` deleted and adds its counts. Returns how many rows it counted.
   */
  async #tx(step: DeletionStep, work: (trx: Trx) => Promise<Batch>): Promise<number> {
    return this.#db.transaction().execute(async (trx) => {
      const held = await trx
        .updateTable('account_deletions')
        .set({ run_until: sql<Date>`now() + make_interval(secs => ${DELETION_LEASE_S})`, step })
        .where('account_id', '=', this.#accountId)
        .where('run_token', '=', this.#token)
        .returning('deleted')
        .executeTakeFirst();
      if (!held) throw new DeletionLeaseLost(`another run took over the deletion of account ${this.#accountId}`);
      const { counts = {}, files = [] } = await work(trx);
      if (files.length > 0)
        await trx
          .insertInto('account_deletion_files')
          .values(files.map((path) => ({ account_id: this.#accountId, path })))
          .onConflict((oc) => oc.doNothing())
          .execute();
      let total = 0;
      const deleted = { ...held.deleted };
      for (const [key, n] of Object.entries(counts)) {
        total += n;
        if (n > 0) deleted[key] = (deleted[key] ?? 0) + n;
      }
      if (total > 0)
        await trx
          .updateTable('account_deletions')
          .set({ deleted: JSON.stringify(deleted) })
          .where('account_id', '=', this.#accountId)
          .execute();
      this.deleted = deleted;
      return total;
    });
  }

  /** Repeats `work` (one batch of at most `size` rows, counted under `key`) until a batch comes short. */
  async #batches(
    step: DeletionStep,
    key: string,
    work: (trx: Trx, limit: number) => Promise<{ count: number; files?: string[] }>,
    size = this.#batch,
  ): Promise<void> {
    for (;;) {
      const n = await this.#tx(step, async (trx) => {
        const { count, files } = await work(trx, size);
        return { counts: { [key]: count }, ...(files ? { files } : {}) };
      });
      if (n < size) return;
    }
  }

  async run(step: DeletionStep): Promise<void> {
    const db = this.#db;
    const account = this.#accountId;
    const user = this.#ldid;
    switch (step) {
      case 'revoke': {
        // Disabling bumps the token version and deletes the sessions and grants (every token refused).
        await setAccountDisabled(db, account, true);
        await this.#tx(step, async (trx) => {
          const owned = trx
            .selectFrom('oauth_clients')
            .select('id')
            .where('owner_account_id', '=', account)
            .where('first_party', '=', false);
          await trx
            .updateTable('api_keys')
            .set({ revoked_at: sql<Date>`coalesce(revoked_at, now())` })
            .where('client_id', 'in', owned)
            .execute();
          await trx
            .updateTable('oauth_clients')
            .set({ revoked_at: sql<Date>`coalesce(revoked_at, now())` })
            .where('owner_account_id', '=', account)
            .where('first_party', '=', false)
            .execute();
          return {};
        });
        return;
      }
      case 'shares':
        return this.#batches(step, 'shares', async (trx, limit) => {
          const rows = await trx
            .deleteFrom('share_activities')
            .where(
              'token',
              'in',
              trx.selectFrom('share_activities').select('token').where('user_id', '=', user).limit(limit),
            )
            .returning('token')
            .execute();
          return { count: rows.length };
        });
      case 'exports':
        return this.#batches(step, 'exports', async (trx, limit) => {
          const rows = await trx
            .deleteFrom('tracking_exports')
            .where('id', 'in', trx.selectFrom('tracking_exports').select('id').where('user_id', '=', user).limit(limit))
            .returning(['id', 'file_path'])
            .execute();
          return { count: rows.length, files: rows.map((r) => r.file_path ?? exportStoragePath(r.id)) };
        });
      case 'jobs':
        // A bulk import's files before it (its deletion would cascade to them, their stored files unnamed).
        return this.#batches(step, 'jobs', async (trx, limit) => {
          const rows = await trx
            .deleteFrom('jobs')
            .where(
              'id',
              'in',
              trx
                .selectFrom('jobs')
                .select('id')
                .where('user_id', '=', user)
                .orderBy(sql`parent_id is null`)
                .limit(limit),
            )
            .returning('file_path')
            .execute();
          return { count: rows.length, files: storedJobFiles(rows) };
        });
      case 'idempotency-keys': {
        // Their stored answers hold the user's data (shared/idempotency/key.ts names the scope).
        const scope = `account:${account}`;
        return this.#batches(step, 'idempotency_keys', async (trx, limit) => {
          const rows = await trx
            .deleteFrom('idempotency_keys')
            .where('scope', '=', scope)
            .where(
              'key',
              'in',
              trx.selectFrom('idempotency_keys').select('key').where('scope', '=', scope).limit(limit),
            )
            .returning('key')
            .execute();
          return { count: rows.length };
        });
      }
      case 'activities':
        // Streams, tracks, best efforts, records and shares of an activity go with it (cascades).
        return this.#batches(
          step,
          'activities',
          async (trx, limit) => {
            const rows = await trx
              .deleteFrom('activities')
              .where('id', 'in', trx.selectFrom('activities').select('id').where('user_id', '=', user).limit(limit))
              .returning('id')
              .execute();
            return { count: rows.length, files: rows.map((r) => thumbnailsFolder(r.id)) };
          },
          Math.min(this.#batch, ACTIVITY_BATCH),
        );
      case 'activity-tombstones':
        // The activities above leave none (the user goes too); these are of earlier deletions.
        return this.#batches(step, 'activity_tombstones', async (trx, limit) => {
          const rows = await trx
            .deleteFrom('activity_tombstones')
            .where(
              'activity_id',
              'in',
              trx.selectFrom('activity_tombstones').select('activity_id').where('user_id', '=', user).limit(limit),
            )
            .returning('activity_id')
            .execute();
          return { count: rows.length };
        });
      case 'records':
        return this.#batches(step, 'records', async (trx, limit) => {
          const rows = await trx
            .deleteFrom('user_records')
            .where('id', 'in', trx.selectFrom('user_records').select('id').where('user_id', '=', user).limit(limit))
            .returning('id')
            .execute();
          return { count: rows.length };
        });
      case 'measures':
        return this.#batches(step, 'measures', async (trx, limit) => {
          const rows = await trx
            .deleteFrom('user_measures')
            .where('id', 'in', trx.selectFrom('user_measures').select('id').where('user_id', '=', user).limit(limit))
            .returning('id')
            .execute();
          return { count: rows.length };
        });
      case 'devices':
        return this.#batches(step, 'devices', async (trx, limit) => {
          const rows = await trx
            .deleteFrom('user_devices')
            .where('id', 'in', trx.selectFrom('user_devices').select('id').where('user_id', '=', user).limit(limit))
            .returning('id')
            .execute();
          return { count: rows.length };
        });
      case 'gear-goals-challenges':
        await this.#tx(step, async (trx) => ({ counts: await deleteUserProgress(trx, user) }));
        return;
      case 'uploads':
        return this.#batches(step, 'uploads', async (trx, limit) => {
          const rows = await trx
            .deleteFrom('tracking_uploads')
            .where('id', 'in', trx.selectFrom('tracking_uploads').select('id').where('user_id', '=', user).limit(limit))
            .returning('path')
            .execute();
          return { count: rows.length, files: rows.map((r) => r.path) };
        });
      case 'places':
        await this.#batches(step, 'places', async (trx, limit) => {
          // Not approved: nobody but the user and staff sees it; its activities and pictures go with it.
          const rows = await trx
            .deleteFrom('places')
            .where(
              'id',
              'in',
              trx
                .selectFrom('places')
                .select('id')
                .where('created_by', '=', account)
                .where('status', '<>', 'approved')
                .limit(limit),
            )
            .returning('uuid')
            .execute();
          return { count: rows.length, files: rows.map((r) => placeFolder(r.uuid)) };
        });
        await this.#batches(step, 'place_edits', async (trx, limit) => {
          const rows = await trx
            .deleteFrom('place_edits')
            .where('created_by', '=', account)
            .where(
              'place_id',
              'in',
              trx.selectFrom('place_edits').select('place_id').where('created_by', '=', account).limit(limit),
            )
            .returning('place_id')
            .execute();
          return { count: rows.length };
        });
        // Approved places and place activities stay, without their creator (not an edit: updated_at stays).
        await this.#batches(step, 'places_anonymised', async (trx, limit) => {
          const rows = await trx
            .updateTable('places')
            .set({ created_by: null })
            .where('id', 'in', trx.selectFrom('places').select('id').where('created_by', '=', account).limit(limit))
            .returning('id')
            .execute();
          return { count: rows.length };
        });
        return this.#batches(step, 'place_activities_anonymised', async (trx, limit) => {
          const rows = await trx
            .updateTable('place_activities')
            .set({ created_by: null })
            .where(
              'id',
              'in',
              trx.selectFrom('place_activities').select('id').where('created_by', '=', account).limit(limit),
            )
            .returning('id')
            .execute();
          return { count: rows.length };
        });
      case 'partners':
        // Partners are community content: they stay, without their creator.
        return this.#batches(step, 'partners_anonymised', async (trx, limit) => {
          const rows = await trx
            .updateTable('partners')
            .set({ created_by: null })
            .where('id', 'in', trx.selectFrom('partners').select('id').where('created_by', '=', account).limit(limit))
            .returning('id')
            .execute();
          return { count: rows.length };
        });
      case 'clients':
        // Third-party apps the user registered go with their API keys and the consents given to them;
        // first-party clients (registered by staff or an operator) are the platform's: they stay.
        await this.#batches(step, 'clients', async (trx, limit) => {
          const rows = await trx
            .deleteFrom('oauth_clients')
            .where(
              'id',
              'in',
              trx
                .selectFrom('oauth_clients')
                .select('id')
                .where('owner_account_id', '=', account)
                .where('first_party', '=', false)
                .limit(limit),
            )
            .returning('id')
            .execute();
          return { count: rows.length };
        });
        return this.#batches(step, 'clients_kept', async (trx, limit) => {
          const rows = await trx
            .updateTable('oauth_clients')
            .set({ owner_account_id: null })
            .where(
              'id',
              'in',
              trx.selectFrom('oauth_clients').select('id').where('owner_account_id', '=', account).limit(limit),
            )
            .returning('id')
            .execute();
          return { count: rows.length };
        });
      case 'webhooks':
        // Hooks, their events, deliveries and attempts (the tracking user's row cascades to them
        // too; deleted here so the step counts them).
        await this.#tx(step, async (trx) => ({ counts: { webhooks: await deleteUserWebHooks(trx, user) } }));
        return;
      case 'tracking-user':
        await this.#tx(step, async (trx) => {
          // Locked first: a request that passed before the account was disabled cannot add a row
          // under it meanwhile. Whatever such a request added is deleted here with its files.
          const found = await trx
            .selectFrom('tracking_users')
            .select('id')
            .where('id', '=', user)
            .forUpdate()
            .executeTakeFirst();
          if (!found) return {};
          const uploads = await trx
            .deleteFrom('tracking_uploads')
            .where('user_id', '=', user)
            .returning('path')
            .execute();
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
        return;
      case 'files':
        for (;;) {
          const rows = await db
            .selectFrom('account_deletion_files')
            .select('path')
            .where('account_id', '=', account)
            .orderBy('path')
            .limit(this.#batch)
            .execute();
          if (rows.length === 0) return;
          for (const { path } of rows) {
            const full = resolveStoragePath(this.#storageDir, path);
            // A path we could not have written names no file: nothing to remove.
            if (full) await rm(full, { recursive: true, force: true });
          }
          await this.#tx(step, async (trx) => {
            const gone = await trx
              .deleteFrom('account_deletion_files')
              .where('account_id', '=', account)
              .where(
                'path',
                'in',
                rows.map((r) => r.path),
              )
              .returning('path')
              .execute();
            return { counts: { files: gone.length } };
          });
        }
      case 'account':
        await this.#tx(step, async (trx) => {
          await trx.selectFrom('accounts').select('id').where('id', '=', account).forUpdate().executeTakeFirst();
          // Added meanwhile by a request that passed before the account was disabled: the next run
          // deletes it (every step again) before the account goes.
          const left = await trx
            .selectNoFrom((eb) => [
              eb
                .exists(eb.selectFrom('account_deletion_files').select('path').where('account_id', '=', account))
                .as('files'),
              eb.exists(eb.selectFrom('tracking_users').select('id').where('account_id', '=', account)).as('user'),
              eb
                .exists(
                  eb
                    .selectFrom('places')
                    .select('id')
                    .where('created_by', '=', account)
                    .where('status', '<>', 'approved'),
                )
                .as('places'),
            ])
            .executeTakeFirstOrThrow();
          if (left.files || left.user || left.places)
            throw new Error(`account ${account} got new data while it was being deleted: run the deletion again`);
          await trx.deleteFrom('accounts').where('id', '=', account).execute();
          return { counts: { account: 1 } };
        });
        return;
    }
  }
}

/**
 * Runs (or resumes) the deletion of `accountId`, whose `account_deletions` row exists. Undefined
 * when there is nothing to run: no deletion started, or another run holds it (its lease has not
 * lapsed). A run that fails releases its lease, so the next one may resume at once.
 */
export async function runAccountDeletion(
  db: Db,
  accountId: string,
  options: DeletionOptions,
): Promise<AccountDeletionOutcome | undefined> {
  const token = randomUUID();
  const claimed = await db
    .updateTable('account_deletions as d')
    .from('accounts as a')
    .set({ run_token: token, run_until: sql<Date>`now() + make_interval(secs => ${DELETION_LEASE_S})` })
    .whereRef('a.id', '=', 'd.account_id')
    .where('d.account_id', '=', accountId)
    .where((eb) => eb.or([eb('d.run_until', 'is', null), eb('d.run_until', '<', sql<Date>`now()`)]))
    .returning(['a.ldid', 'd.requested_by', 'd.due_at', 'd.started_at', 'd.deleted'])
    .executeTakeFirst();
  if (!claimed) return undefined;
  const run = new DeletionRun(db, { accountId, ldid: claimed.ldid, token, deleted: claimed.deleted }, options);
  try {
    for (const step of DELETION_STEPS) {
      await run.run(step);
      await options.afterStep?.(step);
    }
  } catch (error) {
    await db
      .updateTable('account_deletions')
      .set({ run_token: null, run_until: null })
      .where('account_id', '=', accountId)
      .where('run_token', '=', token)
      .execute()
      .catch(() => {});
    throw error;
  }
  return {
    accountId,
    ldid: claimed.ldid,
    requestedBy: claimed.requested_by,
    dueAt: claimed.due_at?.toISOString() ?? null,
    startedAt: claimed.started_at.toISOString(),
    deleted: run.deleted,
  };
}
