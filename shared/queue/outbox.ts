import { type Kysely, sql, type Transaction } from 'kysely';
import type { Database } from '../db/schema/index.ts';
import { jobIdProblem, type OutboxJob } from './jobs.ts';
import type { QueueName, QueueSet } from './queues.ts';

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
export function outboxRows(jobs: OutboxJob[]): { queue: string; job_name: string; job_id: string; payload: string }[] {
  // Checked at the write: BullMQ would refuse the row and the relay would retry its batch forever.
  for (const j of jobs) {
    const problem = jobIdProblem(j.jobId);
    if (problem) throw new Error(`invalid job id "${j.jobId}" for ${j.queue}/${j.name}: ${problem}`);
  }
  return jobs.map((j) => ({ queue: j.queue, job_name: j.name, job_id: j.jobId, payload: JSON.stringify(j.payload) }));
}

/**
 * Moves one batch of unsent rows to BullMQ and marks them sent, in one transaction; returns how
 * many. Rows are locked with SKIP LOCKED so several relays (one per process) share the work.
 * If Redis is down this throws, the transaction rolls back and the rows wait for the next pass.
 */
export async function relayOutboxBatch(db: Kysely<Database>, queues: QueueSet, batchSize = 200): Promise<number> {
  queues.assertReady();
  return db.transaction().execute(async (trx) => {
    const rows = await trx
      .selectFrom('outbox')
      .select(['id', 'queue', 'job_name', 'job_id', 'payload'])
      .where('sent_at', 'is', null)
      .orderBy('id')
      .limit(batchSize)
      .forUpdate()
      .skipLocked()
      .execute();
    if (rows.length === 0) return 0;
    const byQueue = new Map<string, typeof rows>();
    for (const row of rows) byQueue.set(row.queue, [...(byQueue.get(row.queue) ?? []), row]);
    for (const [queue, list] of byQueue) {
      await queues
        .get(queue as QueueName)
        .addBulk(list.map((r) => ({ name: r.job_name, data: r.payload, opts: { jobId: r.job_id } })));
    }
    await trx
      .updateTable('outbox')
      .set({ sent_at: sql<Date>`now()`, attempts: sql<number>`attempts + 1` })
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
 * Runs relay passes until stopped: immediately again while batches are full, every `intervalMs`
 * otherwise, backing off up to 5 s while Redis is unreachable. Sent rows older than a week are purged.
 */
export class OutboxRelay {
  #timer: NodeJS.Timeout | undefined;
  #running: Promise<void> | undefined;
  #stopped = false;
  #lastPurge = 0;
  #failures = 0;
  /** A kick came during the running pass. */
  #again = false;
  readonly db: Kysely<Database>;
  readonly queues: QueueSet;
  readonly intervalMs: number;

  readonly onError: (error: unknown) => void;

  constructor(
    db: Kysely<Database>,
    queues: QueueSet,
    intervalMs: number,
    onError: (error: unknown) => void = () => {},
  ) {
    this.db = db;
    this.queues = queues;
    this.intervalMs = intervalMs;
    this.onError = onError;
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
      if ((await relayOutboxBatch(this.db, this.queues)) >= 200) next = 0;
      this.#failures = 0;
      if (Date.now() - this.#lastPurge > 3600_000) {
        this.#lastPurge = Date.now();
        await this.db.deleteFrom('outbox').where('sent_at', '<', sql<Date>`now() - interval '7 days'`).execute();
      }
    } catch (error) {
      // Redis or Postgres unavailable: back off exponentially up to 5 s.
      if (this.#failures++ > 0) this.onError(error);
      next = Math.min(5_000, this.intervalMs * 2 ** this.#failures);
      this.#again = false;
    }
    if (!this.#stopped) this.#schedule(this.#again ? 0 : next);
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#timer);
    await this.#running;
  }
}
