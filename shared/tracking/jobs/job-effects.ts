import { job } from '../../queue/jobs.ts';
import type { TrackingWork } from '../unit-of-work.ts';
import type { JobRow } from './job-fields.ts';
import { countChildEnd, endJob } from './job-store.ts';

/**
 * Every side effect of a job, one function each, recorded on the unit of work of the change that
 * causes it (shared/tracking/unit-of-work.ts): the worker's job written with the row, the end of
 * an import (its web hook event), a bulk import's end once its last file ended.
 */

/** The `imports/import-file` job of a job row about a file. */
export const importFileQueued = (uow: TrackingWork, rows: Pick<JobRow, 'id' | 'user_id'>[]) =>
  uow.enqueue(...rows.map((row) => job('imports', 'import-file', { jobId: row.id, userId: row.user_id })));

/** The `imports/bulk-split` job of a bulk import's row: its zip opened and split on the workers. */
export const bulkSplitQueued = (uow: TrackingWork, row: Pick<JobRow, 'id' | 'user_id'>) =>
  uow.enqueue(job('imports', 'bulk-split', { jobId: row.id, userId: row.user_id }));

/** An import that ended (not a bulk import's file: its bulk import's end stands for it). */
export function importEnded(uow: TrackingWork, row: JobRow): void {
  if (row.parent_id === null && (row.type === 'activity_import' || row.type === 'bulk_import'))
    uow.emit({ type: 'ImportEnded', job: row });
}

/** A bulk import's file ended (imported, refused, skipped or cancelled): counted on its parent. */
export async function childEnded(uow: TrackingWork, child: JobRow, outcome: 'done' | 'failed'): Promise<void> {
  if (child.parent_id === null) return;
  const last = await countChildEnd(uow.trx, child.parent_id, child.user_id, outcome);
  if (last) await finishBulkImport(uow, last);
}

/**
 * A bulk import whose every file ended: done, with its counts, and one `import_done` event for the
 * whole instead of an `activity_create` per file (docs/tracking-files.md, "Bulk import").
 */
export async function finishBulkImport(uow: TrackingWork, parent: JobRow): Promise<void> {
  const result = { ...parent.result, imported: parent.done_count, failed: parent.failed_count };
  const ended = await endJob(uow.trx, parent.user_id, parent.id, { state: 'done', result });
  if (ended) importEnded(uow, ended);
}
