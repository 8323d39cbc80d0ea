import { Cluster, type Redis } from 'ioredis';
import { Counter, Gauge, type Registry } from 'prom-client';
import type { RedisClient } from '../../shared/queue/connection.ts';

/**
 * Requests let through because a rate limiter's Redis failed, per limiter (`api`, `login`). One
 * per process, like Node's default metrics: the limiters are built far from the registry, and
 * every registry of the process (one per app) shows the same count.
 */
export const rateLimiterErrors = new Counter({
  name: 'rate_limiter_errors_total',
  help: 'Requests allowed without a rate limit because its Redis failed (unreachable, timeout), per limiter',
  labelNames: ['limiter'] as const,
  registers: [],
});

/** The readiness of this process, as GET /ready computes it. */
export interface Readiness {
  postgres: boolean;
  redis: boolean;
  shuttingDown: boolean;
}

/**
 * The operator gauges beyond the job pipeline (ops/prometheus/alerts.yml): readiness as /ready
 * answers it, rate limiter failures, and Redis memory against its maxmemory (INFO of each master:
 * a Redis Cluster's are labelled by node).
 */
export function registerOpsMetrics(
  registry: Registry,
  sources: { readiness: () => Promise<Readiness>; redis: RedisClient },
  perScrape: <T>(source: () => Promise<T>) => () => Promise<T>,
): void {
  registry.registerMetric(rateLimiterErrors);
  for (const limiter of ['api', 'login']) rateLimiterErrors.inc({ limiter }, 0);
  const readiness = perScrape(sources.readiness);
  new Gauge({
    name: 'api_ready',
    help: 'Whether GET /ready answers 200 on this process: PostgreSQL and Redis answer and it is not shutting down',
    registers: [registry],
    async collect() {
      const r = await readiness().catch(() => undefined);
      this.set(r?.postgres && r.redis && !r.shuttingDown ? 1 : 0);
    },
  });
  new Gauge({
    name: 'api_dependency_up',
    help: 'Whether this process reaches each dependency of /ready (postgres, redis)',
    labelNames: ['dependency'] as const,
    registers: [registry],
    async collect() {
      const r = await readiness().catch(() => undefined);
      this.set({ dependency: 'postgres' }, r?.postgres ? 1 : 0);
      this.set({ dependency: 'redis' }, r?.redis ? 1 : 0);
    },
  });
  const memory = perScrape(() => redisMemory(sources.redis));
  const perNode = (name: string, help: string, pick: (m: RedisMemory) => number) =>
    new Gauge({
      name,
      help,
      labelNames: ['node'] as const,
      registers: [registry],
      async collect() {
        this.reset();
        try {
          for (const m of await memory()) this.set({ node: m.node }, pick(m));
        } catch {
          // Redis down: api_dependency_up says so; no made-up value.
        }
      },
    });
  perNode('redis_memory_used_bytes', 'Memory Redis uses (INFO memory used_memory), per master', (m) => m.used);
  perNode(
    'redis_memory_max_bytes',
    'The maxmemory of Redis (0: no limit), per master; with noeviction a full Redis refuses writes',
    (m) => m.max,
  );
}

interface RedisMemory {
  node: string;
  used: number;
  max: number;
}

async function redisMemory(redis: RedisClient): Promise<RedisMemory[]> {
  const nodes: Redis[] = redis instanceof Cluster ? redis.nodes('master') : [redis];
  return Promise.all(
    nodes.map(async (node) => {
      const info = await node.info('memory');
      const field = (name: string) => Number(new RegExp(`^${name}:(\\d+)`, 'm').exec(info)?.[1] ?? Number.NaN);
      return { node: `${node.options.host}:${node.options.port}`, used: field('used_memory'), max: field('maxmemory') };
    }),
  );
}
