import { formatDateTime } from '../dates.ts';
import { iri } from '../iri.ts';
import type { GoalRow } from './store.ts';

/** How far a goal is, from the measures of its datatype (docs/tracking-gear-goals-challenges.md, "Progress"). */
export interface GoalProgress {
  /** `initial`, else the latest measure at or before `startdate`, else the first after it; null without any. */
  start: number | null;
  /** The latest measure at or after `startdate`. */
  latest: { measure: string; value: number; date: string } | null;
  /** (latest − start) / (goal − start), within 0 and 1, 4 decimals; null without start or latest, or when goal = start. */
  share: number | null;
  /** The latest measure is at the goal, or beyond it (in the goal's direction). */
  reached: boolean;
}

/** The progress of a goal as its row was read (goals/store.ts reads the measures beside it). */
export function goalProgress(g: GoalRow): GoalProgress {
  const start = g.initial ?? g.before_value ?? g.first_value;
  const latest =
    g.latest_id !== null && g.latest_value !== null && g.latest_date !== null
      ? { measure: iri('user_measures', g.latest_id), value: g.latest_value, date: formatDateTime(g.latest_date) }
      : null;
  const ratio =
    start === null || latest === null || g.goal === start ? null : (latest.value - start) / (g.goal - start);
  const share = ratio === null ? null : Math.round(Math.min(1, Math.max(0, ratio)) * 10_000) / 10_000;
  return { start, latest, share, reached: ratio !== null && ratio >= 1 };
}

/** The members of a UserMeasureGoal node, as /v2/user_measure_goals answers them (and the personal-data export). */
export const goalFields = (g: GoalRow) => ({
  id: Number(g.id),
  user: iri('users', g.user_id),
  datatype: iri('datatypes', g.datatype_id),
  initial: g.initial,
  goal: g.goal,
  startdate: formatDateTime(g.startdate),
  createdAt: formatDateTime(g.created_at),
  updatedAt: formatDateTime(g.updated_at),
  // Extension, after v2.26's members.
  progress: goalProgress(g),
});
