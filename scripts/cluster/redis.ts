import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { Redis } from 'ioredis';
import { createLogger } from '../../shared/observability/logger.ts';
import { parseOptions, usageError } from '../../shared/runtime/cli.ts';
import { freePort } from '../../shared/runtime/free-port.ts';
import { LAUNCHER_STOP_MS, onShutdown } from '../../shared/runtime/shutdown.ts';

/**
 * `npm run cluster:redis`: a Redis Cluster of 6 redis-server nodes on loopback (3 masters, each
 * with a replica), in a temporary folder, with AOF as queues need it (docs/scale-out.md). It
 * prints the REDIS_CLUSTER_NODES to give the API and the workers; Ctrl-C stops the nodes.
 * Tests start the same cluster with `RedisCluster.start()`.
 */

const run = promisify(execFile);

/** One node: its client port, its cluster bus port and its process. */
export interface ClusterNode {
  port: number;
  busPort: number;
  child: ChildProcess;
}

export interface RedisClusterOptions {
  /** Masters (each gets `replicas` replicas). */
  masters?: number;
  replicas?: number;
  /** Client ports from this one on (bus ports from this one + 10000); unset: free ports. */
  basePort?: number;
  /** Milliseconds without an answer before a node is failed and its replica promoted. */
  nodeTimeoutMs?: number;
}

export class RedisCluster {
  readonly dir: string;
  readonly nodes: ClusterNode[];
  readonly #frozen = new Set<number>();

  private constructor(dir: string, nodes: ClusterNode[]) {
    this.dir = dir;
    this.nodes = nodes;
  }

  /** `host:port,...` of every node, for REDIS_CLUSTER_NODES. */
  get nodesSetting(): string {
    return this.nodes.map((n) => `127.0.0.1:${n.port}`).join(',');
  }

