import Router from '@koa/router';
import type { Redis } from 'ioredis';
import type pg from 'pg';
import type { Registry } from 'prom-client';
import { pingDb } from '../../shared/db/database.ts';
import { pingRedis } from '../../shared/queue/connection.ts';

/** Liveness, readiness and metrics: the operator's endpoints. */
export function healthRouter(deps: { pool: pg.Pool; redis: Redis; registry: Registry; isShuttingDown: () => boolean }) {
  const router = new Router();
  router.get('/health', (ctx) => {
    ctx.body = { status: 'ok' };
  });
  router.get('/ready', async (ctx) => {
    const [postgres, redis] = await Promise.all([pingDb(deps.pool), pingRedis(deps.redis)]);
    const ready = postgres && redis && !deps.isShuttingDown();
    ctx.status = ready ? 200 : 503;
    ctx.set('Cache-Control', 'no-store');
    ctx.body = {
      status: ready ? 'ready' : 'unavailable',
      checks: { postgres: postgres ? 'up' : 'down', redis: redis ? 'up' : 'down' },
      ...(deps.isShuttingDown() ? { shuttingDown: true } : {}),
    };
  });
  router.get('/metrics', async (ctx) => {
    ctx.type = deps.registry.contentType;
    ctx.body = await deps.registry.metrics();
  });
  return router;
}
