import { createDb } from '../shared/db/database.ts';
import { migrateToLatest } from '../shared/db/migrate.ts';
import { parseOptions, runCli, usageError } from '../shared/runtime/cli.ts';
import { purgeAccounts, runStartedDeletions, startAccountDeletion } from '../shared/services/account-deletion.ts';

const USAGE = `usage: npm run accounts:purge [-- --account <account id or tracking user id>]
  (no option)   delete now every account whose scheduleDelete has come, and finish the
                deletions a dead run left
  --account ID  delete this account now, whatever its scheduleDelete (an operator's decision)
Prints what it deleted as JSON; exit code 1 when a deletion failed (run again to resume it).`;

const OPTIONS = { account: { type: 'string' } } as const;

const usage = (problem: string) => usageError(USAGE, problem);

/**
 * `npm run accounts:purge`: what the workers' scheduled `maintenance/accounts-purge` job does,
 * at once (docs/accounts-lifecycle.md). The JSON goes to stdout.
 */
await runCli(async (config) => {
  const args = parseOptions(OPTIONS, USAGE);
  if (args.account !== undefined && !/^[A-Za-z0-9_-]{1,64}$/.test(args.account))
    usage(`--account: not an account or user id: ${args.account}`);

  const { db } = createDb(config.DATABASE_URL, 2);
  try {
    if (config.MIGRATE_ON_START) await migrateToLatest(db);
    const options = { storageDir: config.STORAGE_DIR };
    let result: Awaited<ReturnType<typeof purgeAccounts>>;
    if (args.account === undefined) result = await purgeAccounts(db, options);
    else {
      // An account id (uuid) or the tracking user id (the account's ldid) the API shows.
      const account = await db
        .selectFrom('accounts')
        .select('id')
        .where((eb) =>
          /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(args.account as string)
            ? eb('id', '=', args.account as string)
            : eb('ldid', '=', args.account as string),
        )
        .executeTakeFirst();
      if (!account || !(await startAccountDeletion(db, account.id))) {
        console.error(`no account ${args.account}`);
        process.exitCode = 1;
        return;
      }
      result = await runStartedDeletions(db, { ...options, accountIds: [account.id] });
    }
    console.log(JSON.stringify(result, null, 2));
    if (result.failed.length > 0) process.exitCode = 1;
  } finally {
    await db.destroy();
  }
});
