import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';
import type { ReconcileResult } from '../shared/queue/outbox.ts';
import type { RedisDurabilityProblem } from '../shared/queue/redis-durability.ts';
import { listenAddress } from '../shared/runtime/listen-address.ts';

/**
 * What only the process that runs the jobs knows: how long they take, which stalled, what the
 * reconciler relayed again. Served at /metrics on WORKER_METRICS_PORT (docs/operations.md); the
 * queue counts and the outbox lags are the API's (any process reads them from Redis and PostgreSQL).
 */
export class WorkerMetrics {
  readonly registry = new Registry();
  readonly #durations = new Histogram({
    name: 'job_duration_seconds',
    help: 'Time a worker spent on one attempt of a job, by queue, job name and outcome (completed, failed)',
    labelNames: ['queue', 'name', 'outcome'] as const,
    // From a thumbnail to a large export.
    buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600],
    registers: [this.registry],
  });
  readonly #stalled = new Counter({
    name: 'jobs_stalled_total',
    help: 'Jobs this worker found stalled (their worker stopped renewing the lock) and put back in line, by queue',
    labelNames: ['queue'] as const,
    registers: [this.registry],
  });
  readonly #failed = new Counter({
    name: 'jobs_failed_total',
    help: 'Failed job attempts by queue; final="true" when no attempt is left',
    labelNames: ['queue', 'final'] as const,
    registers: [this.registry],
  });
  readonly #reconciled = new Counter({
    name: 'outbox_reconciled_total',
    help: 'Outbox rows the reconciler settled, by outcome: relayed (Redis had lost the job), rerun (Redis held it completed, this database did not: run again under a new id), failed',
    labelNames: ['outcome'] as const,
    registers: [this.registry],
  });

  readonly #redisLoss = new Counter({
    name: 'redis_data_loss_detected_total',
    help: "Times this process found a queue's marker key gone from Redis (its data lost) and reconciled the queue at once, by queue",
    labelNames: ['queue'] as const,
    registers: [this.registry],
  });
  readonly #durability = new Gauge({
    name: 'redis_durability_warning',
    help: 'Redis settings the queues need, checked at start: 1 when a server runs without AOF (problem="aof_off") or evicts keys (problem="eviction_policy")',
    labelNames: ['problem'] as const,
    registers: [this.registry],
  });

  constructor() {
    collectDefaultMetrics({ register: this.registry });
    // Zero series from the start, so rate() and increase() see the first event.
    for (const outcome of ['relayed', 'rerun', 'failed']) this.#reconciled.inc({ outcome }, 0);
    for (const problem of ['aof_off', 'eviction_policy']) this.#durability.set({ problem }, 0);
  }

  redisLoss(queues: readonly string[], result: ReconcileResult): void {
    for (const queue of queues) this.#redisLoss.inc({ queue });
    this.reconciled(result);
  }

  redisDurability(problems: readonly RedisDurabilityProblem[]): void {
    for (const { problem } of problems) this.#durability.set({ problem }, 1);
  }

  /** Starts the series of a queue at zero. */
  watch(queue: string): void {
    this.#redisLoss.inc({ queue }, 0);
    this.#stalled.inc({ queue }, 0);
    for (const final of ['true', 'false']) this.#failed.inc({ queue, final }, 0);
  }

  jobFinished(queue: string, name: string, outcome: 'completed' | 'failed', seconds: number): void {
    this.#durations.observe({ queue, name, outcome }, seconds);
  }

  jobStalled(queue: string): void {
    this.#stalled.inc({ queue });
  }

  jobFailed(queue: string, final: boolean): void {
    this.#failed.inc({ queue, final: String(final) });
  }

  reconciled(result: ReconcileResult): void {
    this.#reconciled.inc({ outcome: 'relayed' }, result.relayed);
    this.#reconciled.inc({ outcome: 'rerun' }, result.rerun);
    this.#reconciled.inc({ outcome: 'failed' }, result.failed);
  }

  /**
   * Serves GET /metrics on host:port (0: any free port); resolves with the server, the address it
   * listens on (`0.0.0.0:9464`: every interface) and a URL of it from this host.
   */
  async serve(host: string, port: number): Promise<{ server: Server; url: string; listen: string }> {
    const server = createServer((req, res) => {
      if (req.method !== 'GET' || req.url?.split('?')[0] !== '/metrics') {
        res.writeHead(404).end();
        return;
      }
      this.registry.metrics().then(
        (text) => res.writeHead(200, { 'content-type': this.registry.contentType }).end(text),
        () => res.writeHead(500).end(),
      );
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, host, () => resolve());
    });
    const { listen, origin } = listenAddress(host, server.address() as AddressInfo);
    return { server, url: `${origin}/metrics`, listen };
  }
}
