import { type Kysely, sql } from 'kysely';
import { type Migration, type MigrationProvider, Migrator } from 'kysely/migration';
import { migrations } from './migrations/index.ts';

const provider: MigrationProvider = { getMigrations: async () => migrations as Record<string, Migration> };

export class MigrationError extends Error {}

/**
 * Brings the schema up to date. Kysely's Migrator takes a Postgres advisory lock, so several
 * API and worker processes starting together wait for each other instead of racing.
 */
// biome-ignore lint/suspicious/noExplicitAny: migrations run before (and regardless of) the typed schema
export async function migrateToLatest(db: Kysely<any>): Promise<string[]> {
  // A newer release migrated this database (a rolling deploy, a rollback): its migrations keep
  // the previous release working (docs/operations.md), and Kysely would refuse the unknown ones.
  if ((await migrationsAhead(db)).length) return [];
  const { error, results } = await new Migrator({ db, provider }).migrateToLatest();
  if (error) {
    const failed = results?.find((r) => r.status === 'Error')?.migrationName;
    // No migration ran: the database itself is missing or unreachable (runCli explains it).
    if (!failed) throw error;
    const message = error instanceof Error ? error.message : String(error);
    throw new MigrationError(`migration ${failed} failed: ${message}`, { cause: error });
  }
  return (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName);
}

/** Migrations applied to the database that this code does not know: a newer release's. */
// biome-ignore lint/suspicious/noExplicitAny: migrations run before (and regardless of) the typed schema
export async function migrationsAhead(db: Kysely<any>): Promise<string[]> {
  const table = await sql<{ t: string | null }>`select to_regclass('kysely_migration')::text as t`.execute(db);
  if (!table.rows[0]?.t) return [];
  const { rows } = await sql<{ name: string }>`select name from kysely_migration order by name`.execute(db);
  return rows.map((r) => r.name).filter((name) => !(name in migrations));
}

/**
 * With MIGRATE_ON_START=false, a process refuses a schema older than its code (an operator's
 * forgotten `npm run migrate`) with the command to run, instead of failing on a missing table.
 */
// biome-ignore lint/suspicious/noExplicitAny: migrations run before (and regardless of) the typed schema
export async function assertMigrated(db: Kysely<any>): Promise<void> {
  const pending = (await new Migrator({ db, provider }).getMigrations()).filter((m) => !m.executedAt);
  if (pending.length)
    throw new MigrationError(
      `The database lacks ${pending.length} migration(s) of this release (${pending[0]?.name}…): ` +
        'run `npm run migrate`, or start with MIGRATE_ON_START=true',
    );
}
