import { ensureSigningKeys } from '../auth/signing-keys.ts';
import type { Config } from '../config.ts';
import { createDb } from '../db/database.ts';
import { assertMigrated, migrateToLatest, migrationsAhead } from '../db/migrate.ts';
import { seedReferentials } from '../db/referentials.ts';
import type { Logger } from '../observability/logger.ts';

/**
 * What a starting API process does to its database before serving: migrations
 * (MIGRATE_ON_START), referentials (SEED_ON_START, idempotent) and the first signing key.
 */
export async function prepareDatabase(config: Config, logger: Logger): Promise<void> {
  const { db } = createDb(config.DATABASE_URL, 1);
  try {
    const ahead = await migrationsAhead(db);
    if (ahead.length)
      logger.warn({ ahead }, 'the database has migrations of a newer release: running on it without migrating');
    if (config.MIGRATE_ON_START) {
      const applied = await migrateToLatest(db);
      if (applied.length) logger.info({ applied }, 'migrations applied');
    } else await assertMigrated(db);
    if (config.SEED_ON_START) logger.info(await seedReferentials(db), 'referentials seeded');
    await ensureSigningKeys(db);
  } finally {
    await db.destroy();
  }
}
