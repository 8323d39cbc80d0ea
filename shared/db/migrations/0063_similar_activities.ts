import { type Kysely, sql } from 'kysely';

/**
 * Similar activities (docs/tracking-activities.md, "Similar activities"): the user's activities of
 * one sport whose distance (summary datatype 5) lies in a range are one range of this index. The
 * expression is shared/tracking/activities/similar.ts's DISTANCE_SQL, written out again here (a
 * migration does not change with the code): a query must spell it the same to use the index. A
 * summary that is not a number (never written by the API) indexes as null rather than failing.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    create index activities_user_sport_distance_idx on activities (
      user_id,
      sport_id,
      (case when jsonb_typeof(data_summaries -> '5') = 'number' then (data_summaries ->> '5')::double precision end)
    )`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`drop index activities_user_sport_distance_idx`.execute(db);
}
