import type { Db } from '../../db/database.ts';
import type { JobError } from '../../db/schema/jobs.ts';
import type { MarkDone } from '../../queue/outbox.ts';
import { type BulkMember, bulkContents, bulkMember } from '../imports/bulk-members.ts';
import { ZIP_LIMITS, type ZipLimits, ZipRefusal } from '../imports/zip-limits.ts';
import { inspectZip, type ZipMemberInfo } from '../imports/zip-reader.ts';
import { trackingWork } from '../unit-of-work.ts';
import { notClaimed } from './import-job.ts';
import type { ImportParams } from './import-params.ts';
import { finishBulkImport, importEnded, importFileQueued } from './job-effects.ts';
import { jobFileOnDisk, jobFilePath, removeJobFile, writeJobFile } from './job-files.ts';
import { claimJob, endJob, insertJobs, type NewJob, newJobId } from './job-store.ts';

/**
 * The `imports/bulk-split` job (docs/tracking-files.md, "Bulk import"): the zip a bulk import
 * stored is checked against ZIP_LIMITS (refused whole, naming the limit), then each member is
 * written as a file of its own and gets a child job, in the zip's order; members that are no
 * activity file are children `skipped` with their reason. The children, their outbox jobs and the
 * parent's `total` commit together; a rerun after a crash before that commit starts over (files
 * written then are orphans the cleanup removes), after it finds the parent split and does nothing.
 */

export interface BulkSplitOptions {
  storageDir: string;
  markDone: MarkDone;
  limits?: ZipLimits;
}

export type BulkSplitOutcome =
  | { status: 'split'; jobId: string; files: number; skipped: number }
  | { status: 'refused'; jobId: string; reason: string }
  | { status: 'skipped'; jobId: string; reason: string };

/** A refused zip as the bulk import's error: 413 for the size limits, 422 otherwise, as the synchronous answers go. */
function refusalError(refusal: ZipRefusal): JobError {
  const tooLarge = refusal.reason === 'maxTotalBytes' || refusal.reason === 'maxEntryBytes';
  return {
    status: tooLarge ? 413 : 422,
    title: 'The zip cannot be imported',
    detail: refusal.message,
    violations: [{ propertyPath: 'file', message: refusal.message }],
  };
}

/** A file's fields: what activities.csv says of it wins over what the request said for every file. */
function childParams(parent: ImportParams, member: Extract<BulkMember, { kind: 'activity' }>): ImportParams {
  const { listed } = member;
  return {
    ...parent,
    ...(listed?.name !== undefined ? { name: listed.name } : {}),
    ...(listed?.sportId !== undefined ? { sport: String(listed.sportId) } : {}),
    ...(listed?.description !== undefined ? { comment: listed.description } : {}),
  };
}

/** A member that cannot be read (a damaged entry) is skipped with yauzl's reason, like any other unusable member. */
async function readMember(read: () => Promise<BulkMember>, member: ZipMemberInfo): Promise<BulkMember> {
  try {
    return await read();
  } catch (error) {
    return { kind: 'skipped', name: member.name, reason: `the member cannot be read: ${(error as Error).message}` };
  }
}

export async function runBulkSplit(
  db: Db,
  { jobId, userId }: { jobId: string; userId: string },
  options: BulkSplitOptions,
): Promise<BulkSplitOutcome> {
  const parent = await claimJob(db, userId, jobId);
  if (!parent) return { status: 'skipped', jobId, reason: await notClaimed(db, options.storageDir, { jobId, userId }) };
  if (parent.total !== null) return { status: 'skipped', jobId, reason: 'already split' };
  if (!parent.file_path) throw new Error(`bulk import ${jobId} has no file`);
  const limits = options.limits ?? ZIP_LIMITS;
  let zip: Awaited<ReturnType<typeof inspectZip>>;
  try {
    zip = await inspectZip(jobFileOnDisk(options.storageDir, parent.file_path), limits);
  } catch (error) {
    if (!(error instanceof ZipRefusal)) throw error;
    await trackingWork(db, async (uow) => {
      const ended = await endJob(uow.trx, userId, jobId, { state: 'failed', error: refusalError(error) });
      if (ended) importEnded(uow, ended);
      await options.markDone(uow.trx);
    });
    await removeJobFile(options.storageDir, parent.file_path);
    return { status: 'refused', jobId, reason: error.reason };
  }
  const children: NewJob[] = [];
  try {
    const contents = await bulkContents(zip);
    for (const [position, info] of contents.members.entries()) {
      const member = await readMember(() => bulkMember(zip, contents, info, limits), info);
      const id = newJobId();
      const common = { id, userId, parentId: jobId, position, fileName: member.name };
      if (member.kind === 'skipped') {
        children.push({
          ...common,
          type: 'activity_import',
          params: {},
          state: 'skipped',
          error: { status: 415, title: 'Not an activity file', detail: member.reason },
        });
        continue;
      }
      const filePath = jobFilePath(id);
      await writeJobFile(options.storageDir, filePath, member.bytes);
      children.push({ ...common, type: 'activity_import', params: childParams(parent.params, member), filePath });
    }
    const result = contents.listingProblem ? { listingProblem: contents.listingProblem } : {};
    await trackingWork(db, async (uow) => {
      const { trx } = uow;
      const rows = await insertJobs(trx, children);
      const skipped = rows.filter((r) => r.state === 'skipped').length;
      const split = await trx
        .updateTable('jobs')
        .set({ total: rows.length, failed_count: skipped, result: JSON.stringify(result) })
        .where('id', '=', jobId)
        .where('user_id', '=', userId)
        .where('state', '=', 'running')
        .returningAll()
        .executeTakeFirst();
      if (!split) throw new Error(`bulk import ${jobId} stopped running while it was split`);
      const pending = rows.filter((r) => r.state === 'pending');
      importFileQueued(uow, pending);
      if (pending.length === 0) await finishBulkImport(uow, split);
      await options.markDone(trx);
    });
  } catch (error) {
    await Promise.all(children.map((c) => removeJobFile(options.storageDir, c.filePath ?? null)));
    throw error;
  } finally {
    zip.close();
  }
  // Each file has its own copy now.
  await removeJobFile(options.storageDir, parent.file_path);
  const skipped = children.filter((c) => c.state === 'skipped').length;
  return { status: 'split', jobId, files: children.length - skipped, skipped };
}
