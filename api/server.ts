import { createServer, type Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { ensureSigningKeys } from '../shared/auth/signing-keys.ts';
import type { Config } from '../shared/config.ts';
import { createDb } from '../shared/db/database.ts';
import { migrateToLatest } from '../shared/db/migrate.ts';
import { releaseName } from '../shared/db/release.ts';
import { createLogger, type Logger } from '../shared/observability/logger.ts';
import { createRedis, waitForReady } from '../shared/queue/connection.ts';
import { OutboxRelay } from '../shared/queue/outbox-relay.ts';
import { QueueSet } from '../shared/queue/queues.ts';
import { redisDurability } from '../shared/queue/redis-durability.ts';
import { listenAddress } from '../shared/runtime/listen-address.ts';
import { onSideEffectsCommitted } from '../shared/unit-of-work/unit-of-work.ts';
import { type AppOptions, createApp, mountedServices } from './app.ts';
import type { AppContext } from './context.ts';
import { TokenVerifier } from './http/auth.ts';
import { answerClientError } from './http/client-error.ts';
import { HydraRegistry } from './http/formats/hydra-classes.ts';
import { OpenApiRegistry } from './http/openapi.ts';
import { applyServerLimits, httpServerOptions } from './http/server-options.ts';
import { createReadRouter } from './reads.ts';
import { serviceErrorFormats } from './service-module.ts';

export interface RunningApi {
  server: Server;
  context: AppContext;
  url: string;
  /** Stops accepting, waits for requests in flight (up to SHUTDOWN_TIMEOUT_MS), closes pools. */
  close: () => Promise<void>;
}

export async function startApi(config: Config, options: AppOptions & { logger?: Logger } = {}): Promise<RunningApi> {
  const logger = options.logger ?? createLogger(config.LOG_LEVEL, 'api');
  const { db, pool } = createDb(config.DATABASE_URL, config.DATABASE_POOL_MAX, {
    application_name: releaseName('api'),
    preparedStatements: config.DATABASE_PREPARED_STATEMENTS,
  });
  if (config.MIGRATE_ON_START) await migrateToLatest(db);
  await ensureSigningKeys(db);
  const redis = createRedis(config, 'client');
  const queues = new QueueSet(createRedis(config, 'producer'), config.QUEUE_PREFIX);
  const redisReady = await Promise.all([waitForReady(redis), waitForReady(queues.connection)]);
  if (!redisReady.every(Boolean)) logger.warn('Redis is not reachable yet: starting degraded (/ready answers 503)');
  const reads = createReadRouter(config, { db, pool }, redis, logger);
  await reads.start();
  // Said at start; the workers also keep it on their /metrics (redis_durability_warning).
  if (redisReady.every(Boolean))
    redisDurability(queues.connection).then(
      (problems) => {
        for (const p of problems) logger.warn({ node: p.node, problem: p.problem }, p.message);
      },
      (err: unknown) => logger.warn({ err }, 'Redis persistence settings not checked'),
    );
  const relay = new OutboxRelay(
    db,
    queues,
    config.OUTBOX_POLL_MS,
    (err) => logger.warn({ err }, 'outbox relay pass failed'),
    {
      onNewEpoch: (check) =>
        logger.warn(
          check,
          'outbox: new epoch (the database was restored, copied or promoted): open rows relayed again under new job ids',
        ),
    },
  );
  const context: AppContext = {
    config,
    db,
    pool,
    reads,
    redis,
    queues,
    verifier: new TokenVerifier(db, config),
    registry: new OpenApiRegistry(),
    hydra: new HydraRegistry(),
    logger,
  };
  let shuttingDown = false;
  const app = await createApp(context, { ...options, isShuttingDown: () => shuttingDown });

  // Track requests in flight per socket so shutdown can close idle keep-alive sockets at once.
  const active = new Map<Socket, number>();
  const server = createServer(httpServerOptions(config), app.callback()).listen(config.PORT, config.HOST);
  applyServerLimits(server, config);
  // Requests Node's parser refuses (a URL over 16 KB...) get a body in the path's service format.
  const errorFormatOf = serviceErrorFormats(mountedServices(config, options));
  server.on('clientError', (error, socket) => answerClientError(error, socket, errorFormatOf));
  server.on('connection', (socket) => {
    active.set(socket, 0);
    socket.on('close', () => active.delete(socket));
  });
  server.on('request', (req, res) => {
    const socket = req.socket;
    active.set(socket, (active.get(socket) ?? 0) + 1);
    res.on('finish', () => {
      const n = (active.get(socket) ?? 1) - 1;
      active.set(socket, n);
      if (shuttingDown && n === 0) socket.end();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('listening', resolve);
    server.once('error', reject);
  });
  relay.start();
  // A unit of work that caused jobs asks for a pass once committed (shared/unit-of-work/unit-of-work.ts).
  const stopKicks = onSideEffectsCommitted(() => relay.kick());
  const { listen, origin: url } = listenAddress(config.HOST, server.address() as AddressInfo);
  logger.info({ url, listen, services: config.SERVICES }, 'api listening');

  const close = async () => {
    if (shuttingDown) return;
    shuttingDown = true;
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    for (const [socket, n] of active) if (n === 0) socket.end();
    const timeout = new Promise<void>((resolve) => setTimeout(resolve, config.SHUTDOWN_TIMEOUT_MS).unref());
    await Promise.race([closed, timeout]);
    server.closeAllConnections();
    stopKicks();
    await relay.stop();
    await queues.close();
    redis.disconnect();
    queues.connection.disconnect();
    await reads.stop();
    await db.destroy();
  };
  return { server, context, url, close };
}
