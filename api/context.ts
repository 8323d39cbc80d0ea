import type pg from 'pg';
import type { Config } from '../shared/config.ts';
import type { Db } from '../shared/db/database.ts';
import type { ReadRouter } from '../shared/db/read-router.ts';
import type { Logger } from '../shared/observability/logger.ts';
import type { RedisClient } from '../shared/queue/connection.ts';
import type { QueueSet } from '../shared/queue/queues.ts';
import type { TokenVerifier } from './http/auth.ts';
import type { HydraRegistry } from './http/formats/hydra-classes.ts';
import type { OpenApiRegistry } from './http/openapi.ts';

/** What every service's routes may use; built once per API process (api/server.ts). */
export interface AppContext {
  config: Config;
  db: Db;
  pool: pg.Pool;
  /**
   * Searches and collection reads: the replica (DATABASE_READ_URL) when it is fresh and the
   * caller has not just written, else `db`/`pool` (the primary). Writes and item reads use `db`.
   */
  reads: ReadRouter;
  /** Fail-fast connection for rate limits and readiness. */
  redis: RedisClient;
  queues: QueueSet;
  verifier: TokenVerifier;
  registry: OpenApiRegistry;
  /** The Hydra classes the `hydra` resources declare (API documentation, contexts, entrypoint). */
  hydra: HydraRegistry;
  logger: Logger;
}
