import type { ColumnType, Generated } from 'kysely';

export type ExportStatus = 'pending' | 'running' | 'done' | 'failed';

/** A bulk export of a user's activities (migration 0046, docs/tracking-exports.md). */
export interface TrackingExportsTable {
  /** 128 random bits in hex; also names the file (`exports/<id>.zip`). */
  id: string;
  user_id: string;
  format: Generated<'gpx'>;
  /** `activities` (POST /v2/exports) or `personal_data`, everything of the user (migration 0058). */
  kind: Generated<'activities' | 'personal_data'>;
  status: Generated<ExportStatus>;
  /** The secret of the download link (base64url, 256 random bits). */
  download_token: string;
  /** Activities to export once the job counted them; those in the archive once done. */
  activity_count: number | null;
  processed_count: Generated<number>;
  size_bytes: ColumnType<number | null, number | null | undefined, number | null>;
  /** Relative to STORAGE_DIR; set exactly when done. */
  file_path: string | null;
  error: string | null;
  attempts: Generated<number>;
  created_at: Generated<Date>;
  started_at: Date | null;
  finished_at: Date | null;
  /** Set when the export ends (done or failed): the link works until then, the cleanup removes it after. */
  expires_at: Date | null;
}

export interface ExportTables {
  tracking_exports: TrackingExportsTable;
}
