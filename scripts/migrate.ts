import { ensureDatabase } from '../shared/db/create-database.ts';
import { createDb } from '../shared/db/database.ts';
import { migrateToLatest } from '../shared/db/migrate.ts';
import { runCli } from '../shared/runtime/cli.ts';

/** `npm run migrate`: creates the database if needed and applies every pending migration. */
await runCli(async (config) => {
  if (await ensureDatabase(config.DATABASE_URL)) console.log('created database');
  const { db } = createDb(config.DATABASE_URL, 1);
  try {
    const applied = await migrateToLatest(db);
    console.log(applied.length ? `applied: ${applied.join(', ')}` : 'schema up to date');
  } finally {
    await db.destroy();
  }
});
