import { type Kysely, sql } from 'kysely';
import type { Database } from '../db/schema/index.ts';
import { encodeJobMeta } from './job-meta.ts';
import type { OutboxJob } from './jobs.ts';
import { bullJobId } from './outbox-epoch.ts';
import { outboxRows } from './outbox-write.ts';
import { QUEUE_NAMES, type QueueName, type QueueSet } from './queues.ts';

/**
 * An outbox row as BullMQ gets it: the request travels in the job's options (job-meta.ts), the
 * row's epoch and reruns in its id (outbox-epoch.ts).
 */
function bullJob(row: {
  job_name: string;
  job_id: string;
  payload: unknown;
  request_id: string | null;
  traceparent: string | null;
  epoch?: number;
  reruns?: number;
}) {
  const meta = encodeJobMeta(row.request_id, row.traceparent);
  return {
    name: row.job_name,
    data: row.payload,
    opts: {
      jobId: bullJobId(row.job_id, row.epoch ?? 0, row.reruns ?? 0),
      ...(meta === undefined ? {} : { telemetry: { metadata: meta } }),
    },
  };
}

/**
 * Adds jobs to BullMQ at once, without outbox rows, for a caller whose own committed rows can
 * make them again should Redis lose them (the webhook deliveries: shared/tracking/webhooks/sweep.ts).
 * The request travels as through the outbox; BullMQ keeps one job per id. With a `priority`, the
 * jobs come after every job added without one (BullMQ takes those first), in their order.
 */
export async function addJobsNow(
  queues: QueueSet,
  jobs: OutboxJob[],
  options: { priority?: number } = {},
): Promise<void> {
  if (jobs.length === 0) return;
  queues.assertReady();
  // The rows' payload is JSON text for the outbox's jsonb; BullMQ gets the payload itself.
  const rows = outboxRows(jobs).map((row, i) => ({ ...row, payload: jobs[i]?.payload }));
  const byQueue = new Map<string, typeof rows>();
  for (const row of rows) byQueue.set(row.queue, [...(byQueue.get(row.queue) ?? []), row]);
  for (const [queue, list] of byQueue)
    await queues.get(queue as QueueName).addBulk(
      list.map((row) => {
        const bull = bullJob(row);
        return { ...bull, opts: { ...bull.opts, ...options } };
      }),
    );
}

/**
 * Moves one batch of unsent rows to BullMQ and marks them sent, in one transaction; returns how
 * many. Rows are locked with SKIP LOCKED so several relays (one per process) share the work.
 * If Redis is down this throws, the transaction rolls back and the rows wait for the next pass.
 */
export async function relayOutboxBatch(db: Kysely<Database>, queues: QueueSet, batchSize = 200): Promise<number> {
  queues.assertReady();
  return db.transaction().execute(async (trx) => {
    const unsent = await trx
      .selectFrom('outbox')
      .select(['id', 'queue', 'job_name', 'job_id', 'payload', 'request_id', 'traceparent', 'epoch', 'reruns'])
      .where('sent_at', 'is', null)
      .orderBy('id')
      .limit(batchSize)
      .forUpdate()
      .skipLocked()
      .execute();
    if (unsent.length === 0) return 0;
    // Relayed in the current epoch (outbox-epoch.ts); a row relayed again keeps a later one.
    const { epoch } = await trx.selectFrom('outbox_epoch').select('epoch').executeTakeFirstOrThrow();
    const rows = unsent.map((r) => ({ ...r, epoch: Math.max(Number(r.epoch), Number(epoch)) }));
    const byQueue = new Map<string, typeof rows>();
    for (const row of rows) byQueue.set(row.queue, [...(byQueue.get(row.queue) ?? []), row]);
    for (const [queue, list] of byQueue) {
      await queues.get(queue as QueueName).addBulk(list.map(bullJob));
    }
    await trx
      .updateTable('outbox')
      .set({
        sent_at: sql<Date>`now()`,
        attempts: sql<number>`attempts + 1`,
        epoch: sql<number>`greatest(epoch, ${Number(epoch)})`,
      })
      .where(
        'id',
        'in',
        rows.map((r) => r.id),
      )
      .execute();
    return rows.length;
  });
}

