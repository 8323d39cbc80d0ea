import type { ColumnType } from 'kysely';

/** The records job's tables (migration 0045, docs/tracking-records.md); user_records is in tracking.ts. */
export interface ActivityBestEffortsTable {
  activity_id: string;
  /** `all` or `distance.<metres>m`. */
  type: string;
  datatype_id: number;
  /** Copies of the activity's, rewritten with its efforts. */
  user_id: string;
  sport_id: number;
  startdate: Date;
  value: number;
  /** Larger is better whatever the record's direction: the best is the first row of the index. */
  score: number;
}

/** Which version of each activity its efforts were computed from, under which settings digest. */
export interface ActivityRecordsStateTable {
  activity_id: string;
  version: number;
  settings: string;
  computed_at: ColumnType<Date, Date | string | undefined, Date | string>;
}

export interface RecordsTables {
  activity_best_efforts: ActivityBestEffortsTable;
  activity_records_state: ActivityRecordsStateTable;
}
