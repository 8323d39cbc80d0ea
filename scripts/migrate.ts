import { ensureDatabase } from '../shared/db/create-database.ts';
import { createDb } from '../shared/db/database.ts';
import { checkSchema } from '../shared/db/doctor.ts';
import { migrateToLatest } from '../shared/db/migrate.ts';
import { runCli } from '../shared/runtime/cli.ts';

/**
 * `npm run migrate`: creates the database if needed, applies every pending migration, then checks
 * that every object the migrations define is there (as `npm run doctor` does): a database restored
 * without a trigger is not "up to date".
 */
await runCli(async (config) => {
  if (await ensureDatabase(config.DATABASE_URL)) console.log('created database');
  const { db } = createDb(config.DATABASE_URL, 1);
  try {
    const applied = await migrateToLatest(db);
    const { problems } = await checkSchema(db);
    if (problems.length > 0) {
      if (applied.length) console.log(`applied: ${applied.join(', ')}`);
      for (const line of problems) console.error(line);
      console.error(
        `schema incomplete: ${problems.length} problem(s) (npm run doctor; docs/operations.md, "Checking the schema")`,
      );
      process.exitCode = 1;
      return;
    }
    console.log(applied.length ? `applied: ${applied.join(', ')}` : 'schema up to date');
  } finally {
    await db.destroy();
  }
});
