import { type Kysely, sql } from 'kysely';

/**
 * /v2/activities (docs/tracking-activities.md): the list orders 0040 had no index for, a user's
 * activities by duration and by id, so every order of the list is an index scan.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`create index activities_user_duration_idx on activities (user_id, duration, id)`.execute(db);
  await sql`create index activities_user_id_idx on activities (user_id, id)`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`drop index activities_user_id_idx`.execute(db);
  await sql`drop index activities_user_duration_idx`.execute(db);
}