/** Counts rows still waiting for the relay (a metric and a test hook). */
export async function pendingOutboxCount(db: Kysely<Database>): Promise<number> {
  const row = await db
    .selectFrom('outbox')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('sent_at', 'is', null)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

/**
 * A job's own done mark, handed to its handler (workers/processor.ts) to run in the transaction
 * that commits the job's effect: the effect and the mark then commit together.
 */
export type MarkDone = (trx: Kysely<Database>) => Promise<unknown>;

/** A MarkDone that marks nothing (callers outside a worker: tests, commands). */
export const NO_MARK: MarkDone = async () => {};

/**
 * Marks done the open rows of a job whose effect has committed, or inside that commit's
 * transaction (the worker, through MarkDone).
 * Every row of the job id is marked: rows with the same id ask for the same work.
 */
export async function markOutboxDone(db: Kysely<Database>, queue: string, jobId: string): Promise<number> {
  const result = await db
    .updateTable('outbox')
    .set({ done_at: sql<Date>`now()` })
    .where('queue', '=', queue)
    .where('job_id', '=', jobId)
    .where('done_at', 'is', null)
    .executeTakeFirst();
  return Number(result.numUpdatedRows);
}

/** Marks the open rows of a job that failed its last attempt: they wait for an operator, not the reconciler. */
export async function markOutboxFailed(db: Kysely<Database>, queue: string, jobId: string): Promise<number> {
  const result = await db
    .updateTable('outbox')
    .set({ failed_at: sql<Date>`now()` })
    .where('queue', '=', queue)
    .where('job_id', '=', jobId)
    .where('done_at', 'is', null)
    .where('failed_at', 'is', null)
    .executeTakeFirst();
  return Number(result.numUpdatedRows);
}

/** What one reconciler batch found. */
export interface ReconcileResult {
  /** Rows looked at. */
  checked: number;
  /** Jobs Redis no longer had: relayed again with the same job id. */
  relayed: number;
  /**
   * Jobs Redis holds as completed while their row is not done here (the database was restored,
   * or the row was written after a job of the same id had run): run again under a new id.
   */
  rerun: number;
  /** Jobs found failed (e.g. stalled too often): marked failed. */
  failed: number;
}

/** Which rows a reconciler batch looks at, besides its age limit. */
export interface ReconcileScope {
  /** Only these queues. */
  queues?: readonly string[];
  /** Only rows after this id (a pass over every row pages with it). */
  afterId?: number;
  /** Also rows looked at recently (`checked_at`): after a loss of Redis's data, every row is suspect. */
  ignoreChecked?: boolean;
}

/**
 * Looks in Redis for the jobs of rows relayed more than `afterSeconds` ago and not done: a job
 * Redis lost (data loss, a restart without persistence) is relayed again with its id; one Redis
 * holds as completed while its row is not done here (a restored database next to a Redis that
 * ran its job in another life) is relayed again under a new id (`reruns`: outbox-epoch.ts); one
 * still queued or running is left alone and looked at again `afterSeconds` later. BullMQ ignores
 * an add whose id exists, so a row reconciled by two relays at once still makes one job.
 */
export async function reconcileOutboxBatch(
  db: Kysely<Database>,
  queues: QueueSet,
  afterSeconds: number,
  batchSize = 200,
  scope: ReconcileScope = {},
): Promise<ReconcileResult & { lastId: number | undefined }> {
  queues.assertReady();
  return db.transaction().execute(async (trx) => {
    const stale = sql<Date>`now() - make_interval(secs => ${afterSeconds})`;
    let query = trx
      .selectFrom('outbox')
      .select(['id', 'queue', 'job_name', 'job_id', 'payload', 'request_id', 'traceparent', 'epoch', 'reruns'])
      .where('done_at', 'is', null)
      .where('failed_at', 'is', null)
      .where('sent_at', '<', stale);
    if (!scope.ignoreChecked)
      query = query.where((eb) => eb.or([eb('checked_at', 'is', null), eb('checked_at', '<', stale)]));
    if (scope.queues) query = query.where('queue', 'in', [...scope.queues]);
    if (scope.afterId !== undefined) query = query.where('id', '>', scope.afterId);
    const rows = await query.orderBy('id').limit(batchSize).forUpdate().skipLocked().execute();
    const result = { checked: rows.length, relayed: 0, rerun: 0, failed: 0, lastId: rows.at(-1)?.id };
    if (rows.length === 0) return result;
    const states = await Promise.all(
      rows.map((r) => queues.get(r.queue as QueueName).getJobState(bullJobId(r.job_id, r.epoch, r.reruns))),
    );
    const lost = rows.filter((_, i) => states[i] === 'unknown');
    const rerun = rows.filter((_, i) => states[i] === 'completed').map((r) => ({ ...r, reruns: r.reruns + 1 }));
    const byQueue = new Map<string, typeof rows>();
    for (const row of [...lost, ...rerun]) byQueue.set(row.queue, [...(byQueue.get(row.queue) ?? []), row]);
    for (const [queue, list] of byQueue) await queues.get(queue as QueueName).addBulk(list.map(bullJob));
    const idsIn = (state: string) => rows.filter((_, i) => states[i] === state).map((r) => r.id);
    const failed = idsIn('failed');
    await trx
      .updateTable('outbox')
      .set({ checked_at: sql<Date>`now()` })
      .where(
        'id',
        'in',
        rows.map((r) => r.id),
      )
      .execute();
    if (lost.length > 0)
      await trx
        .updateTable('outbox')
        .set({ sent_at: sql<Date>`now()`, attempts: sql<number>`attempts + 1` })
        .where(
          'id',
          'in',
          lost.map((r) => r.id),
        )
        .execute();
    if (rerun.length > 0)
      await trx
        .updateTable('outbox')
        .set({ sent_at: sql<Date>`now()`, attempts: sql<number>`attempts + 1`, reruns: sql<number>`reruns + 1` })
        .where(
          'id',
          'in',
          rerun.map((r) => r.id),
        )
        .execute();
    if (failed.length > 0)
      await trx.updateTable('outbox').set({ failed_at: sql<Date>`now()` }).where('id', 'in', failed).execute();
    return { ...result, relayed: lost.length, rerun: rerun.length, failed: failed.length };
  });
}

/**
 * Looks in Redis for the job of every open row relayed before now (of `names`, or all queues),
 * whenever it was last looked at: lost jobs are relayed again (reconcileOutboxBatch). For a loss
 * of Redis's data (redis-loss.ts), and `npm run jobs -- reconcile`.
 */
export async function reconcileNow(
  db: Kysely<Database>,
  queues: QueueSet,
  names?: readonly string[],
): Promise<ReconcileResult> {
  const total: ReconcileResult = { checked: 0, relayed: 0, rerun: 0, failed: 0 };
  let afterId: number | undefined;
  for (;;) {
    const batch = await reconcileOutboxBatch(db, queues, 0, 500, {
      ignoreChecked: true,
      ...(names ? { queues: names } : {}),
      ...(afterId === undefined ? {} : { afterId }),
    });
    total.checked += batch.checked;
    total.relayed += batch.relayed;
    total.rerun += batch.rerun;
    total.failed += batch.failed;
    if (batch.lastId === undefined) return total;
    afterId = batch.lastId;
  }
}

/** One queue's outbox as an operator watches it (/metrics). Ages are 0 when no row is concerned. */
export interface QueueOutboxStats {
  /** Rows not relayed yet. */
  pending: number;
  /** Age of the oldest row not relayed yet (the relay is behind, or Redis is unreachable). */
  relayLagSeconds: number;
  /** Age of the oldest row whose job has neither completed nor failed for good. */
  outboxLagSeconds: number;
  /** Rows whose job failed its last attempt and has not completed since. */
  failed: number;
}

export interface OutboxStats {
  /** Rows not relayed yet, all queues. */
  pending: number;
  /** Every queue of QUEUE_NAMES (zeros when it has no open row), and any other queue a row names. */
  queues: Record<string, QueueOutboxStats>;
}

/** The open rows (not done) per queue, in one pass over the index of open rows. */
export async function outboxStats(db: Kysely<Database>): Promise<OutboxStats> {
  const { rows } = await sql<{ queue: string; pending: string; relay_lag: number; outbox_lag: number; failed: string }>`
    select queue,
      count(*) filter (where sent_at is null) as pending,
      coalesce(extract(epoch from now() - min(created_at) filter (where sent_at is null)), 0)::float8 as relay_lag,
      coalesce(extract(epoch from now() - min(created_at) filter (where failed_at is null)), 0)::float8 as outbox_lag,
      count(*) filter (where failed_at is not null) as failed
    from outbox
    where done_at is null
    group by queue`.execute(db);
  const queues: Record<string, QueueOutboxStats> = Object.fromEntries(
    QUEUE_NAMES.map((q) => [q, { pending: 0, relayLagSeconds: 0, outboxLagSeconds: 0, failed: 0 }]),
  );
  for (const row of rows)
    queues[row.queue] = {
      pending: Number(row.pending),
      // A clock step back must not show a negative age.
      relayLagSeconds: Math.max(0, Number(row.relay_lag)),
      outboxLagSeconds: Math.max(0, Number(row.outbox_lag)),
      failed: Number(row.failed),
    };
  return { pending: Object.values(queues).reduce((n, q) => n + q.pending, 0), queues };
}

/** Finished rows (done, or failed and given up) are kept this long, as BullMQ keeps failed jobs. */
export const OUTBOX_RETENTION = '7 days';

/** Deletes the rows finished more than OUTBOX_RETENTION ago. */
export async function purgeOutbox(db: Kysely<Database>): Promise<void> {
  const before = sql<Date>`now() - ${OUTBOX_RETENTION}::interval`;
  await db.deleteFrom('outbox').where('done_at', '<', before).execute();
  await db.deleteFrom('outbox').where('done_at', 'is', null).where('failed_at', '<', before).execute();
}
