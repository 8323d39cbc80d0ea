import { type RawBuilder, sql } from 'kysely';
import { channelFromBytes, trackFromWkb } from './binary.ts';
import { DATATYPE, emptyDatastream, emptyTrack, type Track } from './data.ts';
import { type MovingFields, type MovingRule, movingFields, movingRuleOf } from './moving-time.ts';

/**
 * The database side of moving time (moving-time.ts has the rule): which rule a sport follows, and
 * the recomputation from stored streams when a PUT changes the sport and when `npm run
 * derived:rebuild -- --moving` fills the activities without them (those stored before migration
 * 0062). Plain statements with any executor (a transaction too).
 */

/** What runs a raw statement: a Kysely<Database> or one of its transactions. */
type Executor = Parameters<RawBuilder<unknown>['execute']>[0];

/** Sports change only when the referential is seeded again: a sport's rule is kept this long. */
const RULE_TTL_MS = 10 * 60_000;
const rules = new Map<number, { rule: MovingRule | null; until: number }>();

/** The moving rule of a sport, from its ancestry in the sports referential (remembered a while). */
export async function movingRuleFor(db: Executor, sportId: number): Promise<MovingRule | null> {
  const known = rules.get(sportId);
  if (known && known.until > Date.now()) return known.rule;
  // A depth limit, so a cycle in the referential cannot loop (as the records' ancestry).
  const { rows } = await sql<{ id: number }>`
    with recursive chain (id, parent_id, depth) as (
      select id, parent_id, 0 from sports where id = ${sportId}
      union all
      select s.id, s.parent_id, c.depth + 1 from sports s join chain c on s.id = c.parent_id where c.depth < 16
    )
    select id from chain order by depth`.execute(db);
  const rule = movingRuleOf(rows.map((r) => r.id));
  rules.set(sportId, { rule, until: Date.now() + RULE_TTL_MS });
  return rule;
}

/** The streams moving time reads (elapsed, distance and speed channels, track), of one stored activity. */
async function storedSpeedStreams(db: Executor, activityId: string) {
  const [elapsed, channels, track] = await Promise.all([
    sql<{ elapsed: number[] }>`select elapsed from activity_datastreams where activity_id = ${activityId}`.execute(db),
    sql<{ datatype_id: number; values: Buffer }>`
      select datatype_id, "values" from activity_stream_channels
      where activity_id = ${activityId} and datatype_id in (${DATATYPE.DISTANCE}, ${DATATYPE.SPEED_CURRENT})`.execute(
      db,
    ),
    storedTrack(db, activityId),
  ]);
  const datastream = emptyDatastream();
  datastream.elapsed = Int32Array.from(elapsed.rows[0]?.elapsed ?? []);
  for (const c of channels.rows) datastream.channels.set(c.datatype_id, channelFromBytes(c.values));
  return { datastream, track };
}

/** The stored GPS track of an activity (empty without one). */
export async function storedTrack(db: Executor, activityId: string): Promise<Track> {
  const { rows } = await sql<{
    wkb: Buffer;
  }>`select ST_AsBinary(track) as wkb from activity_tracks where activity_id = ${activityId}`.execute(db);
  const wkb = rows[0]?.wkb;
  return wkb ? trackFromWkb(wkb) : emptyTrack();
}

/** The columns of migration 0062 as an update sets them (pauses as JSON). */
export function movingColumns(m: MovingFields) {
  return { ...m, pauses: JSON.stringify(m.pauses) };
}

/**
 * Moving fields of a stored activity under its new sport's rule and its new summaries (a PUT),
 * or undefined when neither the rule nor the distance summary they read changes (nothing to recompute).
 */
export async function movingFieldsForSport(
  db: Executor,
  activity: { id: string; sport_id: number; duration: number; data_summaries: Record<string, number> },
  sportId: number,
  summaries: Record<string, number> = activity.data_summaries,
): Promise<MovingFields | undefined> {
  const [before, after] = await Promise.all([movingRuleFor(db, activity.sport_id), movingRuleFor(db, sportId)]);
  const distance = String(DATATYPE.DISTANCE);
  if (before === after && activity.data_summaries[distance] === summaries[distance]) return undefined;
  const streams = await storedSpeedStreams(db, activity.id);
  const values = new Map(Object.entries(summaries).map(([k, v]) => [Number(k), v]));
  return movingFields({ duration: activity.duration, summaries: values, ...streams }, after);
}

/**
 * Fills the moving fields of every activity that has none (stored before migration 0062), or
 * with `all` of every activity (`npm run derived:rebuild -- --moving --force`), `batch` at a time
 * in id order; returns how many it filled. Each activity's streams are read once.
 */
export async function fillMovingFields(db: Executor, batch = 200, { all = false } = {}): Promise<number> {
  let after = '';
  let filled = 0;
  for (;;) {
    const { rows } = await sql<{
      id: string;
      sport_id: number;
      duration: number;
      data_summaries: Record<string, number>;
    }>`
      select id, sport_id, duration, data_summaries from activities
      where ${all ? sql`true` : sql`moving_time is null`} and id > ${after} order by id limit ${batch}`.execute(db);
    if (rows.length === 0) return filled;
    for (const a of rows) {
      const streams = await storedSpeedStreams(db, a.id);
      const summaries = new Map(Object.entries(a.data_summaries).map(([k, v]) => [Number(k), v]));
      const m = movingFields({ duration: a.duration, summaries, ...streams }, await movingRuleFor(db, a.sport_id));
      await sql`
        update activities set moving_time = ${m.moving_time}, pauses = ${JSON.stringify(m.pauses)}::jsonb,
          moving_speed_avg = ${m.moving_speed_avg}, moving_pace = ${m.moving_pace}
        where id = ${a.id}`.execute(db);
      filled++;
    }
    after = rows[rows.length - 1]?.id ?? after;
  }
}
