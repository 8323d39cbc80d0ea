import { Cluster, type ClusterOptions, Redis, type RedisOptions } from 'ioredis';
import type { Config } from '../config.ts';

export type RedisRole = 'producer' | 'worker' | 'client';

/** A connection to one Redis server or to a Redis Cluster (REDIS_CLUSTER_NODES). */
export type RedisClient = Redis | Cluster;

/** Where Redis is: REDIS_CLUSTER_NODES when set, else REDIS_URL. */
export type RedisSettings = Pick<Config, 'REDIS_URL' | 'REDIS_CLUSTER_NODES'>;

const retry = (times: number) => Math.min(times * 200, 2_000);

/**
 * One factory for every Redis connection.
 * - producer: fails fast when Redis is down (no offline queue), so a request never hangs on it;
 *   the outbox keeps the job and the relay retries later.
 * - worker: BullMQ blocking commands need maxRetriesPerRequest null and must wait for Redis.
 * - client: rate limits and health checks; fail fast like a producer.
 * Given the settings, a cluster (REDIS_CLUSTER_NODES) gets an ioredis Cluster with the same
 * behaviour per role; given a URL, one server.
 */
export function createRedis(url: string, role: RedisRole): Redis;
export function createRedis(settings: RedisSettings, role: RedisRole): RedisClient;
export function createRedis(where: string | RedisSettings, role: RedisRole): RedisClient {
  const nodes = typeof where === 'string' ? undefined : where.REDIS_CLUSTER_NODES;
  const redis = nodes?.length
    ? new Cluster(nodes, clusterOptions(role))
    : new Redis(typeof where === 'string' ? where : where.REDIS_URL, serverOptions(role));
  // Connection errors surface on the commands that need Redis; without a listener they crash Node.
  redis.on('error', () => {});
  return redis;
}

/** Where Redis is, and the setting that says so, for messages: `Redis at redis://… (REDIS_URL)`. */
export function redisLocation(settings: RedisSettings): string {
  const nodes = settings.REDIS_CLUSTER_NODES;
  return nodes?.length
    ? `the Redis Cluster at ${nodes.map((n) => `${n.host}:${n.port}`).join(',')} (REDIS_CLUSTER_NODES)`
    : `Redis at ${settings.REDIS_URL} (REDIS_URL)`;
}

function serverOptions(role: RedisRole): RedisOptions {
  const base: RedisOptions = { connectTimeout: 2_000, lazyConnect: false, retryStrategy: retry };
  return role === 'worker'
    ? { ...base, maxRetriesPerRequest: null, enableReadyCheck: false }
    : { ...base, enableOfflineQueue: false, maxRetriesPerRequest: 1 };
}

/**
 * A cluster connection: the same role rules, on each node's connection (redisOptions) and on
 * the cluster's own queue. While a master fails over, a command for its slots is retried
 * (retryDelayOnFailover, retryDelayOnClusterDown) until the replica takes over or the retries
 * run out: a producer's command then fails and the relay tries again later.
 */
function clusterOptions(role: RedisRole): ClusterOptions {
  const base: ClusterOptions = {
    lazyConnect: false,
    clusterRetryStrategy: retry,
    // The failed master's slots move to its replica: learn the new map soon after.
    slotsRefreshInterval: 2_000,
  };
  return role === 'worker'
    ? { ...base, redisOptions: { connectTimeout: 2_000, maxRetriesPerRequest: null } }
    : { ...base, enableOfflineQueue: false, redisOptions: { connectTimeout: 2_000, maxRetriesPerRequest: 1 } };
}

/**
 * The BullMQ prefix of a queue. On a cluster every key a BullMQ script touches must live in one
 * slot: each queue gets its own hash tag, `{<prefix>:<queue>}`, so its keys share a slot and the
 * queues spread over the masters. A prefix that already holds a hash tag is the operator's choice
 * and is kept (one slot for every queue).
 */
export function queuePrefix(prefix: string, queue: string, cluster: boolean): string {
  if (!cluster || /\{[^}]+\}/.test(prefix)) return prefix;
  return `{${prefix}:${queue}}`;
}

/**
 * Whether Redis answers. A cluster must also serve every slot (`cluster_state:ok`): while a
 * failed master has no replica promoted yet, some queues cannot take jobs.
 */
export async function pingRedis(redis: RedisClient, timeoutMs = 1_000): Promise<boolean> {
  if (redis.status !== 'ready') return false;
  try {
    const answer = await Promise.race([
      redis.isCluster ? redis.cluster('INFO') : redis.ping(),
      new Promise<never>((_, reject) => setTimeout(() => reject(new Error('timeout')), timeoutMs).unref()),
    ]);
    return redis.isCluster ? /^cluster_state:ok\s*$/m.test(answer) : answer === 'PONG';
  } catch {
    return false;
  }
}

/** Waits (a bounded time) for a connection to be ready; a Redis outage must not block a start. */
export async function waitForReady(redis: RedisClient, timeoutMs = 2_000): Promise<boolean> {
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
