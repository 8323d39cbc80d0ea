import {
  type AccountDeletionOutcome,
  type DeletionOptions,
  runAccountDeletion as runWith,
} from '../accounts/account-deletion.ts';
import {
  type PurgeResult,
  purgeAccounts as purgeWith,
  runStartedDeletions as runStartedWith,
} from '../accounts/account-purge.ts';
import type { Db } from '../db/database.ts';
import { ACCOUNT_DELETION_STEPS } from './index.ts';

/**
 * The account deletion with the registered services' steps (shared/accounts/account-purge.ts and
 * account-deletion.ts take them as a parameter): what the workers, the CLI and the tests run.
 */

export { startAccountDeletion, startDueDeletions } from '../accounts/account-purge.ts';

type Options = Omit<DeletionOptions, 'steps'>;
const withSteps = <O extends Options>(o: O): O & DeletionOptions => ({ ...o, steps: ACCOUNT_DELETION_STEPS });

export const runAccountDeletion = (
  db: Db,
  accountId: string,
  options: Options,
): Promise<AccountDeletionOutcome | undefined> => runWith(db, accountId, withSteps(options));

export const runStartedDeletions = (db: Db, options: Options & { accountIds?: string[] }): Promise<PurgeResult> =>
  runStartedWith(db, withSteps(options));

export const purgeAccounts = (db: Db, options: Options): Promise<PurgeResult> => purgeWith(db, withSteps(options));
