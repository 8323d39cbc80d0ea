import { DATATYPE } from '../activities/data.ts';
import { type PeriodStarts, periodStarts } from './periods.ts';

/** "Activity number": each activity counts 1 (the original API's sumups carry the count so). */
export const ACTIVITY_COUNT_DATATYPE = 98;
/** "Active time": the moving time the statistics sum. */
export const MOVING_TIME_DATATYPE = 30;

/** What the rollup needs of an activity. */
export interface SumupActivity {
  sportId: number;
  startdate: Date;
  /** The activity's `duration` field, in seconds. */
  duration: number;
  /** Its computed moving time (seconds; moving-time.ts), null when not computed yet. */
  movingTime: number | null;
  /**
   * Its summaries of cumulable datatypes, id to the value as the decimal text jsonb stores: kept
   * as text so the sums in numeric are exact.
   */
  summaries: Readonly<Record<string, string>>;
}

/** What one activity adds to its user's statistics. */
export interface Contribution {
  sportId: number;
  timezone: string;
  periods: PeriodStarts;
  /** Datatype id to the value added (decimal text), by ascending id. */
  values: [number, string][];
}

/**
 * The rule (docs/tracking-statistics.md): the activity adds to the week, month and year it
 * starts in (local to `timezone`), under its sport and under every sport; 1 to "Activity number"
 * (98, whatever its summaries say), its duration (24) from its summary or else from its
 * `duration` field, its moving time (30, "Active time") from its summary when a client sent one
 * or else the computed `movingTime`, and the value of each other cumulable datatype its
 * summaries carry.
 */
export function contributionOf(activity: SumupActivity, timezone: string): Contribution {
  const values = new Map<number, string>();
  for (const [key, value] of Object.entries(activity.summaries)) {
    const id = Number(key);
    if (Number.isInteger(id) && id !== ACTIVITY_COUNT_DATATYPE) values.set(id, value);
  }
  if (!values.has(DATATYPE.DURATION)) values.set(DATATYPE.DURATION, String(activity.duration));
  if (!values.has(MOVING_TIME_DATATYPE) && activity.movingTime !== null)
    values.set(MOVING_TIME_DATATYPE, String(activity.movingTime));
  values.set(ACTIVITY_COUNT_DATATYPE, '1');
  return {
    sportId: activity.sportId,
    timezone,
    periods: periodStarts(activity.startdate, timezone),
    values: [...values].sort((a, b) => a[0] - b[0]),
  };
}

/**
 * Whether two contributions add the same thing (a change of the activity that leaves its
 * statistics alone). Values compare as text: another spelling of the same number only costs a
 * subtraction and an addition that cancel out.
 */
export function sameContribution(a: Contribution, b: Contribution): boolean {
  return (
    a.sportId === b.sportId &&
    a.timezone === b.timezone &&
    a.periods.week === b.periods.week &&
    a.periods.month === b.periods.month &&
    a.periods.year === b.periods.year &&
    a.values.length === b.values.length &&
    a.values.every(([id, v], i) => b.values[i]?.[0] === id && b.values[i]?.[1] === v)
  );
}
