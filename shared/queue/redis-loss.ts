import type { QueueName, QueueSet } from './queues.ts';

/**
 * Noticing at once that Redis lost its data (FLUSHDB, a restart without persistence, a failover
 * to an empty replica), instead of OUTBOX_RECONCILE_AFTER_S later (docs/operations.md, "Redis
 * lost its data"). Each queue has a marker key, in the queue's own hash slot, that the relays
 * set and look for: a marker gone means the queue's jobs may be gone with it, and every open row
 * of the queue is looked for in Redis at once.
 */

export function markerKey(queues: QueueSet, queue: QueueName): string {
  return `${queues.prefixOf(queue)}:${queue}:outbox-marker`;
}

/**
 * The queues whose marker is missing, marker set again: for each, the caller reconciles.
 * Set before the reconciling, so a loss during it is seen at the next look.
 */
export async function queuesWithoutMarker(queues: QueueSet, names: readonly QueueName[]): Promise<QueueName[]> {
  queues.assertReady();
  const found = await Promise.all(names.map((q) => queues.connection.exists(markerKey(queues, q))));
  const missing = names.filter((_, i) => found[i] === 0);
  await Promise.all(missing.map((q) => queues.connection.set(markerKey(queues, q), new Date().toISOString())));
  return missing;
}
