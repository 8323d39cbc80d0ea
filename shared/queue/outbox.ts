import { type Kysely, sql, type Transaction } from 'kysely';
import type { Database } from '../db/schema/index.ts';
import { requestContext } from '../observability/request-context.ts';
import { tracing } from '../observability/tracing.ts';
import { encodeJobMeta } from './job-meta.ts';
import { jobIdProblem, type OutboxJob } from './jobs.ts';
import { bullJobId, checkOutboxEpoch, type EpochCheck } from './outbox-epoch.ts';
import { QUEUE_NAMES, type QueueName, type QueueSet } from './queues.ts';
import { queuesWithoutMarker } from './redis-loss.ts';

/**
 * Stores jobs (built with `job()` of jobs.ts) in the caller's transaction: they exist exactly when
 * the data they follow exists.
 */
export async function enqueueInTransaction(
  trx: Transaction<Database> | Kysely<Database>,
  jobs: OutboxJob | OutboxJob[],
): Promise<void> {
  const rows = outboxRows(Array.isArray(jobs) ? jobs : [jobs]);
  if (rows.length === 0) return;
  await trx.insertInto('outbox').values(rows).execute();
}

/**
 * The outbox rows of `jobs`, for a writer that inserts them itself (in a statement that writes
 * the data they follow: shared/tracking/activities/store.ts). Throws for a job id BullMQ would refuse.
 */
export function outboxRows(jobs: OutboxJob[]): OutboxRow[] {
  // Checked at the write: BullMQ would refuse the row and the relay would retry its batch forever.
  for (const j of jobs) {
    const problem = jobIdProblem(j.jobId);
    if (problem) throw new Error(`invalid job id "${j.jobId}" for ${j.queue}/${j.name}: ${problem}`);
  }
  // The request (or job) writing the rows, if any; with OpenTelemetry on, the active span is the
  // parent to continue (it carries the client's trace id when the client sent one).
  const context = requestContext();
  const traceparent = tracing().activeTraceparent() ?? context?.traceparent ?? null;
  return jobs.map((j) => ({
    queue: j.queue,
    job_name: j.name,
    job_id: j.jobId,
    payload: JSON.stringify(j.payload),
    request_id: context?.requestId ?? null,
    traceparent,
  }));
}

export interface OutboxRow {
  queue: string;
  job_name: string;
  job_id: string;
  payload: string;
  request_id: string | null;
  traceparent: string | null;
}

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

export interface RelayOptions {
  /** Also reconcile (see reconcileOutboxBatch) rows relayed this many seconds ago and not done; unset: never. */
  reconcileAfterS?: number;
  /** Told what each reconciler batch that found something did. */
  onReconcile?: (result: ReconcileResult) => void;
  /**
   * Watch these queues' markers in Redis (redis-loss.ts) and reconcile a queue at once when its
   * marker is gone; unset: never (only the reconciler's age limit finds lost jobs).
   */
  watchQueues?: readonly QueueName[];
  /** How often the markers are looked at (default 1 s). */
  lossCheckMs?: number;
  /** Told which queues lost their marker and what reconciling them at once did. */
  onRedisLoss?: (queues: QueueName[], result: ReconcileResult) => void;
  /** Told when a new outbox epoch began (the database was restored, copied or promoted). */
  onNewEpoch?: (check: EpochCheck) => void;
}

/** How often a relay checks that its database is where the outbox epoch was set. */
const EPOCH_CHECK_MS = 10_000;

/**
 * Runs relay passes until stopped: immediately again while batches are full, every `intervalMs`
 * otherwise, backing off up to 5 s while Redis is unreachable. With `reconcileAfterS`, it also
 * reconciles rows whose jobs have not completed (see reconcileOutboxBatch). Rows finished more than
 * OUTBOX_RETENTION ago are purged.
 */
