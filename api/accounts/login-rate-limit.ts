import { createHash } from 'node:crypto';
import type { Context } from 'koa';
import { RateLimiterRedis, RateLimiterRes } from 'rate-limiter-flexible';
import { normalizeEmail } from '../../shared/accounts/accounts.ts';
import type { AppContext } from '../context.ts';
import { tooManyRequests } from '../http/errors.ts';
import { rateLimiterErrors } from '../http/ops-metrics.ts';

/** Counts one sign-in or registration attempt; throws a 429 (with Retry-After) past the limit. */
export type LimitAttempt = (ctx: Context, email: string) => Promise<void>;

/**
 * Attempts per account (normalized email, whatever address they come from),
 * LOGIN_RATE_LIMIT_POINTS per LOGIN_RATE_LIMIT_DURATION_S, and ten times that per client IP
 * (ctx.ip: only the TRUST_PROXY hops are believed, see api/app.ts), kept in Redis so every API
 * process shares them. Keying the account budget on the email alone means many addresses (a
 * botnet) cannot try a password list against one account; the price is that anyone can make an
 * account wait out the (short) window. If Redis is unreachable the attempt is let through (as
 * the API's own rate limits are).
 */
export function loginRateLimit(app: Pick<AppContext, 'redis' | 'config'>): LimitAttempt {
  const { config } = app;
  const perAccount = new RateLimiterRedis({
    storeClient: app.redis,
    keyPrefix: `${config.QUEUE_PREFIX}:login-account`,
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
    const account = normalizeEmail(email);
    try {
      // No email, no account to protect (the attempt fails without a lookup): only the IP counts.
      // The email is hashed: Redis keeps no list of the addresses people tried.
      const accountKey = account && createHash('sha256').update(account).digest('base64url');
      await Promise.all([perIp.consume(ctx.ip), ...(accountKey ? [perAccount.consume(accountKey)] : [])]);
    } catch (rejection) {
      if (rejection instanceof RateLimiterRes) {
        throw tooManyRequests(Math.max(1, Math.ceil(rejection.msBeforeNext / 1000)));
      }
      rateLimiterErrors.inc({ limiter: 'login' });
      ctx.state.log?.warn({ err: rejection }, 'login rate limiter unavailable; attempt allowed');
    }
  };
}
