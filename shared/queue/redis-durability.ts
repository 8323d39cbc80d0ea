import { Cluster, type Redis } from 'ioredis';
import type { RedisClient } from './connection.ts';

/**
 * What the docs require of the Redis that holds the queues (docs/operations.md, "Redis lost its
 * data"): AOF on, so a restart keeps the jobs, and `maxmemory-policy noeviction`, so a full
 * Redis refuses writes (the outbox keeps them) rather than dropping jobs. Read from INFO, which
 * managed Redis services allow where CONFIG GET is often disabled.
 */
export interface RedisDurabilityProblem {
  /** `aof_off` or `eviction_policy`: the metric's label. */
  problem: 'aof_off' | 'eviction_policy';
  /** The server (host:port) concerned. */
  node: string;
  message: string;
}

/** One INFO answer as fields. */
function fields(info: string): Map<string, string> {
  const map = new Map<string, string>();
  for (const line of info.split('\r\n')) {
    const at = line.indexOf(':');
    if (at > 0 && !line.startsWith('#')) map.set(line.slice(0, at), line.slice(at + 1));
  }
  return map;
}

/** The problems of one server's INFO (persistence and memory sections). */
export function durabilityProblems(info: string, node: string): RedisDurabilityProblem[] {
  const f = fields(info);
  const problems: RedisDurabilityProblem[] = [];
  if (f.get('aof_enabled') === '0')
    problems.push({
      problem: 'aof_off',
      node,
      message: `Redis ${node} runs without AOF (appendonly no): a restart loses every queued job until the reconciler relays them again`,
    });
  const policy = f.get('maxmemory_policy');
  if (policy !== undefined && policy !== 'noeviction')
    problems.push({
      problem: 'eviction_policy',
      node,
      message: `Redis ${node} evicts keys when full (maxmemory-policy ${policy}): it may drop queued jobs; set noeviction`,
    });
  return problems;
}

/** The problems of every server (each master of a cluster). */
export async function redisDurability(connection: RedisClient): Promise<RedisDurabilityProblem[]> {
  const servers: Redis[] = connection instanceof Cluster ? connection.nodes('master') : [connection];
  const answers = await Promise.all(
    servers.map(async (s) => {
      const info = `${await s.info('persistence')}\r\n${await s.info('memory')}`;
      return durabilityProblems(info, `${s.options.host ?? '?'}:${s.options.port ?? '?'}`);
    }),
  );
  return answers.flat();
}
