import type { ColumnType, Generated } from 'kysely';

/** Counts of what a deletion removed so far, per table (`files` for files). */
export type DeletedCounts = Record<string, number>;

/** An account whose deletion has started (migration 0058, docs/accounts-lifecycle.md). */
export interface AccountDeletionsTable {
  account_id: string;
  /** `schedule`: the user's `scheduleDelete` fell due; `operator`: `npm run accounts:purge -- --account`. */
  requested_by: 'schedule' | 'operator';
  /** The `scheduleDelete` it follows (null when an operator forced it). */
  due_at: Date | null;
  started_at: Generated<Date>;
  /** The last step that finished (for people; a resumed run does every step again). */
  step: Generated<string>;
  deleted: ColumnType<DeletedCounts, string | undefined, string>;
  /** The run working on it, until `run_until` (each of its transactions renews it). */
  run_token: string | null;
  run_until: Date | null;
}

/** A file (or folder) under STORAGE_DIR a deletion still has to remove. */
export interface AccountDeletionFilesTable {
  account_id: string;
  /** Relative to STORAGE_DIR. */
  path: string;
}

export interface AccountDeletionTables {
  account_deletions: AccountDeletionsTable;
  account_deletion_files: AccountDeletionFilesTable;
}
