import type { ColumnType, Generated } from 'kysely';

export const JOB_TYPES = [
  'activity_import',
  'bulk_import',
  'records_recompute',
  'thumbnails_rebuild',
  'statistics_rebuild',
] as const;
export type JobType = (typeof JOB_TYPES)[number];

export const JOB_STATES = ['pending', 'running', 'done', 'failed', 'cancelled', 'skipped'] as const;
export type JobState = (typeof JOB_STATES)[number];

/** Why a job failed, as its `error` member shows it (docs/tracking-files.md, "Jobs"). */
export type JobError = {
  /** The status the synchronous path answers for the same refusal (409, 413, 415, 422...). */
  status: number;
  /** What it is, in a few words (`The file cannot be imported`). */
  title: string;
  /** Why, in the user's terms. */
  detail: string;
  violations?: { propertyPath: string; message: string }[];
  /** The stored activity a duplicate duplicates (its IRI). */
  activity?: string;
};

/** A job of /v2/jobs (migration 0070). */
export interface JobsTable {
  /** 128 random bits in hex. */
  id: string;
  /** Its owner: the user who asked (staff for staff jobs). */
  user_id: string;
  parent_id: string | null;
  type: JobType;
  state: Generated<JobState>;
  /** What was asked (the import's fields, the recompute's scope): a JSON object of strings. */
  params: ColumnType<Record<string, string>, string | undefined, string>;
  /** The stored file, relative to STORAGE_DIR, until the job ends. */
  file_path: string | null;
  /** The file's name: its path in the zip for a bulk import's child. */
  file_name: string | null;
  content_type: string | null;
  /** A child's place in its parent's zip. */
  position: number | null;
  /** The activity an import created (or, for a duplicate, none). */
  activity_id: string | null;
  result: ColumnType<Record<string, unknown> | null, string | null | undefined, string | null>;
  error: ColumnType<JobError | null, string | null | undefined, string | null>;
  /** A parent's children (a bulk import's files), a recompute's activities. */
  total: number | null;
  done_count: Generated<number>;
  failed_count: Generated<number>;
  attempts: Generated<number>;
  created_at: Generated<Date>;
  updated_at: Generated<Date>;
  started_at: Date | null;
  finished_at: Date | null;
}

export interface JobTables {
  jobs: JobsTable;
}
