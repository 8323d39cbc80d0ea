import { type ChildProcess, spawn } from 'node:child_process';
import { EventEmitter } from 'node:events';
import { accessSync, constants, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { ensureDatabase } from '../../shared/db/create-database.ts';
import { createDb } from '../../shared/db/database.ts';
import { migrateToLatest } from '../../shared/db/migrate.ts';
import { seedReferentials } from '../../shared/db/referentials.ts';
import { createLogger } from '../../shared/observability/logger.ts';
import { parseOptions, runCli, usageError } from '../../shared/runtime/cli.ts';
import { freePort } from '../../shared/runtime/free-port.ts';
import { LAUNCHER_STOP_MS, onShutdown } from '../../shared/runtime/shutdown.ts';
import { postgresDir } from './postgres-server.ts';

/**
 * `npm run cluster:balancer -- --api 4`: N API processes behind HAProxy, with PgBouncer
 * (pool_mode=transaction) between them and PostgreSQL, all on loopback (docs/scale-out.md).
 * Tests and benchmarks start the same thing with `startBalancedApi`.
 */

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
// PgBouncer refuses to run as root: it switches to the `postgres` OS user then.
const asRoot = process.getuid?.() === 0;

/** The server processes started and not stopped yet: killed if this process exits without stopping them. */
const LIVE = new Set<ChildProcess>();
process.on('exit', () => {
  for (const child of LIVE) child.kill('SIGKILL');
});

/** A server process of the setup, its last output kept to explain a failure. */
class ServerProcess {
  readonly label: string;
  readonly child: ChildProcess;
  readonly exited: Promise<void>;
  output = '';

  constructor(
    label: string,
    command: string,
    args: string[],
    options: { env?: NodeJS.ProcessEnv; inherit?: boolean } = {},
  ) {
    this.label = label;
    this.child = spawn(command, args, {
      cwd: ROOT,
      env: options.env ?? process.env,
      stdio: ['ignore', options.inherit ? 'inherit' : 'pipe', options.inherit ? 'inherit' : 'pipe'],
    });
    const keep = (d: Buffer) => {
      this.output = (this.output + d.toString()).slice(-20_000);
    };
    this.child.stdout?.on('data', keep);
    this.child.stderr?.on('data', keep);
    this.child.on('error', (error) => keep(Buffer.from(String(error))));
    this.exited = new Promise((resolve) => this.child.once('exit', () => resolve()));
    LIVE.add(this.child);
  }

  get running(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  /** Polls `ready` until it holds; fails at once when the process exits, naming its last output. */
  async until(ready: () => Promise<boolean>, timeoutMs = 30_000): Promise<void> {
    const end = Date.now() + timeoutMs;
    for (;;) {
      if (!this.running) throw new Error(`${this.label} exited:\n${this.output.slice(-3_000)}`);
      if (await ready().catch(() => false)) return;
      if (Date.now() > end)
        throw new Error(`${this.label} not ready after ${timeoutMs} ms:\n${this.output.slice(-3_000)}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  /** `signal`, then SIGKILL if it has not exited within `graceMs`. */
  async stop(signal: NodeJS.Signals = 'SIGTERM', graceMs = 15_000): Promise<void> {
    if (this.running) {
      this.child.kill(signal);
      const timer = setTimeout(() => this.child.kill('SIGKILL'), graceMs);
      await this.exited;
      clearTimeout(timer);
    }
    LIVE.delete(this.child);
  }
}

/** A Debian server's program (in /usr/sbin, often not on a user's PATH), or a message naming its package. */
function program(name: 'haproxy' | 'pgbouncer'): string {
  const dirs = [...(process.env.PATH ?? '').split(path.delimiter).filter(Boolean), '/usr/sbin'];
  for (const dir of dirs) {
    try {
      accessSync(path.join(dir, name), constants.X_OK);
      return path.join(dir, name);
    } catch {}
  }
  throw new Error(`${name} is not installed: apt-get install -y haproxy pgbouncer`);
}

/**
 * PgBouncer (Debian's 1.18) in pool_mode=transaction on a loopback port, forwarding every database
 * name to the PostgreSQL of `upstream` as its user. No authentication: loopback only.
 */
export class PgBouncer {
  readonly port: number;
  readonly user: string;
  readonly process: ServerProcess;
  readonly #dir: string;

  private constructor(port: number, user: string, process: ServerProcess, dir: string) {
    this.port = port;
    this.user = user;
    this.process = process;
    this.#dir = dir;
  }

  static async start(options: { upstream: string; serverPoolSize?: number; port?: number }): Promise<PgBouncer> {
    // A port found free may be taken by another process before PgBouncer binds it: start again on another.
    for (let attempt = 1; ; attempt++) {
      try {
        return await PgBouncer.#startOnce(options);
      } catch (error) {
        if (options.port || attempt >= 3 || !/Address already in use/.test(String(error))) throw error;
      }
    }
  }

  static async #startOnce(options: { upstream: string; serverPoolSize?: number; port?: number }): Promise<PgBouncer> {
    const upstream = new URL(options.upstream);
    const user = decodeURIComponent(upstream.username) || 'postgres';
    const port = options.port || (await freePort());
    const dir = postgresDir('sb-pgbouncer-');
    const target = [
      `host=${upstream.hostname.replace(/^\[|\]$/g, '')}`,
      `port=${upstream.port || 5432}`,
      `user=${user}`,
      ...(upstream.password ? [`password=${decodeURIComponent(upstream.password)}`] : []),
    ].join(' ');
    const file = path.join(dir, 'pgbouncer.ini');
    writeFileSync(
      file,
      [
        '[databases]',
        // Any database name the client asks for, on the upstream server, as the upstream user.
        `* = ${target}`,
        '[pgbouncer]',
        'listen_addr = 127.0.0.1',
        `listen_port = ${port}`,
        'unix_socket_dir =',
        // The user is the one of [databases]; the client's is not checked (loopback only).
        'auth_type = any',
        `admin_users = ${user}`,
        'pool_mode = transaction',
        // Two server connections per core of this machine's PostgreSQL (docs/scale-out.md, "The API's pool").
        `default_pool_size = ${options.serverPoolSize ?? 2 * cpus().length}`,
        'max_client_conn = 2000',
        `logfile = ${path.join(dir, 'pgbouncer.log')}`,
        '',
      ].join('\n'),
    );
    const args = asRoot ? ['-u', 'postgres', file] : [file];
    const server = new ServerProcess('PgBouncer', program('pgbouncer'), args);
    const bouncer = new PgBouncer(port, user, server, dir);
    try {
      await server.until(async () => {
        const client = new pg.Client({ connectionString: bouncer.url('pgbouncer') });
        await client.connect();
        await client.end();
        return true;
      });
    } catch (error) {
      await bouncer.stop();
      throw error;
    }
    return bouncer;
  }

  /** The URL of `database` through the pooler (`pgbouncer`: its admin console, SHOW POOLS...). */
  url(database: string): string {
    return `postgres://${encodeURIComponent(this.user)}@127.0.0.1:${this.port}/${encodeURIComponent(database)}`;
  }

  /** SIGINT: PgBouncer's safe shutdown, once every client has gone (then SIGKILL after a grace). */
  async stop(): Promise<void> {
    await this.process.stop('SIGINT', 5_000);
    rmSync(this.#dir, { recursive: true, force: true });
  }
}

/** One API process behind the balancer. */
export interface BalancedApiProcess {
  /** Its name in HAProxy (the X-Served-By header of each answer). */
  name: string;
  /** Its own address, bypassing the balancer (its /metrics, /ready). */
  url: string;
  /** The process now serving: another one after a restart. */
  process: ServerProcess;
}

/** What the launcher reports about its API processes. */
export interface BalancerEvents {
  /** An API process exited while the setup was not closing. */
  exited: [{ name: string; code: number | null; signal: NodeJS.Signals | null }];
  /** A new process of that API answers /ready (HAProxy takes it back at its next check). */
  restarted: [{ name: string; pid: number | undefined }];
  /** The new process did not become ready: that API stays down. */
  'restart-failed': [{ name: string; error: Error }];
}

/**
 * The HAProxy configuration of the setup. An API that dies (crash, SIGKILL, OOM) is taken out
 * at its first refused connection (`observe layer4`), and by its /ready checks otherwise. A
 * request it could not answer is sent again, to another server (`option redispatch 1`, up to 3
 * times): always when it never reached the API (the connection failed), and when it may have
 * (closed without an answer) only if sending it twice is harmless: GET, HEAD, OPTIONS, or any
 * request with an `Idempotency-Key` (the API answers a repeat with the first answer,
 * docs/idempotency.md). A POST without one is never sent twice: the client gets the 502 and
 * decides.
 */
export function haproxyConfig(options: {
  port: number;
  servers: { name: string; url: string }[];
  balance: 'roundrobin' | 'leastconn';
}): string {
  return [
    'global',
    '  maxconn 4096',
    'defaults',
    '  mode http',
    '  timeout connect 5s',
    // Above the API's own request timeout (HTTP_REQUEST_TIMEOUT_MS: a large upload on a slow uplink).
    '  timeout client 130s',
    '  timeout server 130s',
    '  timeout http-keep-alive 60s',
    // A busy API answers /ready late (its ping waits behind the queries in its pool), not never.
    '  timeout check 5s',
    '  option forwardfor',
    'frontend api',
    `  bind 127.0.0.1:${options.port}`,
    '  default_backend apis',
    'backend apis',
    `  balance ${options.balance}`,
    '  option httpchk',
    '  http-check send meth GET uri /ready',
    '  http-check expect status 200',
    '  default-server inter 1s fall 3 rise 1 observe layer4 error-limit 1 on-error mark-down',
    '  retries 3',
    '  option redispatch 1',
    // Connection failures are retried for every request (nothing was sent); the others only
    // for the requests below. Requests larger than a buffer are never retried (not kept).
    '  retry-on conn-failure empty-response junk-response',
    '  acl retry_safe method GET HEAD OPTIONS',
    '  acl retry_safe req.hdr(idempotency-key) -m found',
    '  http-request disable-l7-retry unless retry_safe',
    '  http-response set-header X-Served-By %s',
    ...options.servers.map((s) => `  server ${s.name} ${new URL(s.url).host} check`),
    '',
  ].join('\n');
}

/**
 * HAProxy (Debian's 2.6) on a loopback port in front of `servers`: `balance` across them, each
 * checked on /ready every second (out after 3 failures or at its first refused connection, back
 * after 1 success), failed requests sent again to another server when that is safe
 * (`haproxyConfig`), the client's address appended to X-Forwarded-For, and each answer naming its
 * server in X-Served-By.
 */
export class HaProxy {
  readonly url: string;
  readonly process: ServerProcess;
  readonly #dir: string;

  private constructor(url: string, process: ServerProcess, dir: string) {
    this.url = url;
    this.process = process;
    this.#dir = dir;
  }

  static async start(options: {
    port: number;
    servers: { name: string; url: string }[];
    balance: 'roundrobin' | 'leastconn';
  }): Promise<HaProxy> {
    const dir = mkdtempSync(path.join(tmpdir(), 'sb-haproxy-'));
    const file = path.join(dir, 'haproxy.cfg');
    writeFileSync(file, haproxyConfig(options));
    // -db: foreground, no daemon (this process owns it).
    const server = new ServerProcess('HAProxy', program('haproxy'), ['-db', '-f', file]);
    const url = `http://127.0.0.1:${options.port}`;
    const proxy = new HaProxy(url, server, dir);
    try {
      await server.until(async () => (await fetch(`${url}/health`)).ok);
    } catch (error) {
      await proxy.stop();
      throw error;
    }
    return proxy;
  }

  async stop(): Promise<void> {
    await this.process.stop('SIGTERM', 5_000);
    rmSync(this.#dir, { recursive: true, force: true });
  }
}

export interface BalancedApiOptions {
  /** How many API processes (api/main.ts). */
  apis: number;
  /** PostgreSQL itself: migrated and seeded directly, then reached by the APIs through PgBouncer. */
  databaseUrl: string;
  /** HAProxy's port (unset: a free one). */
  port?: number;
  balance?: 'roundrobin' | 'leastconn';
  /** Settings of every API process, over this process's environment (REDIS_URL, QUEUE_PREFIX...). */
  env?: Record<string, string>;
  /** Connections PgBouncer keeps to PostgreSQL per database (shared by every API). */
  serverPoolSize?: number;
  /** A PgBouncer already running on the same PostgreSQL, to share (a benchmark's setups): left running by close. */
  bouncer?: PgBouncer;
  /** False when the database is already migrated and seeded (a test's clone of the template). */
  migrate?: boolean;
  /** The API processes write their logs to this process's stdout/stderr (the CLI) instead of keeping them. */
  inheritOutput?: boolean;
}

export interface BalancedApi {
  /** HAProxy: the one URL clients use (and every API's PUBLIC_URL, the tokens' issuer). */
  url: string;
  apis: BalancedApiProcess[];
  bouncer: PgBouncer;
  proxy: HaProxy;
  /** An API process that exits is reported and started again on its port. */
  events: EventEmitter<BalancerEvents>;
  /** Stops HAProxy, then the APIs (requests in flight finish), then PgBouncer. */
  close: () => Promise<void>;
}

/**
 * Migrations and referentials run first against PostgreSQL directly: Kysely's migrator holds a
 * session advisory lock across statements, which a transaction pooler would leave on whichever
 * server connection ran it. The APIs then start with MIGRATE_ON_START=false.
 */
async function prepareDirectly(databaseUrl: string): Promise<void> {
  await ensureDatabase(databaseUrl);
  const { db } = createDb(databaseUrl, 1);
  try {
    await migrateToLatest(db);
    await seedReferentials(db);
  } finally {
    await db.destroy();
  }
}

export async function startBalancedApi(options: BalancedApiOptions): Promise<BalancedApi> {
  if (!Number.isInteger(options.apis) || options.apis < 1) throw new Error('apis: at least 1 API process');
  if (options.migrate !== false) await prepareDirectly(options.databaseUrl);
  // A port found free (freePort) may be taken by another process before ours binds it: start again on others.
  for (let attempt = 1; ; attempt++) {
    try {
      return await startOnce(options);
    } catch (error) {
      if (attempt >= 3 || !/EADDRINUSE|Address already in use/.test(String(error))) throw error;
    }
  }
}

/**
 * Starts API `name` on `port` and, once it answers /ready, watches it: a process that exits
 * while the setup is not `closing` is reported and started again with the same settings. One
 * that never becomes ready is not started again (a bad setting would loop).
 */
async function superviseApi(
  api: { name: string; url: string; env: NodeJS.ProcessEnv; inherit: boolean },
  events: EventEmitter<BalancerEvents>,
  closing: () => boolean,
): Promise<BalancedApiProcess> {
  const start = async () => {
    const child = new ServerProcess(api.name, process.execPath, ['api/main.ts'], {
      env: api.env,
      ...(api.inherit ? { inherit: true } : {}),
    });
    // A loaded machine compiles and starts several processes at once slowly.
    try {
      await child.until(async () => (await fetch(`${api.url}/ready`)).ok, 180_000);
    } catch (error) {
      await child.stop('SIGKILL');
      throw error;
    }
    return child;
  };
  const entry: BalancedApiProcess = { name: api.name, url: api.url, process: await start() };
  const watch = (child: ServerProcess) => {
    child.child.once('exit', (code, signal) => {
      if (closing()) return;
      events.emit('exited', { name: api.name, code, signal });
      start().then(
        (next) => {
          if (closing()) return void next.stop();
          entry.process = next;
          watch(next);
          events.emit('restarted', { name: api.name, pid: next.child.pid });
        },
        (error: Error) => events.emit('restart-failed', { name: api.name, error }),
      );
    });
  };
  watch(entry.process);
  return entry;
}

async function startOnce(options: BalancedApiOptions): Promise<BalancedApi> {
  const database = decodeURIComponent(new URL(options.databaseUrl).pathname.slice(1));
  const port = options.port || (await freePort());
  const publicUrl = `http://127.0.0.1:${port}`;
  const started: { stop: () => Promise<void> }[] = [];
  const events = new EventEmitter<BalancerEvents>();
  let closing = false;
  const stopAll = async () => {
    closing = true;
    for (const part of started.reverse()) await part.stop();
  };
  try {
    let bouncer = options.bouncer;
    if (!bouncer) {
      bouncer = await PgBouncer.start({
        upstream: options.databaseUrl,
        ...(options.serverPoolSize ? { serverPoolSize: options.serverPoolSize } : {}),
      });
      started.push(bouncer);
    }
    const pooledUrl = bouncer.url(database);
    const apis = await Promise.all(
      Array.from({ length: options.apis }, async (_, i): Promise<BalancedApiProcess> => {
        const apiPort = await freePort();
        const env = {
          ...process.env,
          HOST: '127.0.0.1',
          PORT: String(apiPort),
          PUBLIC_URL: publicUrl,
          // HAProxy is the one proxy hop: the client address is the last X-Forwarded-For entry.
          TRUST_PROXY: '1',
          ...options.env,
          DATABASE_URL: pooledUrl,
          DATABASE_PREPARED_STATEMENTS: 'false',
          MIGRATE_ON_START: 'false',
          SEED_ON_START: 'false',
        };
        const spec = { name: `api${i + 1}`, url: `http://127.0.0.1:${apiPort}`, env, inherit: !!options.inheritOutput };
        const api = await superviseApi(spec, events, () => closing);
        started.push({ stop: () => api.process.stop() });
        return api;
      }),
    );
    const proxy = await HaProxy.start({ port, servers: apis, balance: options.balance ?? 'roundrobin' });
    started.push(proxy);
    return { url: proxy.url, apis, bouncer, proxy, events, close: stopAll };
  } catch (error) {
    await stopAll();
    throw error;
  }
}

const USAGE = `usage: npm run cluster:balancer -- [--api N] [--port P] [--balance roundrobin|leastconn]
  N API processes (default 2) behind HAProxy on 127.0.0.1:P (default 8080), PgBouncer
  (pool_mode=transaction) between them and DATABASE_URL; an API process that dies is reported
  and started again; Ctrl-C stops everything. Every API gets PUBLIC_URL=http://127.0.0.1:P, the
  balancer's address: it is the tokens' issuer, so tokens must come from this setup (or from
  \`npm run account\` run with that same PUBLIC_URL); a token issued under another address is refused.`;

if (import.meta.main) {
  await runCli(async (config) => {
    const values = parseOptions(
      { api: { type: 'string', default: '2' }, port: { type: 'string', default: '8080' }, balance: { type: 'string' } },
      USAGE,
    );
    const apis = Number(values.api);
    const port = Number(values.port);
    const balance = values.balance ?? 'roundrobin';
    if (!Number.isInteger(apis) || apis < 1 || apis > 32) usageError(USAGE, `--api ${values.api}: give 1 to 32`);
    if (!Number.isInteger(port) || port < 1 || port > 65535) usageError(USAGE, `--port ${values.port}: not a port`);
    if (balance !== 'roundrobin' && balance !== 'leastconn') usageError(USAGE, `--balance ${balance}: unknown`);
    const balanced = await startBalancedApi({
      apis,
      port,
      balance,
      databaseUrl: config.DATABASE_URL,
      inheritOutput: true,
    });
    console.log(
      [
        `balancer ready: ${balanced.url} (HAProxy, ${balance})`,
        ...balanced.apis.map((a) => `  ${a.name}: ${a.url} (pid ${a.process.child.pid})`),
        `  PgBouncer: ${balanced.bouncer.url(new URL(config.DATABASE_URL).pathname.slice(1))} -> ${config.DATABASE_URL.replace(/\/\/[^@]*@/, '//')}`,
      ].join('\n'),
    );
    const logger = createLogger('info', 'cluster:balancer');
    balanced.events.on('exited', (what) => logger.error(what, 'API process exited: starting it again'));
    balanced.events.on('restarted', (what) => logger.info(what, 'API process started again'));
    balanced.events.on('restart-failed', ({ name, error }) =>
      logger.error({ name, err: error }, 'API process did not start again: it stays down'),
    );
    onShutdown(logger, LAUNCHER_STOP_MS, () => balanced.close());
  });
}
