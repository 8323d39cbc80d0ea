import { type RawBuilder, sql } from 'kysely';
import { ascentDescent } from '../formats/summaries.ts';
import { channelFromBytes } from './binary.ts';
import { DATATYPE } from './data.ts';

/**
 * `npm run records:recompute`: the elevation gain and loss (18, 19) of the activities stored
 * before the climb rule changed (docs/tracking-activities.md, "Elevation gain"), computed again
 * from their stored elevation channel (a job of today's code, not a migration: a migration holds
 * frozen SQL). Only figures the service computed are replaced: a stored pair equal to what
 * the old rule gives on the same channel; a device's own totals or a client's figures differ from
 * it and stay as they are.
 */

type Executor = Parameters<RawBuilder<unknown>['execute']>[0];

const round2 = (x: number) => Math.round(x * 100) / 100;

/** The rule before hysteresis: a 2 m dead band, the reference moving only once a change exceeds it. */
export function deadBandClimb(elevation: Float64Array): { ascent: number; descent: number } | undefined {
  let ref = Number.NaN;
  let ascent = 0;
  let descent = 0;
  for (const e of elevation) {
    if (Number.isNaN(e)) continue;
    if (Number.isNaN(ref)) {
      ref = e;
      continue;
    }
    const diff = e - ref;
    if (diff >= 2) {
      ascent += diff;
      ref = e;
    } else if (diff <= -2) {
      descent -= diff;
      ref = e;
    }
  }
  return Number.isNaN(ref) ? undefined : { ascent, descent };
}

/**
 * Replaces the computed climbs of the activities with an elevation channel, `batch` at a time in
 * id order; returns how many changed. A changed activity's `updated_at` moves (what it answers
 * changed, so a sync client sees it), its version does not (no write of the user's).
 */
export async function refreshComputedClimbs(
  db: Executor,
  scope: { userId?: string } = {},
  batch = 200,
): Promise<number> {
  const ofUser = scope.userId === undefined ? sql`` : sql` and a.user_id = ${scope.userId}`;
  let after = '';
  let changed = 0;
  for (;;) {
    const { rows } = await sql<{ id: string; ascent: number | null; descent: number | null; values: Buffer }>`
      select a.id, (a.data_summaries ->> '18')::float8 as ascent, (a.data_summaries ->> '19')::float8 as descent,
        c."values"
      from activities a
      join activity_stream_channels c on c.activity_id = a.id and c.datatype_id = ${DATATYPE.ELEVATION_CURRENT}
      where a.id > ${after} and (a.data_summaries ? '18' or a.data_summaries ? '19')${ofUser}
      order by a.id limit ${batch}`.execute(db);
    if (rows.length === 0) return changed;
    for (const a of rows) {
      const elevation = channelFromBytes(a.values);
      const old = deadBandClimb(elevation);
      const computedBefore =
        old !== undefined &&
        (a.ascent === null || a.ascent === round2(old.ascent)) &&
        (a.descent === null || a.descent === round2(old.descent));
      const now = computedBefore ? ascentDescent(elevation) : undefined;
      if (!now) continue;
      const next: Record<string, number> = {};
      if (a.ascent !== null) next['18'] = round2(now.ascent);
      if (a.descent !== null) next['19'] = round2(now.descent);
      if ((next['18'] ?? null) === a.ascent && (next['19'] ?? null) === a.descent) continue;
      await sql`
        update activities set data_summaries = data_summaries || ${JSON.stringify(next)}::jsonb, updated_at = now()
        where id = ${a.id}`.execute(db);
      changed++;
    }
    after = rows[rows.length - 1]?.id ?? after;
  }
}
