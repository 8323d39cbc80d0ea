import { type Kysely, sql } from 'kysely';

/**
 * Moving time and pauses of an activity, and the preview of a long one's streams
 * (docs/tracking-activities.md, "Moving time and pauses" and "Streams by datatype and resolution"),
 * computed from its streams at its creation and stored, so that lists and statistics read the
 * moving time without the streams, and a low-resolution chart without megabytes:
 *
 * - `moving_time`: seconds; `duration − moving_time` is the time of all its pauses.
 * - `pauses`: `[{start, duration}]`, the longest 100 in time order.
 * - `moving_speed_avg` (m/h) and `moving_pace` (s/km): over the moving time; null without a distance.
 * - `activity_stream_previews`: every channel of an activity of more than 4,000 samples at the
 *   1,000 positions LTTB keeps for all of them (datatype 0: the elapsed seconds), float64 bytes as
 *   the channels; `samples` is the datastream's own count. lz4, like the streams (0048).
 *
 * The activities stored before keep nulls (answered null) and no preview (their reads take the
 * streams) until `npm run derived:rebuild -- --moving --previews` computes them (docs/operations.md,
 * "After an upgrade"): the rules live in TypeScript and change, and a migration holds only frozen
 * SQL, so that a fresh database ends the same whatever today's code.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    alter table activities
      add column moving_time integer check (moving_time >= 0),
      add column pauses jsonb,
      add column moving_speed_avg double precision,
      add column moving_pace double precision`.execute(db);
  await sql`
    create table activity_stream_previews (
      activity_id text not null references activities (id) on delete cascade,
      datatype_id integer not null,
      samples integer not null,
      "values" bytea not null,
      primary key (activity_id, datatype_id)
    )`.execute(db);
  await sql`
    do $$ begin
      alter table activity_stream_previews alter column "values" set compression lz4;
    exception when feature_not_supported then
      raise notice 'compression lz4 is not supported by this server: activity_stream_previews keeps pglz';
    end $$`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`drop table activity_stream_previews`.execute(db);
  await sql`
    alter table activities
      drop column moving_pace, drop column moving_speed_avg, drop column pauses, drop column moving_time`.execute(db);
}
