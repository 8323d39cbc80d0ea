import { DelayedError, type Job } from 'bullmq';
import { ConfigError } from '../shared/config.ts';
import { runWithRequestContext } from '../shared/observability/request-context.ts';
import { tracing } from '../shared/observability/tracing.ts';
import { decodeJobMeta } from '../shared/queue/job-meta.ts';
import { hasOutboxRow, type JobName, type JobQueue, jobNames } from '../shared/queue/jobs.ts';
import { markOutboxDone } from '../shared/queue/outbox.ts';
import { outboxJobId } from '../shared/queue/outbox-epoch.ts';
import type { WorkerMetrics } from './metrics.ts';
import type { JobDeps, Processors, QueueProcessor, WorkerDeps } from './processor.ts';

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

/**
 * The BullMQ processor function of one queue: hands each job to the handler of its name, with
 * its done mark (docs/operations.md, "How a job travels"). A handler whose effect is a write to
 * PostgreSQL runs the mark in that write's transaction; for the others (and the runs that find
 * nothing to do) the worker marks the job once the handler returns: a crash between the two
 * leaves the row open, the job runs again, and every handler is idempotent
 * (workers/processor.ts). A mark that fails fails the attempt, which BullMQ retries.
 */
export function dispatch<Q extends JobQueue>(
  queue: Q,
  processor: QueueProcessor<Q>,
  deps: WorkerDeps,
  metrics?: WorkerMetrics,
): (job: Job) => Promise<unknown> {
  return async (job) => {
    // hasOwn: a job named like an Object.prototype member ("constructor") is unknown too.
    if (!Object.hasOwn(processor, job.name)) {
      // A plain Error, retried: during a rolling deploy a newer producer's job can reach an older
      // worker first, and a retry gives a newer worker the chance to take it.
      throw new Error(`queue ${queue} has no job "${job.name}" (its jobs: ${jobNames(queue).join(', ')})`);
    }
    const handler = processor[job.name as JobName<Q>] as (job: Job, deps: JobDeps) => Promise<unknown>;
    const started = performance.now();
    // The request that caused the job: its id on every line the handler logs, its context (trace
    // id included) for those lines and the jobs the handler writes in turn, its trace continued
    // by the job's span. A job object built by hand (tests, tools) may have no opts.
    const meta = decodeJobMeta(job.opts?.telemetry?.metadata);
    const requestId = meta?.requestId;
    const logger = requestId === undefined ? deps.logger : deps.logger.child({ reqId: requestId });
    // Scheduled jobs have no outbox row: the update finds none. Jobs added without one skip it.
    const markDone: JobDeps['markDone'] = (trx) =>
      job.id === undefined || !hasOutboxRow(queue, job.name)
        ? Promise.resolve()
        : markOutboxDone(trx, queue, outboxJobId(job.id));
    // The done mark and line in the span too: the line carries the job's span id.
    const run = () =>
      tracing().inSpan(
        `${queue} ${job.name}`,
        meta?.traceparent,
        { 'messaging.system': 'bullmq', 'messaging.destination.name': queue, 'messaging.message.id': job.id ?? '' },
        async () => {
          // The payload was typed when the outbox row was written (shared/queue/jobs.ts `job()`).
          const result = await handler(job, { ...deps, logger, markDone });
          // Rows the handler's transaction marked are not touched again.
          await markDone(deps.db);
          const seconds = (performance.now() - started) / 1000;
          metrics?.jobFinished(queue, job.name, 'completed', seconds);
          // One line per job, as per request: a search by request or trace id finds the jobs even
          // when their handlers log nothing.
          logger.info({ queue, job: job.name, jobId: job.id, ms: Math.round(seconds * 10_000) / 10 }, 'job done');
          return result;
        },
      );
    try {
      return await (meta === undefined ? run() : runWithRequestContext(meta, run));
    } catch (error) {
      // A job that moved itself back to `delayed` (a batch job waiting for its work) did not fail.
      if (!(error instanceof DelayedError))
        metrics?.jobFinished(queue, job.name, 'failed', (performance.now() - started) / 1000);
      throw error;
    }
  };
}
