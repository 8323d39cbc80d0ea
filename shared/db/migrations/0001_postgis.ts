import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`create extension if not exists postgis`.execute(db);
}

export async function down(): Promise<void> {
  // The extension may be shared with other schemas; never dropped by a rollback.
}
