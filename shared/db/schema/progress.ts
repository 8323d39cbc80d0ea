import type { ColumnType, Generated, GeneratedAlways } from 'kysely';

/** A `numeric` column: pg reads it as a decimal string, exact; written as one. */
type Decimal = ColumnType<string, string | undefined, string>;
type Stamps = { created_at: Generated<Date>; updated_at: Generated<Date> };

/** A user's gear and its totals (migration 0069, docs/tracking-gear-goals-challenges.md). */
export interface UserEquipmentsTable extends Stamps {
  id: Generated<string>;
  user_id: string;
  category: string;
  brand: string;
  name: string;
  start_date: Date | null;
  sports_auto_assigned: ColumnType<number[], number[] | undefined, number[]>;
  retired: Generated<boolean>;
  /** Metres; the `equipment_alert` event is sent when the distance reaches it. */
  alert_distance: ColumnType<string | null, string | null | undefined, string | null>;
  alerted_at: ColumnType<Date | null, Date | null | undefined, Date | null>;
  /** Totals kept by the records job. */
  distance: Decimal;
  duration: Decimal;
  moving_time: Decimal;
  elevation_gain: Decimal;
  activities: Generated<number>;
}

/** A target value of a measure datatype (v2.26 UserMeasureGoal). */
export interface UserMeasureGoalsTable extends Stamps {
  /** bigint: pg reads it as a string. */
  id: GeneratedAlways<string>;
  user_id: string;
  datatype_id: number;
  initial: number | null;
  goal: number;
  startdate: Date;
}

/** A target of distance, ascent, duration or count between two instants (v2.26 UserChallenge). */
export interface UserChallengesTable extends Stamps {
  id: Generated<string>;
  user_id: string;
  name: string;
  target_datatype_id: number;
  target: ColumnType<string | null, string | null, string | null>;
  started_at: Date;
  ended_at: Date;
  sport_id: number | null;
  version: Generated<number>;
  /** Kept by the records job. */
  result: Decimal;
  achieved_at: ColumnType<Date | null, Date | null | undefined, Date | null>;
  achieved_activity_id: ColumnType<string | null, string | null | undefined, string | null>;
  /** The running total at that activity: where a change before it starts looking for the new crossing. */
  achieved_total: ColumnType<string | null, string | null | undefined, string | null>;
  notified_at: ColumnType<Date | null, Date | null | undefined, Date | null>;
}

/** What one activity added to its gear and challenges, so that a change subtracts exactly that. */
export interface ActivityProgressStateTable {
  activity_id: string;
  user_id: string;
  version: number;
  sport_id: number;
  startdate: Date;
  ended_at: Date;
  equipment_ids: string[];
  distance: ColumnType<string, string, string>;
  duration: ColumnType<string, string, string>;
  moving_time: ColumnType<string, string, string>;
  elevation_gain: ColumnType<string, string, string>;
  updated_at: Generated<Date>;
}

export interface ProgressTables {
  user_equipments: UserEquipmentsTable;
  user_measure_goals: UserMeasureGoalsTable;
  user_challenges: UserChallengesTable;
  activity_progress_state: ActivityProgressStateTable;
}
