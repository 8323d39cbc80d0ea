import type { Job } from 'bullmq';
import { ConfigError } from '../shared/config.ts';
import { type JobName, type JobQueue, jobNames } from '../shared/queue/jobs.ts';
import type { Processors, QueueProcessor, WorkerDeps } from './processor.ts';

/**
 * Refuses to start a queue that could not handle all its jobs: every queue to run needs a
 * processor with a handler for each job name of shared/queue/jobs.ts, and no handler for a name
 * the map lacks (a typo would otherwise never run). The types already require this; the check
 * covers processors assembled at run time (tests, casts). Lists every problem at once.
 */
export function checkProcessors(queues: readonly JobQueue[], processors: Partial<Processors>): void {
  const problems: string[] = [];
  for (const queue of queues) {
    const processor = processors[queue];
    if (!processor) {
      problems.push(`  ${queue}: no processor (add it to workers/processors/index.ts)`);
      continue;
    }
    const names: readonly string[] = jobNames(queue);
    for (const name of names)
      if (!Object.hasOwn(processor, name) || typeof (processor as Record<string, unknown>)[name] !== 'function')
        problems.push(`  ${queue}: no handler for job "${name}"`);
    for (const name of Object.keys(processor))
      if (!names.includes(name)) problems.push(`  ${queue}: handler for "${name}", which is not a job of this queue`);
  }
  if (problems.length > 0) throw new ConfigError(`Workers cannot start:\n${problems.join('\n')}`);
}

/** The BullMQ processor function of one queue: hands each job to the handler of its name. */
export function dispatch<Q extends JobQueue>(
  queue: Q,
  processor: QueueProcessor<Q>,
  deps: WorkerDeps,
): (job: Job) => Promise<unknown> {
  return async (job) => {
    // hasOwn: a job named like an Object.prototype member ("constructor") is unknown too.
    if (!Object.hasOwn(processor, job.name)) {
      // A plain Error, retried: during a rolling deploy a newer producer's job can reach an older
      // worker first, and a retry gives a newer worker the chance to take it.
      throw new Error(`queue ${queue} has no job "${job.name}" (its jobs: ${jobNames(queue).join(', ')})`);
    }
    const handler = processor[job.name as JobName<Q>] as (job: Job, deps: WorkerDeps) => Promise<unknown>;
    // The payload was typed when the outbox row was written (shared/queue/jobs.ts `job()`).
    return handler(job, deps);
  };
}
