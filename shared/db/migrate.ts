import type { Kysely } from 'kysely';
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
  const { error, results } = await new Migrator({ db, provider }).migrateToLatest();
  if (error) {
    const failed = results?.find((r) => r.status === 'Error')?.migrationName ?? 'unknown';
    const message = error instanceof Error ? error.message : String(error);
    throw new MigrationError(`migration ${failed} failed: ${message}`, { cause: error });
  }
  return (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName);
}
