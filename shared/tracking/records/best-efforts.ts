import { type ActivityContent, DATATYPE } from '../activities/data.ts';
import { bestTimeOver } from './best-time.ts';
import { type DistanceSeries, distanceFromStream, distanceFromTrack, SeriesBuffers } from './distance-series.ts';
import { recordDirection, recordScore } from './record-ways.ts';
import type { SportFamily } from './settings.ts';

/** One candidate record of one activity: the activity's best value for a (type, datatype). */
export interface BestEffort {
  /** `all` or `distance.<metres>m`. */
  type: string;
  datatypeId: number;
  value: number;
  /** Larger is better whatever the record's direction (see recordScore). */
  score: number;
}

export interface RecordRules {
  /** The `recordWay` of the referential's datatypes; a datatype missing here is not a record. */
  recordWays: ReadonlyMap<number, number>;
  /** The family of the activity's sport; null: the sport has no distance records. */
  family: SportFamily | null;
}

export const ALL_TYPE = 'all';
export const distanceType = (metres: number): string => `distance.${metres}m`;

/** The distance the records time: the datastream's distance channel, else the GPS track. */
export function distanceSeries(
  content: ActivityContent,
  maxSpeed: number,
  buffers?: SeriesBuffers,
): DistanceSeries | null {
  return (
    distanceFromStream(content.datastream, maxSpeed, buffers) ?? distanceFromTrack(content.track, maxSpeed, buffers)
  );
}

/** bestEfforts runs to completion without yielding and its series does not outlive it: one set of buffers serves every call. */
const buffers = new SeriesBuffers();

/** Times are kept to the millisecond: finer is interpolation noise, and equal times must tie exactly. */
const toMilliseconds = (seconds: number) => Math.round(seconds * 1000) / 1000;

/**
 * Everything one activity could hold a record in, in O(its samples × its family's distances):
 * - `all`: each summary value whose datatype is a record (recordWay), highest best;
 * - `distance.<m>m`: for each distance of the sport's family that the activity covers, its fastest
 *   time over that distance, datatype duration (24), seconds, lowest best.
 * Sorted by type then datatype, so equal inputs give equal outputs.
 */
export function bestEfforts(content: ActivityContent, rules: RecordRules): BestEffort[] {
  const efforts: BestEffort[] = [];
  for (const [datatypeId, value] of content.summaries) {
    const direction = recordDirection(rules.recordWays.get(datatypeId));
    if (direction && Number.isFinite(value))
      efforts.push({ type: ALL_TYPE, datatypeId, value, score: recordScore(value, direction) });
  }
  const family = rules.family;
  const series = family && family.distances.length > 0 ? distanceSeries(content, family.maxSpeed, buffers) : null;
  if (family && series) {
    for (const metres of family.distances) {
      const window = bestTimeOver(series, metres);
      if (!window) continue;
      const value = toMilliseconds(window.seconds);
      efforts.push({
        type: distanceType(metres),
        datatypeId: DATATYPE.DURATION,
        value,
        score: recordScore(value, 'lowest'),
      });
    }
  }
  return efforts.sort((a, b) => (a.type < b.type ? -1 : a.type > b.type ? 1 : a.datatypeId - b.datatypeId));
}
