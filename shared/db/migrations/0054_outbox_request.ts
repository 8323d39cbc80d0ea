import { type Kysely, sql } from 'kysely';

/**
 * The request that wrote a row (docs/operations.md, "Following one request"): its id and the W3C
 * traceparent its jobs continue. Null for rows written outside a request (CLIs, schedulers).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`alter table outbox add column request_id text, add column traceparent text`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`alter table outbox drop column request_id, drop column traceparent`.execute(db);
}
