import { createHash } from 'node:crypto';
import type { Middleware } from 'koa';
import { RateLimiterRedis, RateLimiterRes } from 'rate-limiter-flexible';
import type { RedisClient } from '../../shared/queue/connection.ts';
import { bearerToken } from './auth.ts';
import { tooManyRequests } from './errors.ts';
import { rateLimiterErrors } from './ops-metrics.ts';

export interface RateLimitOptions {
  points: number;
  durationSeconds: number;
  keyPrefix: string;
}

/**
 * Fixed-window limits in Redis, shared by every API process: one budget per client IP and one
 * per client credential (API key or bearer token, hashed). Both must have points left.
 * The client IP is ctx.ip, which believes only the TRUST_PROXY hops (api/app.ts sets Koa's
 * maxIpsCount): behind N proxies it is the N-th X-Forwarded-For entry from the right, so a client
 * cannot pick its own budget by writing the header.
 * If Redis is unreachable the request goes through: losing rate limits beats losing the API.
 * Each budget is one key, so its commands work on a Redis Cluster as on one server.
 */
export function rateLimit(redis: RedisClient, options: RateLimitOptions): Middleware {
  const byIp = new RateLimiterRedis({
    storeClient: redis,
    keyPrefix: `${options.keyPrefix}:ip`,
    points: options.points,
    duration: options.durationSeconds,
  });
  const byClient = new RateLimiterRedis({
    storeClient: redis,
    keyPrefix: `${options.keyPrefix}:client`,
    points: options.points,
    duration: options.durationSeconds,
  });
  return async (ctx, next) => {
    const credential = ctx.get('x-api-key') || bearerToken(ctx.get('authorization'));
    try {
      const results = [byIp.consume(ctx.ip)];
      if (credential) results.push(byClient.consume(createHash('sha256').update(credential).digest('base64url')));
      const consumed = await Promise.all(results);
      const tightest = consumed.reduce((a, b) => (a.remainingPoints <= b.remainingPoints ? a : b));
      ctx.set('RateLimit-Limit', String(options.points));
      ctx.set('RateLimit-Remaining', String(tightest.remainingPoints));
    } catch (rejection) {
      if (rejection instanceof RateLimiterRes)
        throw tooManyRequests(Math.max(1, Math.ceil(rejection.msBeforeNext / 1000)));
      rateLimiterErrors.inc({ limiter: 'api' });
      ctx.state.log?.warn({ err: rejection }, 'rate limiter unavailable; request allowed');
    }
    await next();
  };
}
