import { createDb } from '../shared/db/database.ts';
import { seedReferentials } from '../shared/db/referentials.ts';
import { runCli } from '../shared/runtime/cli.ts';

/** `npm run seed`: loads the committed referentials (idempotent). */
await runCli(async (config) => {
  const { db } = createDb(config.DATABASE_URL, 1);
  try {
    console.log('seeded', await seedReferentials(db));
  } finally {
    await db.destroy();
  }
});
