import cors from '@koa/cors';
import type Router from '@koa/router';
import Koa from 'koa';
import type { Config } from '../shared/config.ts';
import { outboxStats } from '../shared/queue/outbox.ts';
import { queuesDashboard } from './admin/queues-dashboard.ts';
import type { AppContext } from './context.ts';
import { docsRouter } from './http/docs.ts';
import { errorHandler } from './http/error-handler.ts';
import { hydraDocumentationLink } from './http/formats/hydra-link.ts';
import { healthRouter, readinessCheck } from './http/health.ts';
import { inputGuard } from './http/input-guard.ts';
import { createMetrics } from './http/metrics.ts';
import { rateLimit } from './http/rate-limit.ts';
import { requestLog } from './http/request-log.ts';
import { securityHeaders } from './http/security-headers.ts';
import { markWriters } from './reads.ts';
import { type ServiceModule, serviceErrorFormats } from './service-module.ts';
import { SERVICES } from './services.ts';

/** The services this process mounts: those of the build (or given) named in SERVICES. */
export function mountedServices(config: Config, options: AppOptions = {}): ServiceModule[] {
  return (options.services ?? SERVICES).filter((s) => config.SERVICES.includes(s.name));
}

export interface AppOptions {
  /** Service modules to choose from (all shipped ones by default); mounted if named in SERVICES. */
  services?: ServiceModule[];
  isShuttingDown?: () => boolean;
}

/** Builds the Koa app: operator endpoints, cross-cutting middleware, then each enabled service. */
export async function createApp(ctx: AppContext, options: AppOptions = {}): Promise<Koa> {
  const { config } = ctx;
  // Only the TRUST_PROXY hops are believed: ctx.ip is the address the outermost trusted proxy saw
  // (the Nth X-Forwarded-For entry from the right), never the left-most one a client can write.
  const app = new Koa({ proxy: config.trustProxyHops > 0, maxIpsCount: config.trustProxyHops });
  app.silent = true; // errors are logged by errorHandler, once, with the request id

  const readiness = readinessCheck({
    pool: ctx.pool,
    redis: ctx.redis,
    isShuttingDown: options.isShuttingDown ?? (() => false),
  });
  const metrics = createMetrics({
    queueCounts: () => ctx.queues.jobCounts(),
    outbox: () => outboxStats(ctx.db),
    readiness,
    redis: ctx.redis,
    ...(ctx.reads.replica ? { replica: () => ctx.reads.state } : {}),
  });
  const health = healthRouter(ctx, {
    readiness,
    metrics: metrics.registry,
    registry: ctx.registry,
    bodyLimitBytes: config.bodyLimitBytes,
  }).router;
  const docs = docsRouter(ctx).router;

  app.use(requestLog(ctx.logger));
  app.use(metrics.middleware);
  const services = mountedServices(config, options);
  app.use(errorHandler(ctx.logger, serviceErrorFormats(services)));
  // A write's caller reads from the primary for a while (api/reads.ts): set before the answer leaves.
  if (ctx.reads.replica) app.use(markWriters(ctx.reads));
  app.use(hydraDocumentationLink(config.PUBLIC_URL, services));
  app.use(
    securityHeaders({
      // The API serves JSON; the only HTML is /docs and the login pages, which load local assets.
      crossOriginResourcePolicy: { policy: 'cross-origin' },
      // Self-hosters often serve plain HTTP on a LAN; forcing https would break /docs there.
      contentSecurityPolicy: { directives: { upgradeInsecureRequests: null } },
    }),
  );
  app.use(
    cors({
      origin: (c) => {
        const origin = c.get('origin');
        if (config.corsOrigins === '*') return '*';
        return config.corsOrigins.includes(origin) ? origin : '';
      },
      allowHeaders: [
        'Authorization',
        'Content-Type',
        'Accept',
        'Accept-Language',
        'x-api-key',
        'X-Request-Id',
        'Idempotency-Key',
      ],
      // Link: browser clients of the Hydra API (API Platform Admin) find its documentation there.
      exposeHeaders: [
        'Retry-After',
        'X-Request-Id',
        'Location',
        'Link',
        'RateLimit-Limit',
        'RateLimit-Remaining',
        'Idempotent-Replayed',
      ],
      maxAge: 600,
    }),
  );
  app.use(health.routes());
  if (config.RATE_LIMIT_ENABLED) {
    app.use(
      rateLimit(ctx.redis, {
        points: config.RATE_LIMIT_POINTS,
        durationSeconds: config.RATE_LIMIT_DURATION_S,
        keyPrefix: `${config.QUEUE_PREFIX}:rl`,
      }),
    );
  }
  // Text no field may hold (U+0000, unpaired surrogates) is refused here, for every service, in
  // the path, the query and forms; each operation reads and checks its own body (api/http/inputs.ts).
  app.use(inputGuard({ bodyLimitBytes: config.bodyLimitBytes }));
  app.use(docs.routes());
  // An operator endpoint outside the API layer, like /health: staff's queue dashboard (bull-board).
  app.use(queuesDashboard(ctx));

  for (const service of services) {
    for (const router of await service.routers(ctx)) {
      app.use(servedBy(service.name, router.routes()));
      app.use(router.allowedMethods());
    }
  }
  return app;
}

/**
 * Names the service whose router serves the request (ctx.state.service), so the bearer check
 * knows the scope it needs; a request that no route of this router matches goes on unnamed.
 */
function servedBy(name: string, routes: ReturnType<Router['routes']>): Koa.Middleware {
  return (ctx, next) => {
    const outer = ctx.state.service;
    ctx.state.service = name;
    return routes(ctx as Parameters<typeof routes>[0], () => {
      ctx.state.service = outer;
      return next();
    });
  };
}
