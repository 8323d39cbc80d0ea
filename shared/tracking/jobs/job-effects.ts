import type { Kysely, Transaction } from 'kysely';
import type { Database } from '../../db/schema/index.ts';
import { job } from '../../queue/jobs.ts';
import { enqueueInTransaction } from '../../queue/outbox-write.ts';
import { emitImportEvent } from '../webhooks/import-event.ts';
import type { JobRow } from './job-fields.ts';
import { countChildEnd, endJob } from './job-store.ts';

/**
 * Every side effect of a job, one function each, called in the transaction of the change that
 * causes it: the worker's job written with the row, the web hook event of an import's end, a
 * bulk import's end once its last file ended.
 */

type Executor = Kysely<Database> | Transaction<Database>;

/** The `imports/import-file` job of a job row about a file. */
export const importFileQueued = (trx: Executor, rows: Pick<JobRow, 'id' | 'user_id'>[]) =>
  enqueueInTransaction(
    trx,
    rows.map((row) => job('imports', 'import-file', { jobId: row.id, userId: row.user_id })),
  );

/** The `imports/bulk-split` job of a bulk import's row: its zip opened and split on the workers. */
export const bulkSplitQueued = (trx: Executor, row: Pick<JobRow, 'id' | 'user_id'>) =>
  enqueueInTransaction(trx, job('imports', 'bulk-split', { jobId: row.id, userId: row.user_id }));

/** `import_done` or `import_failed` for an import that ended (not for a bulk import's file). */
export async function importEnded(trx: Executor, row: JobRow): Promise<void> {
  if (row.parent_id === null && (row.type === 'activity_import' || row.type === 'bulk_import'))
    await emitImportEvent(trx, row);
}

/** A bulk import's file ended (imported, refused, skipped or cancelled): counted on its parent. */
export async function childEnded(trx: Executor, child: JobRow, outcome: 'done' | 'failed'): Promise<void> {
  if (child.parent_id === null) return;
  const last = await countChildEnd(trx, child.parent_id, child.user_id, outcome);
  if (last) await finishBulkImport(trx, last);
}

/**
 * A bulk import whose every file ended: done, with its counts, and one `import_done` event for the
 * whole instead of an `activity_create` per file (docs/tracking-files.md, "Bulk import").
 */
export async function finishBulkImport(trx: Executor, parent: JobRow): Promise<void> {
  const result = { ...parent.result, imported: parent.done_count, failed: parent.failed_count };
  const ended = await endJob(trx, parent.user_id, parent.id, { state: 'done', result });
  if (ended) await importEnded(trx, ended);
}
