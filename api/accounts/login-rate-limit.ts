import type { Context } from 'koa';
import { RateLimiterRedis, RateLimiterRes } from 'rate-limiter-flexible';
import { normalizeEmail } from '../../shared/accounts/accounts.ts';
import type { AppContext } from '../context.ts';
import { tooManyRequests } from '../http/errors.ts';

/** Counts one sign-in or registration attempt; throws a 429 (with Retry-After) past the limit. */
export type LimitAttempt = (ctx: Context, email: string) => Promise<void>;

/**
 * Attempts per (IP, email), LOGIN_RATE_LIMIT_POINTS per LOGIN_RATE_LIMIT_DURATION_S, and ten
 * times that per IP, kept in Redis so every API process shares them. If Redis is unreachable
 * the attempt is let through (as the API's own rate limits are).
 */
export function loginRateLimit(app: Pick<AppContext, 'redis' | 'config'>): LimitAttempt {
  const { config } = app;
  const perAccount = new RateLimiterRedis({
    storeClient: app.redis,
    keyPrefix: `${config.QUEUE_PREFIX}:login`,
    points: config.LOGIN_RATE_LIMIT_POINTS,
    duration: config.LOGIN_RATE_LIMIT_DURATION_S,
  });
  const perIp = new RateLimiterRedis({
    storeClient: app.redis,
    keyPrefix: `${config.QUEUE_PREFIX}:login-ip`,
    points: config.LOGIN_RATE_LIMIT_POINTS * 10,
    duration: config.LOGIN_RATE_LIMIT_DURATION_S,
  });
  return async (ctx, email) => {
    try {
      await Promise.all([perAccount.consume(`${ctx.ip}:${normalizeEmail(email)}`), perIp.consume(ctx.ip)]);
    } catch (rejection) {
      if (rejection instanceof RateLimiterRes) {
        throw tooManyRequests(Math.max(1, Math.ceil(rejection.msBeforeNext / 1000)));
      }
      ctx.state.log?.warn({ err: rejection }, 'login rate limiter unavailable; attempt allowed');
    }
  };
}
