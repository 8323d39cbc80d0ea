import type { Middleware } from 'koa';
import { collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';
import type { ReplicaState } from '../../shared/db/read-router.ts';
import type { RedisClient } from '../../shared/queue/connection.ts';
import type { OutboxStats, QueueOutboxStats } from '../../shared/queue/outbox.ts';
import type { JobCountState } from '../../shared/queue/queues.ts';
import { type Readiness, registerOpsMetrics } from './ops-metrics.ts';

export interface MetricsSources {
  /** Jobs per queue and state, read from Redis. */
  queueCounts: () => Promise<Record<string, Record<JobCountState, number>>>;
  /** The outbox backlog and lags, read from PostgreSQL. */
  outbox: () => Promise<OutboxStats>;
  /** This process's read replica router, when DATABASE_READ_URL names one (its last check). */
  replica?: () => ReplicaState;
  /** What GET /ready checks. */
  readiness: () => Promise<Readiness>;
  /** The Redis of queues and rate limits (its memory, by INFO). */
  redis: RedisClient;
}

/**
 * Prometheus metrics of the API process: request durations by route template, the jobs of every
 * queue by state (shared by all processes: any API process answers for the whole system) and the
 * outbox lags. Job durations and stalls are counted where jobs run: the workers' own /metrics
 * (WORKER_METRICS_PORT, workers/metrics.ts). Names are listed in docs/operations.md and used by
 * ops/prometheus/alerts.yml.
 */
export function createMetrics(sources: MetricsSources) {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const requests = new Histogram({
    name: 'http_request_duration_seconds',
    help: 'HTTP request duration by method, route template and status',
    labelNames: ['method', 'route', 'status'] as const,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    registers: [registry],
  });
  // Several gauges read one answer: one Redis and one SQL round trip per scrape.
  const queueCounts = oncePerScrape(sources.queueCounts);
  const outbox = oncePerScrape(sources.outbox);
  new Gauge({
    name: 'queue_jobs',
    help: 'Jobs per BullMQ queue and state (waiting, active, delayed, completed, failed; finished jobs are trimmed after a while)',
    labelNames: ['queue', 'state'] as const,
    registers: [registry],
    async collect() {
      this.reset();
      try {
        for (const [queue, states] of Object.entries(await queueCounts()))
          for (const [state, n] of Object.entries(states)) this.set({ queue, state }, n);
      } catch {
        // Redis down: /ready says so; the scrape still answers, without these series.
      }
    },
  });
  new Gauge({
    name: 'queue_depth',
    help: 'Jobs waiting, active or delayed per BullMQ queue',
    labelNames: ['queue'] as const,
    registers: [registry],
    async collect() {
      this.reset();
      try {
        for (const [queue, c] of Object.entries(await queueCounts()))
          this.set({ queue }, c.waiting + c.active + c.delayed);
      } catch {}
    },
  });
  new Gauge({
    name: 'outbox_pending',
    help: 'Outbox rows not yet relayed to the queues',
    registers: [registry],
    async collect() {
      try {
        this.set((await outbox()).pending);
      } catch {
        // PostgreSQL down: no value rather than a made-up one.
        this.reset();
      }
    },
  });
  const perQueue = (name: string, help: string, pick: (s: QueueOutboxStats) => number) =>
    new Gauge({
      name,
      help,
      labelNames: ['queue'] as const,
      registers: [registry],
      async collect() {
        this.reset();
        try {
          for (const [queue, stats] of Object.entries((await outbox()).queues)) this.set({ queue }, pick(stats));
        } catch {}
      },
    });
  perQueue(
    'outbox_relay_lag_seconds',
    'Age of the oldest outbox row not yet relayed to Redis, per queue (0: none waits)',
    (s) => s.relayLagSeconds,
  );
  perQueue(
    'outbox_lag_seconds',
    'Age of the oldest outbox row whose job has not completed, per queue (0: none); rows of jobs failed for good are not counted',
    (s) => s.outboxLagSeconds,
  );
  perQueue(
    'outbox_failed_rows',
    'Outbox rows whose job failed its last attempt and has not completed since',
    (s) => s.failed,
  );

  registerOpsMetrics(registry, sources, oncePerScrape);

  const { replica } = sources;
  if (replica) {
    // Per process: each API process checks the replica itself and may see it otherwise.
    new Gauge({
      name: 'read_replica_in_use',
      help: 'Whether this API process sends its reads to the replica of DATABASE_READ_URL (1) or skips it (0)',
      registers: [registry],
      collect() {
        this.set(replica().used ? 1 : 0);
      },
    });
    new Gauge({
      name: 'read_replica_lag_seconds',
      help: "Upper bound of the replica's delay at this process's last check (NaN when unknown: unreachable, or not a standby)",
      registers: [registry],
      collect() {
        // NaN, not 0: an unlabelled gauge is always exported, and 0 would read as "caught up".
        const { lagMs } = replica();
        this.set(lagMs === undefined ? Number.NaN : lagMs / 1000);
      },
    });
  }

  const middleware: Middleware = async (ctx, next) => {
    // observe() rather than startTimer(): the same seconds, without a closure and two label copies per request.
    const start = process.hrtime.bigint();
    try {
      await next();
    } finally {
      // The route template (not the raw path) keeps label cardinality bounded.
      const route = (ctx as { _matchedRoute?: string })._matchedRoute ?? 'unmatched';
      const seconds = Number(process.hrtime.bigint() - start) / 1e9;
      requests.observe({ method: ctx.method, route: String(route), status: String(ctx.status) }, seconds);
    }
  };
  return { registry, middleware };
}

/**
 * Shares one call (bounded by a timeout) between the gauges of a scrape: prom-client collects
 * them concurrently, so they all ask while the first call is in flight; the next scrape calls again.
 */
function oncePerScrape<T>(source: () => Promise<T>): () => Promise<T> {
  let inFlight: Promise<T> | undefined;
  return () => {
    if (!inFlight) {
      const call = withTimeout(source(), 2_000);
      inFlight = call;
      const clear = () => {
        if (inFlight === call) inFlight = undefined;
      };
      call.then(clear, clear);
    }
    return inFlight;
  };
}

function withTimeout<T>(p: Promise<T>, ms: number): Promise<T> {
  return Promise.race([
    p,
    new Promise<never>((_, reject) => setTimeout(() => reject(new Error('timeout')), ms).unref()),
  ]);
}
