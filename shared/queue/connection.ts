import { Redis, type RedisOptions } from 'ioredis';

export type RedisRole = 'producer' | 'worker' | 'client';

/**
 * One factory for every Redis connection.
 * - producer: fails fast when Redis is down (no offline queue), so a request never hangs on it;
 *   the outbox keeps the job and the relay retries later.
 * - worker: BullMQ blocking commands need maxRetriesPerRequest null and must wait for Redis.
 * - client: rate limits and health checks; fail fast like a producer.
 */
export function createRedis(url: string, role: RedisRole): Redis {
  const base: RedisOptions = {
    connectTimeout: 2_000,
    lazyConnect: false,
    retryStrategy: (times) => Math.min(times * 200, 2_000),
  };
  const options: RedisOptions =
    role === 'worker'
      ? { ...base, maxRetriesPerRequest: null, enableReadyCheck: false }
      : { ...base, enableOfflineQueue: false, maxRetriesPerRequest: 1 };
  const redis = new Redis(url, options);
  // Connection errors surface on the commands that need Redis; without a listener they crash Node.
  redis.on('error', () => {});
  return redis;
}

export async function pingRedis(redis: Redis, timeoutMs = 1_000): Promise<boolean> {
  if (redis.status !== 'ready') return false;
  try {
    const pong = await Promise.race([
      redis.ping(),
      new Promise<never>((_, reject) => setTimeout(() => reject(new Error('timeout')), timeoutMs).unref()),
    ]);
    return pong === 'PONG';
  } catch {
    return false;
  }
}

/** Waits (a bounded time) for a connection to be ready; a Redis outage must not block a start. */
export async function waitForReady(redis: Redis, timeoutMs = 2_000): Promise<boolean> {
  if (redis.status === 'ready') return true;
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      redis.off('ready', onReady);
      resolve(false);
    }, timeoutMs);
    timer.unref();
    const onReady = () => {
      clearTimeout(timer);
      resolve(true);
    };
    redis.once('ready', onReady);
  });
}
