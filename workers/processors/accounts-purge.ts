import type { Queue } from 'bullmq';
import type { Config } from '../../shared/config.ts';
import { purgeAccounts } from '../../shared/services/account-deletion.ts';
import type { JobDeps, TypedJob } from '../processor.ts';
import { upsertSchedule } from './schedule.ts';

/** The id of the BullMQ job scheduler that deletes the accounts whose `scheduleDelete` has come. */
export const ACCOUNTS_PURGE_SCHEDULER_ID = 'accounts-purge-every';

/**
 * Deletes the accounts that are due and resumes the deletions a dead run left (job
 * `maintenance/accounts-purge`; shared/accounts/account-purge.ts). A deletion that failed makes
 * the job fail, so BullMQ tries again; what was deleted stays deleted, and the retry resumes.
 */
export async function purgeDueAccounts(
  job: TypedJob<'maintenance', 'accounts-purge'>,
  { config, db, logger }: JobDeps,
): Promise<{ deleted: string[]; busy: string[]; failed: string[] }> {
  const result = await purgeAccounts(db, { storageDir: config.STORAGE_DIR });
  const summary = {
    deleted: result.deleted.map((d) => d.accountId),
    busy: result.busy,
    failed: result.failed.map((f) => f.accountId),
  };
  for (const d of result.deleted) logger.info({ accountId: d.accountId, deleted: d.deleted }, 'account deleted');
  for (const f of result.failed) logger.warn({ accountId: f.accountId, error: f.error }, 'account deletion failed');
  logger.info({ requestedBy: job.data.requestedBy, ...summary }, 'accounts purged');
  if (result.failed.length > 0)
    throw new Error(`the deletion of ${result.failed.length} account(s) failed: ${result.failed[0]?.error}`);
  return summary;
}

/**
 * Creates or updates the purge's job scheduler (idempotent), every ACCOUNTS_PURGE_INTERVAL_S: an
 * account goes within that after its date (`npm run accounts:purge`: at once). The first run is at once.
 */
export async function scheduleAccountsPurge(
  queue: Queue,
  config: Pick<Config, 'ACCOUNTS_PURGE_INTERVAL_S'>,
): Promise<void> {
  await upsertSchedule(queue, ACCOUNTS_PURGE_SCHEDULER_ID, 'accounts-purge', config.ACCOUNTS_PURGE_INTERVAL_S);
}
