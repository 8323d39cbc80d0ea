import { type RawBuilder, sql } from 'kysely';
import type { Db } from '../../db/database.ts';
import { type Found, type PageRequest, pageOf } from '../../db/paging.ts';
import type { ActivityRow } from '../../db/schema/tracking.ts';
import { invalid, notFoundError } from '../../errors.ts';
import { iri } from '../iri.ts';
import { recordDirection } from '../records/record-ways.ts';
import { DATATYPE } from './data.ts';

/**
 * GET /v2/activities/{id}/similar/{datatype} (docs/tracking-activities.md, "Similar activities"):
 * the caller's activities of the activity's sport whose distance is within SIMILAR_TOLERANCE of its
 * own, the activity included, ranked by their value of the datatype.
 */

/** ±10 % of the activity's distance, bounds included. */
export const SIMILAR_TOLERANCE = 0.1;

export type SimilarOrder = 'asc' | 'desc';

/** A number summary of the activity (null otherwise), as migration 0063's index spells it. */
const summarySql = (datatypeId: number): RawBuilder<number | null> => {
  const key = String(datatypeId);
  return sql<
    number | null
  >`(case when jsonb_typeof(data_summaries -> ${sql.lit(key)}) = 'number' then (data_summaries ->> ${sql.lit(key)})::double precision end)`;
};

/** The activity's distance in metres, the expression of activities_user_sport_distance_idx. */
export const DISTANCE_SQL = summarySql(DATATYPE.DISTANCE);

/** The value ranked: the activity's own duration for datatype 24, else its summary of the datatype. */
export const similarValueSql = (datatypeId: number): RawBuilder<number | null> =>
  datatypeId === DATATYPE.DURATION ? sql<number>`duration` : summarySql(datatypeId);

/**
 * Best first. Over one distance, less time is better: duration ascending (the fastest first),
 * although its recordWay says the longest is a record. Otherwise a record datatype (recordWay 1:
 * speed, calories, ascent) goes highest first, and any other (averages such as heart rate) lowest first.
 */
export function similarOrder(datatypeId: number, recordWay: number): SimilarOrder {
  if (datatypeId === DATATYPE.DURATION) return 'asc';
  return recordDirection(recordWay) === 'highest' ? 'desc' : 'asc';
}

/** The distance range of activities similar to one of `metres`; null (no distance) matches null. */
export function distanceRange(metres: number | null): { min: number; max: number } | null {
  if (metres === null) return null;
  return { min: metres * (1 - SIMILAR_TOLERANCE), max: metres * (1 + SIMILAR_TOLERANCE) };
}

/** The path parameter as a datatype id: a positive integer, or a 422 naming it. */
function datatypeIdOf(raw: string): number {
  if (!/^[1-9][0-9]{0,8}$/.test(raw))
    throw invalid([{ path: 'datatype', message: `"${raw.slice(0, 64)}" is not a datatype id (a positive integer)` }]);
  return Number(raw);
}

export interface SimilarRequest {
  /** The `{datatype}` of the path, as sent. */
  datatype: string;
  /** Overrides similarOrder. */
  order?: SimilarOrder | undefined;
}

/**
 * One page of the activities similar to the caller's activity `activityId`, and how many there are.
 * Another user's activity or a missing one is a 404 (checked first, so its datatype tells
 * nothing); an unknown datatype a 422. The candidates are one range of
 * activities_user_sport_distance_idx (user, sport, distance); those without a value of the
 * datatype are left out. Ties: earliest start first, then id.
 */
export async function similarActivities(
  db: Db,
  callerId: string,
  activityId: string,
  request: SimilarRequest,
  paging: PageRequest,
): Promise<Found<ActivityRow>> {
  const activity = await db
    .selectFrom('activities')
    .select(['sport_id', DISTANCE_SQL.as('distance')])
    .where('id', '=', activityId)
    .where('user_id', '=', callerId)
    .executeTakeFirst();
  if (!activity) throw notFoundError(`No activity ${activityId}`);
  const datatypeId = datatypeIdOf(request.datatype);
  const datatype = await db
    .selectFrom('datatypes')
    .select('record_way')
    .where('id', '=', datatypeId)
    .executeTakeFirst();
  if (!datatype) throw invalid([{ path: 'datatype', message: `${iri('datatypes', datatypeId)} does not exist` }]);
  const order = request.order ?? similarOrder(datatypeId, datatype.record_way);
  return pageOf(similarQuery(db, callerId, activity.sport_id, activity.distance, datatypeId, order), paging);
}

/** The statement of similarActivities, on its own so its plan can be checked (test/tracking-similar.test.ts). */
export function similarQuery(
  db: Db,
  callerId: string,
  sportId: number,
  distance: number | null,
  datatypeId: number,
  order: SimilarOrder,
) {
  const range = distanceRange(distance);
  const value = similarValueSql(datatypeId);
  return db
    .selectFrom('activities')
    .selectAll()
    .where('user_id', '=', callerId)
    .where('sport_id', '=', sportId)
    .where(
      range
        ? sql<boolean>`${DISTANCE_SQL} between ${range.min} and ${range.max}`
        : sql<boolean>`${DISTANCE_SQL} is null`,
    )
    .where(sql<boolean>`${value} is not null`)
    .orderBy(value, order)
    .orderBy('startdate', 'asc')
    .orderBy('id', 'asc');
}
