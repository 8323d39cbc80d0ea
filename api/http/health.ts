import type pg from 'pg';
import type { Registry } from 'prom-client';
import { z } from 'zod';
import { pingDb } from '../../shared/db/database.ts';
import { pingRedis, type RedisClient } from '../../shared/queue/connection.ts';
import type { AppContext } from '../context.ts';
import type { OpenApiRegistry } from './openapi.ts';
import { addOperation } from './operation.ts';
import type { Readiness } from './ops-metrics.ts';
import { ApiRouter } from './route.ts';

const readiness = z
  .object({
    status: z.enum(['ready', 'unavailable']),
    checks: z.object({ postgres: z.enum(['up', 'down']), redis: z.enum(['up', 'down']) }),
    shuttingDown: z.literal(true).optional(),
  })
  .meta({ id: 'Readiness' });

/** What GET /ready checks (and the api_ready gauge reports). */
export function readinessCheck(deps: {
  pool: pg.Pool;
  redis: RedisClient;
  isShuttingDown: () => boolean;
}): () => Promise<Readiness> {
  return async () => {
    const [postgres, redis] = await Promise.all([pingDb(deps.pool), pingRedis(deps.redis)]);
    return { postgres, redis, shuttingDown: deps.isShuttingDown() };
  };
}

/** Liveness, readiness and metrics: the operator's endpoints (docs/operations.md). */
export function healthRouter(
  app: Pick<AppContext, 'verifier' | 'db' | 'config'>,
  deps: {
    readiness: () => Promise<Readiness>;
    metrics: Registry;
    registry: OpenApiRegistry;
    bodyLimitBytes: number;
  },
): ApiRouter {
  const router = new ApiRouter({
    prefix: '',
    errorFormat: 'problem',
    registry: deps.registry,
    bodyLimitBytes: deps.bodyLimitBytes,
    tag: 'operations',
  });
  addOperation(router, app, {
    method: 'get',
    path: '/health',
    access: 'public',
    success: { 200: { description: 'Alive', schema: z.object({ status: z.literal('ok') }) } },
    spec: { summary: 'Liveness: the process answers', handler: () => ({ status: 'ok' }) },
  });
  addOperation(router, app, {
    method: 'get',
    path: '/ready',
    access: 'public',
    success: { 200: { description: 'Ready', schema: readiness } },
    spec: {
      summary: 'Readiness: PostgreSQL and Redis answer and the process is not shutting down',
      responses: { 503: { description: 'Not ready: what is down', schema: readiness } },
      handler: async ({ ctx }) => {
        const { postgres, redis, shuttingDown } = await deps.readiness();
        const ready = postgres && redis && !shuttingDown;
        ctx.status = ready ? 200 : 503;
        ctx.set('Cache-Control', 'no-store');
        return {
          status: ready ? 'ready' : 'unavailable',
          checks: { postgres: postgres ? 'up' : 'down', redis: redis ? 'up' : 'down' },
          ...(shuttingDown ? { shuttingDown: true } : {}),
        };
      },
    },
  });
  addOperation(router, app, {
    method: 'get',
    path: '/metrics',
    access: 'public',
    success: { 200: { description: 'The text exposition format', alternates: { 'text/plain': undefined } } },
    writesResponse: true,
    spec: {
      summary: 'Prometheus metrics of this API process (queues and outbox included)',
      handler: async ({ ctx }) => {
        ctx.type = deps.metrics.contentType;
        ctx.body = await deps.metrics.metrics();
      },
    },
  });
  return router;
}
