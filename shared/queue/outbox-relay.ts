import type { Kysely } from 'kysely';
import type { Database } from '../db/schema/index.ts';
import { purgeOutbox, type ReconcileResult, reconcileNow, reconcileOutboxBatch, relayOutboxBatch } from './outbox.ts';
import { checkOutboxEpoch, type EpochCheck } from './outbox-epoch.ts';
import type { QueueName, QueueSet } from './queues.ts';
import { queuesWithoutMarker } from './redis-loss.ts';

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
