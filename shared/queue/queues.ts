import { Queue } from 'bullmq';
import { QUEUE_NAMES, type QueueName } from '../config.ts';
import { queuePrefix, type RedisClient } from './connection.ts';

export { QUEUE_NAMES, type QueueName };

/** Retries with backoff for every job; finished jobs are trimmed so Redis memory stays bounded. */
export const defaultJobOptions = {
  attempts: 5,
  backoff: { type: 'exponential', delay: 1_000 },
  removeOnComplete: { age: 24 * 3600, count: 10_000 },
  removeOnFail: { age: 7 * 24 * 3600 },
} as const;

export function isQueueName(name: string): name is QueueName {
  return (QUEUE_NAMES as readonly string[]).includes(name);
}

/** The job states /metrics counts per queue (`prioritized` jobs are waiting ones with a priority: none here). */
export const JOB_STATES = ['waiting', 'active', 'delayed', 'completed', 'failed'] as const;
export type JobCountState = (typeof JOB_STATES)[number];

export class RedisUnavailableError extends Error {}

/** Producer-side queues, one per name, sharing one fail-fast connection. */
export class QueueSet {
  readonly #queues = new Map<QueueName, Queue>();
  readonly connection: RedisClient;
  /** QUEUE_PREFIX; a queue's own BullMQ prefix is prefixOf(name) (hash-tagged on a cluster). */
  readonly prefix: string;

  constructor(connection: RedisClient, prefix: string) {
    this.connection = connection;
    this.prefix = prefix;
  }

  /**
   * BullMQ waits for a connection to become ready before sending anything; a producer must not
   * wait on a Redis that is down, so callers check this first and fail fast.
   */
  assertReady(): void {
    if (this.connection.status !== 'ready') throw new RedisUnavailableError(`Redis is ${this.connection.status}`);
  }

  /** The BullMQ prefix of a queue (connection.ts queuePrefix). */
  prefixOf(name: QueueName): string {
    return queuePrefix(this.prefix, name, this.connection.isCluster);
  }

  get(name: QueueName): Queue {
    let queue = this.#queues.get(name);
    if (!queue) {
      queue = new Queue(name, { connection: this.connection, prefix: this.prefixOf(name), defaultJobOptions });
      queue.on('error', () => {});
      this.#queues.set(name, queue);
    }
    return queue;
  }

  /** Jobs per queue and state (JOB_STATES), for /metrics; one round trip per queue. */
  async jobCounts(): Promise<Record<QueueName, Record<JobCountState, number>>> {
    this.assertReady();
    const counts = await Promise.all(QUEUE_NAMES.map((name) => this.get(name).getJobCounts(...JOB_STATES)));
    return Object.fromEntries(
      QUEUE_NAMES.map((name, i) => [
        name,
        Object.fromEntries(JOB_STATES.map((state) => [state, counts[i]?.[state] ?? 0])) as Record<
          JobCountState,
          number
        >,
      ]),
    ) as Record<QueueName, Record<JobCountState, number>>;
  }

  async close(): Promise<void> {
    await Promise.allSettled([...this.#queues.values()].map((q) => q.close()));
    this.#queues.clear();
  }
}
