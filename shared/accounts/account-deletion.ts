import { randomUUID } from 'node:crypto';
import { rm } from 'node:fs/promises';
import { sql } from 'kysely';
import type { Db } from '../db/database.ts';
import type { DeletedCounts } from '../db/schema/account-deletions.ts';
import type { DeletionBatch, DeletionStep, DeletionStepRun, DeletionTarget, Trx } from '../kernel/registration.ts';
import { resolveStoragePath } from '../media/storage.ts';

/**
 * Deletes one account and everything of it, for good (docs/accounts-lifecycle.md). The deletion
 * has started once its `account_deletions` row exists (account-purge.ts writes it): from then on
 * the account is `deleting`, and a run that dies anywhere is resumed by the next one.
 *
 * A run does the steps it is given in order (the services' registrations, put in order by
 * shared/services/index.ts: this file knows no service), each in short transactions of at most a
 * batch of rows, then its own two:
 * - `files`: the files the deleted rows named are removed;
 * - `account`: the account row goes, and its `account_deletions` row with it in the same commit:
 *   the deletion is over. If a step says its rows came back meanwhile (`remains`), the account
 *   stays for the next run.
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

/** How long a run holds an account without renewing it (each of its transactions renews it). */
export const DELETION_LEASE_S = 300;
/** Rows per transaction. */
export const DELETION_BATCH = 500;

/** Another run took the account over (this one's lease lapsed): this run stops, the other goes on. */
export class DeletionLeaseLost extends Error {}

export interface DeletionOptions {
  /** STORAGE_DIR. */
  storageDir: string;
  /** The services' steps, in order (shared/services/index.ts). */
  steps: readonly DeletionStep[];
  /** Rows per transaction (DELETION_BATCH). */
  batchSize?: number;
  /** Called after each step; tests stop a run there, as a process that dies would. */
  afterStep?: (step: string) => Promise<void> | void;
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

class DeletionRun {
  readonly #db: Db;
  readonly #target: DeletionTarget;
  readonly #token: string;
  readonly #storageDir: string;
  readonly #batch: number;
  deleted: DeletedCounts;

  constructor(db: Db, target: DeletionTarget, row: { token: string; deleted: DeletedCounts }, o: DeletionOptions) {
    this.#db = db;
    this.#target = target;
    this.#token = row.token;
    this.#storageDir = o.storageDir;
    this.#batch = o.batchSize ?? DELETION_BATCH;
    this.deleted = row.deleted;
  }

  /**
   * One transaction of the run: renews the lease (refused if another run took the account over),
   * records the files of the rows `work` deleted and adds its counts. Returns how many rows it counted.
   */
  async #tx(step: string, work: (trx: Trx) => Promise<DeletionBatch>): Promise<number> {
    const account = this.#target.accountId;
    return this.#db.transaction().execute(async (trx) => {
      const held = await trx
        .updateTable('account_deletions')
        .set({ run_until: sql<Date>`now() + make_interval(secs => ${DELETION_LEASE_S})`, step })
        .where('account_id', '=', account)
        .where('run_token', '=', this.#token)
        .returning('deleted')
        .executeTakeFirst();
      if (!held) throw new DeletionLeaseLost(`another run took over the deletion of account ${account}`);
      const { counts = {}, files = [] } = await work(trx);
      if (files.length > 0)
        await trx
          .insertInto('account_deletion_files')
          .values(files.map((path) => ({ account_id: account, path })))
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
          .where('account_id', '=', account)
          .execute();
      this.deleted = deleted;
      return total;
    });
  }

  /** What a service's step works with (closures: a step may destructure it). */
  stepRun(step: string): DeletionStepRun {
    const transaction = (work: (trx: Trx) => Promise<DeletionBatch>) => this.#tx(step, work);
    return {
      db: this.#db,
      target: this.#target,
      batchSize: this.#batch,
      transaction,
      batches: async (key, work, size = this.#batch) => {
        for (;;) {
          const n = await transaction(async (trx) => {
            const { count, files } = await work(trx, size);
            return { counts: { [key]: count }, ...(files ? { files } : {}) };
          });
          if (n < size) return;
        }
      },
    };
  }

  /** The `files` step: removes the files the deleted rows named, then forgets them. */
  async removeFiles(): Promise<void> {
    const account = this.#target.accountId;
    for (;;) {
      const rows = await this.#db
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
      await this.#tx('files', async (trx) => {
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
  }

  /** The `account` step: the account row goes, unless a step's rows came back meanwhile. */
  async deleteAccount(steps: readonly DeletionStep[]): Promise<void> {
    const account = this.#target.accountId;
    await this.#tx('account', async (trx) => {
      await trx.selectFrom('accounts').select('id').where('id', '=', account).forUpdate().executeTakeFirst();
      // Added meanwhile by a request that passed before the account was disabled: the next run
      // deletes it (every step again) before the account goes.
      const files = await trx
        .selectFrom('account_deletion_files')
        .select('path')
        .where('account_id', '=', account)
        .executeTakeFirst();
      let left = files !== undefined;
      for (const step of steps) if (!left && step.remains) left = await step.remains(trx, this.#target);
      if (left) throw new Error(`account ${account} got new data while it was being deleted: run the deletion again`);
      await trx.deleteFrom('accounts').where('id', '=', account).execute();
      return { counts: { account: 1 } };
    });
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
  const run = new DeletionRun(db, { accountId, userId: claimed.ldid }, { token, deleted: claimed.deleted }, options);
  try {
    for (const step of options.steps) {
      await step.run(run.stepRun(step.name));
      await options.afterStep?.(step.name);
    }
    await run.removeFiles();
    await options.afterStep?.('files');
    await run.deleteAccount(options.steps);
    await options.afterStep?.('account');
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
