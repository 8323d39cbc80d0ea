import test from 'ava';
import { z } from 'zod';
import { addOperation } from '../api/http/operation.ts';
import { ApiRouter } from '../api/http/route.ts';
import type { ServiceModule } from '../api/service-module.ts';
import { freePort, startTestApi } from './helpers/app.ts';

/** Resolved when the slow route's handler starts: the request is then in flight on the server. */
let slowStarted: () => void = () => {};

const slowService: ServiceModule = {
  name: 'places',
  routers: (ctx) => {
    const api = new ApiRouter({
      prefix: '/api/v1',
      errorFormat: 'problem',
      registry: ctx.registry,
      bodyLimitBytes: ctx.config.bodyLimitBytes,
      tag: 'test',
    });
    addOperation(api, ctx, {
      method: 'get',
      path: '/slow',
      access: 'public',
      success: { 200: { description: 'ok' } },
      spec: {
        summary: 'Answers after 300 ms',
        query: z.object({}),
        handler: async () => {
          slowStarted();
          await new Promise((r) => setTimeout(r, 300));
          return { done: true };
        },
      },
    });
    return [api.router];
  },
};

test('rate limits per IP answer 429 with Retry-After', async (t) => {
  const ctx = await startTestApi(t, { env: { RATE_LIMIT_POINTS: '3', RATE_LIMIT_DURATION_S: '30' } });
  const statuses: number[] = [];
  for (let i = 0; i < 4; i++) statuses.push((await ctx.fetch('/api/v1/nothing')).status);
  t.deepEqual(statuses, [404, 404, 404, 429]);
  const limited = await ctx.fetch('/api/v1/nothing');
  t.is(limited.status, 429);
  const retryAfter = Number(limited.headers.get('retry-after'));
  t.true(retryAfter >= 1 && retryAfter <= 30);
  t.like(await limited.json(), { status: 429, title: 'Too Many Requests' });
  // Operator endpoints are never limited.
  t.is((await ctx.fetch('/health')).status, 200);
});

test('/ready answers 503 naming Redis when Redis is unreachable', async (t) => {
  const port = await freePort();
  const ctx = await startTestApi(t, { env: { REDIS_URL: `redis://127.0.0.1:${port}`, RATE_LIMIT_ENABLED: 'false' } });
  const res = await ctx.fetch('/ready');
  t.is(res.status, 503);
  t.deepEqual(await res.json(), { status: 'unavailable', checks: { postgres: 'up', redis: 'down' } });
  t.is((await ctx.fetch('/health')).status, 200, 'still alive');
});

test('shutdown stops accepting, drains requests in flight, then closes', async (t) => {
  const ctx = await startTestApi(null, { services: [slowService] });
  t.teardown(() => ctx.database.drop());
  const started = new Promise<void>((resolve) => {
    slowStarted = resolve;
  });
  const inFlight = ctx.fetch('/api/v1/slow');
  // Close once the server is handling it (a fixed delay loses the race on a loaded machine).
  await started;
  const closing = ctx.api.close();
  await new Promise((r) => setTimeout(r, 20));
  await t.throwsAsync(() => fetch(`${ctx.url}/health`), undefined, 'new connections refused');
  const res = await inFlight;
  t.is(res.status, 200);
  t.deepEqual(await res.json(), { done: true });
  await closing;
});
