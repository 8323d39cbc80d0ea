import { type Kysely, sql } from 'kysely';

/**
 * An activity's streams (its track, elapsed seconds and channels: about 100 bytes per second of a
 * 1 Hz recording, so megabytes for a long one, always TOASTed) compressed with lz4 instead of
 * PostgreSQL's default pglz. Measured on 2 cores (bench/README.md, tracking-ingest): PostgreSQL's
 * CPU per stored 1-hour activity fell from 15 to 7 ms (pglz compression was about half of it), and a
 * 24-hour activity reads back faster. Rows written before keep pglz until rewritten (PostgreSQL
 * reads both); `pg_column_compression(column)` tells which. A server built without lz4 keeps pglz.
 */
const COLUMNS = [
  ['activity_tracks', 'track'],
  ['activity_datastreams', 'elapsed'],
  ['activity_stream_channels', 'values'],
] as const;

async function setCompression(db: Kysely<unknown>, method: 'lz4' | 'pglz'): Promise<void> {
  for (const [table, column] of COLUMNS)
    await sql`
      do $$ begin
        alter table ${sql.id(table)} alter column ${sql.id(column)} set compression ${sql.raw(method)};
      exception when feature_not_supported then
        raise notice 'compression % is not supported by this server: % keeps its method', ${sql.lit(method)}, ${sql.lit(`${table}.${column}`)};
      end $$`.execute(db);
}

export async function up(db: Kysely<unknown>): Promise<void> {
  await setCompression(db, 'lz4');
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await setCompression(db, 'pglz');
}
