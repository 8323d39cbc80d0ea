import type { ColumnType } from 'kysely';

/** A deleted activity, kept TRACKING_TOMBSTONE_TTL_S for the sync clients (migration 0060; docs/tracking-sync.md). */
export interface ActivityTombstonesTable {
  /** The deleted activity's id (ids are never reused). */
  activity_id: string;
  user_id: string;
  /** The deletion's transaction time, as `updated_at` of the other rows. */
  deleted_at: ColumnType<Date, Date | string | undefined, never>;
}

export interface TombstoneTables {
  activity_tombstones: ActivityTombstonesTable;
}
