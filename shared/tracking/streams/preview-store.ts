import { type RawBuilder, sql } from 'kysely';
import { channelBytes, channelFromBytes } from '../activities/binary.ts';
import type { Datastream } from '../activities/data.ts';
import { PREVIEW_MIN_SAMPLES, streamPreview } from './preview.ts';

/** What runs a raw statement: a Kysely<Database>, one of its transactions, or a migration's Kysely. */
type Executor = Parameters<RawBuilder<unknown>['execute']>[0];

/** The preview rows of a datastream as `(datatype_id, samples, values)` tuples for an insert; empty without a preview. */
export function previewRows(datastream: Datastream) {
  const preview = streamPreview(datastream);
  if (!preview) return [];
  const samples = datastream.elapsed.length;
  return [...preview].map(
    ([datatype, values]) => sql`(${datatype}::int, ${samples}::int, ${channelBytes(values)}::bytea)`,
  );
}

/**
 * Writes the previews of the long activities that have none (those stored before migration 0062:
 * `npm run derived:rebuild -- --previews`), or with `all` rewrites those of every long activity
 * (`--previews --force`), one activity at a time, `batch` ids per look-up; returns how many it wrote.
 * Activities whose duration is under PREVIEW_MIN_SAMPLES seconds are passed over (their samples
 * are whole seconds apart, so they have no more than that, unless written past their duration).
 */
export async function fillStreamPreviews(db: Executor, batch = 100, { all = false } = {}): Promise<number> {
  let after = '';
  let filled = 0;
  for (;;) {
    // The duration first (a column of the row): counting the samples reads the whole elapsed array.
    const { rows } = await sql<{ activity_id: string }>`
      select d.activity_id from activity_datastreams d join activities a on a.id = d.activity_id
      where d.activity_id > ${after} and a.duration >= ${PREVIEW_MIN_SAMPLES}
        and (${all} or not exists (select from activity_stream_previews p where p.activity_id = d.activity_id))
        and cardinality(d.elapsed) > ${PREVIEW_MIN_SAMPLES}
      order by d.activity_id limit ${batch}`.execute(db);
    if (rows.length === 0) return filled;
    for (const { activity_id: id } of rows) {
      const [elapsed, channels] = await Promise.all([
        sql<{ elapsed: number[] }>`select elapsed from activity_datastreams where activity_id = ${id}`.execute(db),
        sql<{ datatype_id: number; values: Buffer }>`
          select datatype_id, "values" from activity_stream_channels where activity_id = ${id}`.execute(db),
      ]);
      const datastream: Datastream = {
        elapsed: Int32Array.from(elapsed.rows[0]?.elapsed ?? []),
        channels: new Map(channels.rows.map((c) => [c.datatype_id, channelFromBytes(c.values)])),
      };
      const values = previewRows(datastream);
      if (values.length === 0) continue;
      // Two statements, not one transaction (the executor may be a migration's): an activity left
      // without a preview by a crash between them is filled by the next run without `all`.
      if (all) await sql`delete from activity_stream_previews where activity_id = ${id}`.execute(db);
      await sql`
        insert into activity_stream_previews (activity_id, datatype_id, samples, "values")
        select ${id}, v.datatype_id, v.samples, v.bytes from (values ${sql.join(values)}) as v (datatype_id, samples, bytes)
        on conflict do nothing`.execute(db);
      filled++;
    }
    after = rows[rows.length - 1]?.activity_id ?? after;
  }
}
