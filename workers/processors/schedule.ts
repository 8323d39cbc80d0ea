import type { Queue } from 'bullmq';
import { defaultJobOptions } from '../../shared/queue/queues.ts';

/**
 * Creates or updates the job scheduler `id` of a queue (idempotent: every worker process running
 * the queue may do it at start): job `name`, asked by `schedule`, every `everySeconds`, the first
 * at once. Its jobs keep the default retries; the last 100 completed and failed are kept.
 */
export async function upsertSchedule(queue: Queue, id: string, name: string, everySeconds: number): Promise<void> {
  await queue.upsertJobScheduler(
    id,
    { every: everySeconds * 1000 },
    {
      name,
      data: { requestedBy: 'schedule' },
      opts: {
        attempts: defaultJobOptions.attempts,
        backoff: defaultJobOptions.backoff,
        removeOnComplete: { count: 100 },
        removeOnFail: { count: 100 },
      },
    },
  );
}
