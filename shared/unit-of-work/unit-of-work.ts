import type { Kysely, Transaction } from 'kysely';
import type { Database } from '../db/schema/index.ts';
import type { OutboxJob } from '../queue/jobs.ts';
import { enqueueInTransaction } from '../queue/outbox-write.ts';

/**
 * A use case's side effects, recorded on its transaction (docs/CONTRIBUTING-internals.md, "Side
 * effects"): the jobs it causes (`enqueue`) and the domain events it raises (`emit`). Before the
 * commit, each event goes to its subscribers (a web hook event, more jobs), then every job is
 * written as an outbox row by the one writer (shared/queue/outbox-write.ts); after the commit,
 * this process's relay is asked for a pass, so the jobs leave at once. A use case never writes an
 * outbox row, a web hook event or a kick itself.
 */

export interface DomainEvent {
  readonly type: string;
}

/** What hears an event of type `E`: it runs in the same transaction, and may enqueue or emit more. */
export type Subscriber<E extends DomainEvent, A extends E = E> = (uow: UnitOfWork<E>, event: A) => Promise<void>;

/** The subscribers of each type of event (a type without one is a no-op). */
export type Subscribers<E extends DomainEvent> = {
  readonly [T in E['type']]?: readonly Subscriber<E, Extract<E, { type: T }>>[];
};

export class UnitOfWork<E extends DomainEvent> {
  readonly trx: Kysely<Database>;
  readonly #subscribers: Subscribers<E>;
  readonly #jobs: OutboxJob[] = [];
  readonly #events: E[] = [];
  #sideEffects = 0;

  constructor(trx: Kysely<Database>, subscribers: Subscribers<E>) {
    this.trx = trx;
    this.#subscribers = subscribers;
  }

  /** Jobs to run once the transaction commits. */
  enqueue(...jobs: OutboxJob[]): void {
    this.#jobs.push(...jobs);
  }

  /** A domain event: its subscribers run before the commit, in this transaction. */
  emit(event: E): void {
    this.#events.push(event);
  }

  /**
   * A statement of the use case wrote its jobs itself (outboxInsert as a CTE of the statement that
   * writes the data, shared/tracking/activities/store.ts): the relay is asked after the commit too.
   */
  wroteJobs(): void {
    this.#sideEffects++;
  }

  /** Runs the subscribers of the events recorded so far (and of those they emit), then writes the jobs. */
  async flush(): Promise<void> {
    for (let event = this.#events.shift(); event; event = this.#events.shift()) {
      this.#sideEffects++;
      const heard = (this.#subscribers[event.type as E['type']] ?? []) as readonly Subscriber<E>[];
      for (const subscriber of heard) await subscriber(this, event);
    }
    const jobs = this.#jobs.splice(0);
    this.#sideEffects += jobs.length;
    await enqueueInTransaction(this.trx, jobs);
  }

  /** Whether anything was recorded (a commit then may have written outbox rows). */
  get caused(): boolean {
    return this.#sideEffects > 0;
  }
}

// ---------------------------------------------------------------- after the commit

const committedListeners = new Set<() => void>();

/**
 * Hears every commit of a unit of work that caused something (the API's and the workers' relay
 * ask for a pass: api/server.ts, workers/worker.ts). Returns the function that stops it.
 */
export function onSideEffectsCommitted(listener: () => void): () => void {
  committedListeners.add(listener);
  return () => committedListeners.delete(listener);
}

/** Tells the listeners that a commit wrote side effects (also for a writer of its own statement). */
export function sideEffectsCommitted(): void {
  for (const listener of committedListeners) listener();
}

/**
 * Runs `work` as one unit of work: in a transaction of `db` (or inside `db` when it is already one),
 * its side effects written before the commit, the relay asked after it.
 */
export async function runUnitOfWork<E extends DomainEvent, T>(
  db: Kysely<Database>,
  subscribers: Subscribers<E>,
  work: (uow: UnitOfWork<E>) => Promise<T>,
): Promise<T> {
  let caused = false;
  const run = async (trx: Kysely<Database>) => {
    const uow = new UnitOfWork(trx, subscribers);
    const result = await work(uow);
    await uow.flush();
    caused = uow.caused;
    return result;
  };
  // A transaction given: its owner commits, and tells the listeners (sideEffectsCommitted).
  if (db.isTransaction) return run(db as Transaction<Database>);
  const result = await db.transaction().execute(run);
  if (caused) sideEffectsCommitted();
  return result;
}

/** A unit of work that raises no domain event (a service without subscribers: places' pictures). */
export const unitOfWork = <T>(db: Kysely<Database>, work: (uow: UnitOfWork<never>) => Promise<T>): Promise<T> =>
  runUnitOfWork<never, T>(db, {}, work);
