import type { ColumnType, Generated } from 'kysely';

/** A `date` column read as `YYYY-MM-DD` (the queries select it with to_char) and written as such. */
type LocalDate = ColumnType<string, string, string>;
/** A `numeric` column: pg reads it as a decimal string, exact; written as one. */
type Decimal = ColumnType<string, string, string>;

/** Statistics by period (migration 0061, docs/tracking-statistics.md). */
export interface UserSumupsTable {
  id: Generated<string>;
  user_id: string;
  type: 'week' | 'month' | 'year';
  /** The first local day of the period, in the user's time zone. */
  period: LocalDate;
  /** Null: every sport. */
  sport_id: number | null;
  datatype_id: number;
  value: Decimal;
  /** How many activities add to this row: the row goes when it reaches 0. */
  activities: number;
  created_at: Generated<Date>;
  updated_at: Generated<Date>;
}

/** What one activity added to the rollup, so that a change subtracts exactly that. */
export interface ActivitySumupStateTable {
  activity_id: string;
  user_id: string;
  version: number;
  sport_id: number;
  timezone: string;
  week: LocalDate;
  month: LocalDate;
  year: LocalDate;
  datatype_ids: number[];
  values: ColumnType<string[], string[], string[]>;
  updated_at: Generated<Date>;
}

export interface SumupTables {
  user_sumups: UserSumupsTable;
  activity_sumup_state: ActivitySumupStateTable;
}