  /** Starts the nodes, joins them into one cluster and waits until it serves every slot. */
  static async start(options: RedisClusterOptions = {}): Promise<RedisCluster> {
    const masters = options.masters ?? 3;
    const replicas = options.replicas ?? 1;
    const count = masters * (1 + replicas);
    const dir = mkdtempSync(path.join(tmpdir(), 'redis-cluster-'));
    const ports: { port: number; busPort: number }[] = [];
    for (let i = 0; i < count; i++) {
      const base = options.basePort;
      // Bus ports are given explicitly: port + 10000 may be taken or past 65535.
      ports.push(
        base === undefined
          ? { port: await freePort(), busPort: await freePort() }
          : { port: base + i, busPort: base + 10_000 + i },
      );
    }
    const cluster = new RedisCluster(
      dir,
      ports.map(({ port, busPort }) => ({
        port,
        busPort,
        child: startNode(dir, port, busPort, options.nodeTimeoutMs ?? 1_000),
      })),
    );
    try {
      await Promise.all(cluster.nodes.map((n) => cluster.#waitForNode(n)));
      await run('redis-cli', [
        '--cluster',
        'create',
        ...cluster.nodes.map((n) => `127.0.0.1:${n.port}`),
        '--cluster-replicas',
        String(replicas),
        '--cluster-yes',
      ]);
      await cluster.waitUntilHealthy(count);
      return cluster;
    } catch (error) {
      await cluster.stop();
      throw error;
    }
  }

  async #waitForNode(node: ClusterNode): Promise<void> {
    for (let i = 0; i < 200; i++) {
      if (node.child.exitCode !== null) throw new Error(`redis-server on port ${node.port} exited (${this.dir})`);
      if (await this.command(node.port, ['PING']).catch(() => undefined)) return;
      await sleep(50);
    }
    throw new Error(`redis-server on port ${node.port} did not start`);
  }

  /** One command sent to one node (not through the cluster), its answer as a string. */
  async command(port: number, args: string[]): Promise<string> {
    const client = new Redis(port, '127.0.0.1', {
      lazyConnect: true,
      maxRetriesPerRequest: 0,
      retryStrategy: () => null,
      connectTimeout: 1_000,
      // A frozen node accepts connections but never answers.
      commandTimeout: 1_000,
    });
    client.on('error', () => {});
    try {
      await client.connect();
      const [name, ...rest] = args as [string, ...string[]];
      return String(await client.call(name, ...rest));
    } finally {
      client.disconnect();
    }
  }

  /** The nodes running now, as the first one that answers sees the cluster (CLUSTER NODES). */
  async topology(): Promise<
    { id: string; port: number; role: 'master' | 'replica'; master: string; failed: boolean; slots: string[] }[]
  > {
    for (const node of this.running()) {
      const text = await this.command(node.port, ['CLUSTER', 'NODES']).catch(() => undefined);
      if (text === undefined) continue;
      return text
        .trim()
        .split('\n')
        .map((line) => {
          const [id = '', address = '', flags = '', master = '', , , , , ...slots] = line.split(' ');
          return {
            id,
            port: Number(address.split('@')[0]?.split(':')[1]),
            role: flags.includes('master') ? ('master' as const) : ('replica' as const),
            master,
            failed: /(^|,)fail(,|$)/.test(flags),
            slots,
          };
        });
    }
    throw new Error('no node of the cluster answers');
  }

  /** The port of the master serving `key`'s slot. */
  async masterOf(key: string): Promise<number> {
    const node = this.running()[0];
    if (!node) throw new Error('no node is running');
    const slot = Number(await this.command(node.port, ['CLUSTER', 'KEYSLOT', key]));
    const master = (await this.topology()).find(
      (n) =>
        n.role === 'master' &&
        !n.failed &&
        n.slots.some((range) => {
          const [from, to = from] = range.split('-').map(Number) as [number, number?];
          return slot >= from && slot <= (to ?? from);
        }),
    );
    if (!master) throw new Error(`no master serves slot ${slot}`);
    return master.port;
  }

  /**
   * Waits until every running node sees the cluster ok, with `nodes` nodes known and every
   * replica's link to its master up (only an in-sync replica can be promoted).
   */
  async waitUntilHealthy(nodes = this.running().length, timeoutMs = 120_000): Promise<void> {
    const end = Date.now() + timeoutMs;
    let last = '';
    while (Date.now() < end) {
      const states = await Promise.all(
        this.running().map(async (n) => {
          const info = await this.command(n.port, ['CLUSTER', 'INFO']).catch(() => '');
          const replication = await this.command(n.port, ['INFO', 'replication']).catch(() => '');
          return (
            /cluster_state:ok/.test(info) &&
            new RegExp(`cluster_known_nodes:${nodes}\\b`).test(info) &&
            (!/role:slave/.test(replication) || /master_link_status:up/.test(replication))
          );
        }),
      );
      last = `${states.filter(Boolean).length} of ${states.length} nodes ready`;
      if (states.every(Boolean)) return;
      await sleep(100);
    }
    throw new Error(`the Redis Cluster is not healthy after ${timeoutMs} ms: ${last} (${this.dir})`);
  }

  /** The ports of a master's replicas. */
  async replicasOf(masterPort: number): Promise<number[]> {
    const nodes = await this.topology();
    const master = nodes.find((n) => n.port === masterPort);
    return nodes.filter((n) => n.role === 'replica' && n.master === master?.id).map((n) => n.port);
  }

  /**
   * Cuts a master's replica off, as a network split or a stalled replica would: the replica is
   * frozen (SIGSTOP) until thaw() and its link closed by the master, so what the master
   * acknowledges from now on is not copied (a frozen process alone would still get it: the
   * kernel buffers the replication stream). Returns the replica's port.
   */
  async cutOffReplica(masterPort: number): Promise<number> {
    const [replica] = await this.replicasOf(masterPort);
    if (replica === undefined) throw new Error(`master ${masterPort} has no replica`);
    this.#node(replica).child.kill('SIGSTOP');
    this.#frozen.add(replica);
    await this.command(masterPort, ['CLIENT', 'KILL', 'TYPE', 'replica']);
    return replica;
  }

  thaw(port: number): void {
    this.#node(port).child.kill('SIGCONT');
    this.#frozen.delete(port);
  }

  /** Kills a node: SIGKILL, no goodbye to the cluster. */
  async kill(port: number): Promise<void> {
    await stopNode(this.#node(port), 'SIGKILL');
  }

  /** Waits until a killed master is marked failed and every slot is served again (its replica promoted). */
  async failedOver(port: number, timeoutMs = 120_000): Promise<void> {
    const end = Date.now() + timeoutMs;
    while (Date.now() < end) {
      const seen = await this.topology().catch(() => []);
      const gone = seen.find((n) => n.port === port);
      const ok = await this.command(this.running()[0]?.port ?? 0, ['CLUSTER', 'INFO']).catch(() => '');
      if (gone?.failed && /cluster_state:ok/.test(ok)) return;
      await sleep(100);
    }
    throw new Error(`no failover ${timeoutMs} ms after node ${port} was killed (${this.dir})`);
  }

  /** The nodes running and not frozen. */
  running(): ClusterNode[] {
    return this.nodes.filter(
      (n) => n.child.exitCode === null && n.child.signalCode === null && !this.#frozen.has(n.port),
    );
  }

  #node(port: number): ClusterNode {
    const node = this.nodes.find((n) => n.port === port);
    if (!node) throw new Error(`no node on port ${port}`);
    return node;
  }

  /** Stops every node and deletes the folder. */
  async stop(): Promise<void> {
    await Promise.all(this.nodes.map((n) => stopNode(n, 'SIGKILL')));
    rmSync(this.dir, { recursive: true, force: true });
  }
}

function startNode(dir: string, port: number, busPort: number, nodeTimeoutMs: number): ChildProcess {
  // Started in the foreground, so this process holds it; killed with this process.
  const child = spawn(
    'redis-server',
    [
      '--port',
      String(port),
      '--bind',
      '127.0.0.1',
      '--cluster-enabled',
      'yes',
      '--cluster-port',
      String(busPort),
      '--cluster-config-file',
      `nodes-${port}.conf`,
      '--cluster-node-timeout',
      String(nodeTimeoutMs),
      // A replica is promoted however long its link was down: the outbox makes up for what it lacks.
      '--cluster-replica-validity-factor',
      '0',
      '--dir',
      dir,
      '--appendonly',
      'yes',
      '--appendfilename',
      `appendonly-${port}.aof`,
      '--appenddirname',
      `aof-${port}`,
      '--appendfsync',
      'everysec',
      '--save',
      '',
      '--maxmemory-policy',
      'noeviction',
      '--logfile',
      path.join(dir, `redis-${port}.log`),
    ],
    { stdio: 'ignore' },
  );
  const kill = () => child.kill('SIGKILL');
  process.once('exit', kill);
  child.once('exit', () => process.off('exit', kill));
  return child;
}

async function stopNode(node: ClusterNode, signal: NodeJS.Signals): Promise<void> {
  const { child } = node;
  if (child.exitCode !== null || child.signalCode !== null) return;
  await new Promise<void>((resolve) => {
    child.once('exit', () => resolve());
    child.kill(signal);
  });
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const USAGE = `usage: npm run cluster:redis -- [--port P]
  6 redis-server nodes in cluster mode (3 masters, 3 replicas) on 127.0.0.1, client ports P to
  P+5 and bus ports P+10000 to P+10005 (default: free ports); prints REDIS_CLUSTER_NODES;
  Ctrl-C stops them and deletes their folder.`;

if (import.meta.main) {
  const values = parseOptions({ port: { type: 'string' } }, USAGE);
  const basePort = values.port === undefined ? undefined : Number(values.port);
  if (basePort !== undefined && (!Number.isInteger(basePort) || basePort < 1 || basePort > 55_530))
    usageError(USAGE, `--port ${values.port}: give a port from 1 to 55530`);
  const cluster = await RedisCluster.start(basePort === undefined ? {} : { basePort });
  const masters = (await cluster.topology()).filter((n) => n.role === 'master').map((n) => n.port);
  console.log(
    [
      `Redis Cluster ready in ${cluster.dir} (masters on ${masters.join(', ')}; Ctrl-C stops it):`,
      `REDIS_CLUSTER_NODES=${cluster.nodesSetting}`,
    ].join('\n'),
  );
  onShutdown(createLogger('info', 'cluster:redis'), LAUNCHER_STOP_MS, () => cluster.stop());
}