export class OutboxRelay {
  #timer: NodeJS.Timeout | undefined;
  #running: Promise<void> | undefined;
  #stopped = false;
  #lastPurge = 0;
  #failures = 0;
  #lastReconcile = 0;
  #lastLossCheck = 0;
  #lastEpochCheck = 0;
  /** A kick came during the running pass. */
  #again = false;
  readonly db: Kysely<Database>;
  readonly queues: QueueSet;
  readonly intervalMs: number;

  readonly onError: (error: unknown) => void;
  readonly options: RelayOptions;

  constructor(
    db: Kysely<Database>,
    queues: QueueSet,
    intervalMs: number,
    onError: (error: unknown) => void = () => {},
    options: RelayOptions = {},
  ) {
    this.db = db;
    this.queues = queues;
    this.intervalMs = intervalMs;
    this.onError = onError;
    this.options = options;
  }

  start(): void {
    this.#stopped = false;
    this.#schedule(0);
  }

  /**
   * Asks for a pass now (e.g. right after a commit that wrote outbox rows). A kick during a pass
   * makes another pass follow at once: that pass may have read the outbox before the kicker's
   * commit, and the row would otherwise wait for the next poll.
   */
  kick(): void {
    if (this.#stopped) return;
    if (this.#running) this.#again = true;
    else this.#schedule(0);
  }

  #schedule(delay: number): void {
    clearTimeout(this.#timer);
    this.#timer = setTimeout(() => {
      this.#running = this.#pass().finally(() => {
        this.#running = undefined;
      });
    }, delay);
    this.#timer.unref();
  }

  async #pass(): Promise<void> {
    let next = this.intervalMs;
    // Kicks from now on are for commits this pass may not see.
    this.#again = false;
    try {
      // Before relaying: rows of a restored database must not go out under their old ids.
      await this.#checkEpoch();
      await this.#checkRedisLoss();
      if ((await relayOutboxBatch(this.db, this.queues)) >= 200) next = 0;
      else if (await this.#reconcile()) next = 0;
      this.#failures = 0;
      if (Date.now() - this.#lastPurge > 3600_000) {
        this.#lastPurge = Date.now();
        await purgeOutbox(this.db);
      }
    } catch (error) {
      // Redis or Postgres unavailable: back off exponentially up to 5 s.
      if (this.#failures++ > 0) this.onError(error);
      next = Math.min(5_000, this.intervalMs * 2 ** this.#failures);
      this.#again = false;
    }
    if (!this.#stopped) this.#schedule(this.#again ? 0 : next);
  }

  /**
   * One reconciler batch when due: a few times per OUTBOX_RECONCILE_AFTER_S (at most every 10 s),
   * so a lost job is relayed again between one and about one and a half of that age. True when
   * the batch was full (more rows wait).
   */
  async #reconcile(): Promise<boolean> {
    const after = this.options.reconcileAfterS;
    if (after === undefined || Date.now() - this.#lastReconcile < Math.min(10_000, after * 250)) return false;
    const { lastId: _, ...result } = await reconcileOutboxBatch(this.db, this.queues, after);
    if (result.checked < 200) this.#lastReconcile = Date.now();
    if (result.relayed + result.rerun + result.failed > 0) this.options.onReconcile?.(result);
    return result.checked >= 200;
  }

  async #checkEpoch(): Promise<void> {
    if (Date.now() - this.#lastEpochCheck < EPOCH_CHECK_MS) return;
    const check = await checkOutboxEpoch(this.db);
    this.#lastEpochCheck = Date.now();
    if (check.changed) this.options.onNewEpoch?.(check);
  }

  async #checkRedisLoss(): Promise<void> {
    const watched = this.options.watchQueues;
    if (!watched || Date.now() - this.#lastLossCheck < (this.options.lossCheckMs ?? 1_000)) return;
    const lost = await queuesWithoutMarker(this.queues, watched);
    this.#lastLossCheck = Date.now();
    if (lost.length === 0) return;
    const result = await reconcileNow(this.db, this.queues, lost);
    this.options.onRedisLoss?.(lost, result);
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#timer);
    await this.#running;
  }
}
