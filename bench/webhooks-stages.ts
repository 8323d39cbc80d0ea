import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { fmt, quantile } from './stats.ts';
import type { Arrival } from './webhooks-receiver.ts';

/**
 * Where the time from a POST's answer to a delivery's arrival goes, from the jobs BullMQ keeps
 * once completed (their added, started and finished times): the relay of the event's job, its
 * wait in the queue, the fan-out (until the delivery's job is added), the delivery job's wait,
 * and its run until the receiver has the request.
 */

interface Times {
  timestamp: number;
  processedOn?: number | undefined;
}

export interface StageSummary {
  /** Deliveries whose two jobs were still in Redis. */
  matched: number;
  /** p50 and p95 of each stage, ms. */
  stages: Record<string, { p50: number; p95: number }>;
}

/**
 * `answeredAt`: each activity IRI's POST answer, in performance.now() of this process, as the
 * arrivals' `at`.
 */
export async function measureStages(
  prefix: string,
  arrivals: readonly Arrival[],
  answeredAt: ReadonlyMap<string, number>,
): Promise<StageSummary> {
  const connection = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', { maxRetriesPerRequest: null });
  const queue = new Queue('webhooks', { connection, prefix });
  try {
    const jobs = await queue.getJobs(['completed'], 0, -1);
    const events = new Map<string, Times>();
    const deliveries = new Map<string, Times>();
    for (const job of jobs) {
      if (!job) continue;
      if (job.name === 'event') events.set((job.data as { eventId: string }).eventId, job);
      else if (job.name === 'deliver') deliveries.set((job.data as { deliveryId: string }).deliveryId, job);
    }
    const epoch = (at: number) => performance.timeOrigin + at;
    const columns: Record<string, number[]> = {
      'commit → event job added': [],
      'event job waits': [],
      'fan-out (to delivery job added)': [],
      'delivery job waits': [],
      'delivery job → receiver': [],
    };
    let matched = 0;
    for (const a of arrivals) {
      const body = JSON.parse(a.body) as { id: string; resource: string };
      const answered = answeredAt.get(body.resource);
      const event = events.get(body.id);
      const delivery = deliveries.get(a.id);
      if (answered === undefined || !event?.processedOn || !delivery?.processedOn) continue;
      matched++;
      const values = [
        event.timestamp - epoch(answered),
        event.processedOn - event.timestamp,
        delivery.timestamp - event.processedOn,
        delivery.processedOn - delivery.timestamp,
        epoch(a.at) - delivery.processedOn,
      ];
      for (const [i, column] of Object.values(columns).entries()) column.push(values[i] ?? Number.NaN);
    }
    const stages = Object.fromEntries(
      Object.entries(columns).map(([name, column]) => {
        const sorted = column.sort((x, y) => x - y);
        return [name, { p50: quantile(sorted, 0.5), p95: quantile(sorted, 0.95) }];
      }),
    );
    return { matched, stages };
  } finally {
    await queue.close();
    connection.disconnect();
  }
}

export function stagesText(summary: StageSummary): string {
  const lines = Object.entries(summary.stages).map(
    ([name, s]) => `  ${name.padEnd(34)} p50 ${fmt(s.p50, 0).padStart(6)} ms  p95 ${fmt(s.p95, 0).padStart(6)} ms`,
  );
  return [`stages (${summary.matched} deliveries whose jobs Redis still kept):`, ...lines].join('\n');
}
