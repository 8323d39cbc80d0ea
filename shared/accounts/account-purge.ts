import { sql } from 'kysely';
import type { Db } from '../db/database.ts';
import { type AccountDeletionOutcome, type DeletionOptions, runAccountDeletion } from './account-deletion.ts';

/**
 * What deletes accounts (docs/accounts-lifecycle.md): the `maintenance/accounts-purge` job of the
 * workers, on a schedule, and `npm run accounts:purge` at once. Both start the deletion of every
 * account whose `scheduleDelete` has come, then run every deletion started and not finished
 * (a run that died midway is resumed here).
 */

export interface PurgeResult {
  /** The accounts deleted by this purge. */
  deleted: AccountDeletionOutcome[];
  /** Deletions another run is working on (left to it). */
  busy: string[];
  /** Deletions that failed this time (the next purge resumes them). */
  failed: { accountId: string; error: string }[];
}

/**
 * Starts the deletion of every account whose tracking user's `scheduleDelete` has come. The users
 * are locked (a cancel being written is skipped this time, and one written after sees the
 * deletion started: 409), so a cancel that answered 200 is never followed by the deletion.
 */
export async function startDueDeletions(db: Db): Promise<number> {
  const result = await db
    .insertInto('account_deletions')
    .columns(['account_id', 'requested_by', 'due_at'])
    .expression(
      db
        .selectFrom('tracking_users')
        .select(['account_id', sql.lit('schedule').as('requested_by'), 'schedule_delete'])
        .where('schedule_delete', '<=', sql<Date>`now()`)
        .forUpdate()
        .skipLocked(),
    )
    .onConflict((oc) => oc.column('account_id').doNothing())
    .executeTakeFirst();
  return Number(result.numInsertedOrUpdatedRows ?? 0);
}

/**
 * Starts the deletion of one account now, whatever its `scheduleDelete` (an operator's
 * `--account`); false when there is no such account. Already started: left as it is.
 */
export async function startAccountDeletion(db: Db, accountId: string): Promise<boolean> {
  if (!/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(accountId)) return false;
  const account = await db
    .selectFrom('accounts as a')
    .leftJoin('tracking_users as u', 'u.account_id', 'a.id')
    .select(['a.id', 'u.schedule_delete'])
    .where('a.id', '=', accountId)
    .executeTakeFirst();
  if (!account) return false;
  await db
    .insertInto('account_deletions')
    .values({ account_id: account.id, requested_by: 'operator', due_at: account.schedule_delete ?? null })
    .onConflict((oc) => oc.column('account_id').doNothing())
    .execute();
  return true;
}

/** Runs the deletions started (all of them, or those of `accountIds`), oldest first. */
export async function runStartedDeletions(
  db: Db,
  options: DeletionOptions & { accountIds?: string[] },
): Promise<PurgeResult> {
  let q = db.selectFrom('account_deletions').select('account_id').orderBy('started_at').orderBy('account_id');
  if (options.accountIds) {
    if (options.accountIds.length === 0) return { deleted: [], busy: [], failed: [] };
    q = q.where('account_id', 'in', options.accountIds);
  }
  const result: PurgeResult = { deleted: [], busy: [], failed: [] };
  for (const { account_id } of await q.execute()) {
    try {
      const outcome = await runAccountDeletion(db, account_id, options);
      if (outcome) result.deleted.push(outcome);
      else result.busy.push(account_id);
    } catch (error) {
      result.failed.push({ accountId: account_id, error: (error as Error).message });
    }
  }
  return result;
}

/** The purge: starts the deletions that are due, then runs every deletion started. */
export async function purgeAccounts(db: Db, options: DeletionOptions): Promise<PurgeResult> {
  await startDueDeletions(db);
  return runStartedDeletions(db, options);
}
