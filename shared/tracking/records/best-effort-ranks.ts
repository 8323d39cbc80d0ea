import { type Db, poolOf } from '../../db/database.ts';
import { notFoundError } from '../../errors.ts';
import { sqlDateTime } from '../dates.ts';

/**
 * GET /v2/activities/{id}/best_efforts (docs/tracking-records.md, "Best efforts of one activity"):
 * the efforts the records job stored for one activity, each with its rank among the user's efforts
 * of the same sport, type and datatype, as Strava's `pr_rank`.
 */

/** Ranks are given to the podium only, as Strava does; beyond it the rank is null. */
export const RANKED_EFFORTS = 3;

export interface RankedEffort {
  activityId: string;
  sportId: number;
  /** `all` or `distance.<metres>m`. */
  type: string;
  datatypeId: number;
  value: number;
  /** The activity's start (where in the activity the effort starts is not stored), as formatDateTime writes it. */
  startdate: string;
  /** 1 for the user's record, up to RANKED_EFFORTS; null below. */
  rank: number | null;
}

/** The distance of a `distance.<m>m` type, in metres; null for `all`. */
export function effortDistance(type: string): number | null {
  const m = /^distance\.([1-9][0-9]*)m$/.exec(type);
  return m ? Number(m[1]) : null;
}

const DISTANCE_NAMES: Record<number, string> = {
  804: '½ mile',
  1609: '1 mile',
  3218: '2 miles',
  21097: 'Half marathon',
  42195: 'Marathon',
  160900: '100 miles',
};

/** Strava's names of its best efforts (`5k`, `1 mile`...), in words: `5 km`, `400 m`. */
export function effortName(metres: number): string {
  const named = DISTANCE_NAMES[metres];
  if (named) return named;
  return metres % 1000 === 0 ? `${metres / 1000} km` : `${metres} m`;
}

/** Distances first, shortest first, then the summary bests by datatype. */
function byDistanceThenDatatype(a: RankedEffort, b: RankedEffort): number {
  const da = effortDistance(a.type) ?? Number.POSITIVE_INFINITY;
  const db = effortDistance(b.type) ?? Number.POSITIVE_INFINITY;
  return da - db || a.datatypeId - b.datatypeId;
}

/**
 * The caller's activity's efforts with their ranks, in one statement: each effort reads the first
 * RANKED_EFFORTS rows of its range of activity_best_efforts_best_idx (user, sport, type, datatype,
 * then score desc, startdate, activity id: the records' own order, so rank 1 is the record), so the
 * work grows with the activity's efforts, never with the user's history. Another user's activity
 * or a missing one is a 404; an activity whose efforts are not computed yet has none. `db` must be
 * one createDb made (the statement goes straight to its pool, prepared).
 */
export async function activityBestEfforts(db: Db, callerId: string, activityId: string): Promise<RankedEffort[]> {
  const { rows } = await poolOf(db).query<BestEffortRow>({
    name: 'tracking_best_efforts',
    text: BEST_EFFORTS,
    values: [activityId, callerId],
  });
  if (rows.length === 0) throw notFoundError(`No activity ${activityId}`);
  return rows
    .filter((r) => r.type !== null)
    .map((r) => ({
      activityId,
      sportId: r.sport_id as number,
      type: r.type as string,
      datatypeId: r.datatype_id as number,
      value: r.value as number,
      startdate: r.startdate as string,
      rank: r.rank === null ? null : Number(r.rank),
    }))
    .sort(byDistanceThenDatatype);
}

interface BestEffortRow {
  type: string | null;
  datatype_id: number | null;
  sport_id: number | null;
  value: number | null;
  startdate: string | null;
  rank: string | null;
}

/** The statement of activityBestEfforts ($1 the activity, $2 the caller): EXPLAINed by test/tracking-best-efforts-read.test.ts. */
export const BEST_EFFORTS = `
    select e.type, e.datatype_id, e.sport_id, e.value, ${sqlDateTime('e.startdate')} as startdate, podium.rank
    from activities a
    left join activity_best_efforts e on e.activity_id = a.id and e.user_id = a.user_id
    left join lateral (
      select top.rank from (
        select t.activity_id, row_number() over (order by t.score desc, t.startdate, t.activity_id) as rank
        from (
          select b.activity_id, b.score, b.startdate from activity_best_efforts b
          where b.user_id = e.user_id and b.sport_id = e.sport_id and b.type = e.type and b.datatype_id = e.datatype_id
          order by b.score desc, b.startdate, b.activity_id limit ${RANKED_EFFORTS}
        ) t
      ) top
      where top.activity_id = e.activity_id
    ) podium on true
    where a.id = $1 and a.user_id = $2`;
