import { Kysely, PostgresDialect } from 'kysely';
import pg from 'pg';
import type { Database } from './schema/index.ts';

// BIGINT (int8) counts and ids fit in a JS number for our volumes; NUMERIC stays a string.
pg.types.setTypeParser(pg.types.builtins.INT8, (v) => Number.parseInt(v, 10));

export type Db = Kysely<Database>;

export interface DbHandle {
  db: Db;
  pool: pg.Pool;
}

/** Driver settings a pool may add (a replica's application_name, a shorter connect timeout). */
export type PoolOptions = Pick<pg.PoolConfig, 'application_name' | 'connectionTimeoutMillis' | 'query_timeout'>;

export function createDb(
  url: string,
  max = 10,
  { preparedStatements = true, ...options }: PoolOptions & { preparedStatements?: boolean } = {},
): DbHandle {
  const pool = new pg.Pool({ connectionString: url, max, idleTimeoutMillis: 30_000, ...options });
  if (!preparedStatements) pool.on('connect', runUnnamed);
  // A client losing its connection (Postgres restart) must not crash the process: an idle one
  // reports it to the pool; one checked out between statements emits it on itself, where pg-pool
  // listens to nothing (its next statement fails instead, and the pool drops it when released).
  pool.on('error', () => {});
  pool.on('connect', (client) => client.on('error', () => {}));
  const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
  POOLS.set(db, pool);
  return { db, pool };
}

/** application_name of the API's replica pools: a replica's pg_stat_activity shows what they ran. */
export const READ_POOL_NAME = 'sports-api:read';

/**
 * The pool for reads that may lag (DATABASE_READ_URL, shared/db/read-router.ts). A replica that
 * stopped answering must not hold a request for the default connect wait: the read goes to the
 * primary after this one.
 */
export function createReadDb(url: string, max = 10, preparedStatements = true): DbHandle {
  return createDb(url, max, { application_name: READ_POOL_NAME, connectionTimeoutMillis: 1_000, preparedStatements });
}

/**
 * DATABASE_PREPARED_STATEMENTS=false: the client drops the `name` of the statements given to it
 * (the searches', the webhook deliveries'), so they run unnamed. Behind a transaction pooler each
 * transaction may get another server connection, where a name prepared elsewhere is unknown (or
 * already taken by another client's statement).
 */
function runUnnamed(client: pg.PoolClient): void {
  const query = client.query.bind(client) as (...args: unknown[]) => unknown;
  client.query = ((config: unknown, ...rest: unknown[]) => {
    // A submittable (a COPY stream) carries no name to drop.
    if (config && typeof config === 'object' && 'name' in config && !('submit' in config)) {
      const { name: _name, ...unnamed } = config as pg.QueryConfig;
      return query(unnamed, ...rest);
    }
    return query(config, ...rest);
  }) as typeof client.query;
}

/** The pool of each Db made by createDb: Kysely keeps its own private. */
const POOLS = new WeakMap<Db, pg.Pool>();

/**
 * The driver's pool behind `db`, for the few reads Kysely cannot express (binary COPY, see
 * copy-binary.ts). `db` must be one createDb made, not a transaction.
 */
export function poolOf(db: Db): pg.Pool {
  const pool = POOLS.get(db);
  if (!pool) throw new Error('poolOf: this Db was not made by createDb (a transaction?)');
  return pool;
}

/** True when Postgres answers a trivial query within the pool's checkout. */
export async function pingDb(pool: pg.Pool): Promise<boolean> {
  try {
    await pool.query('select 1');
    return true;
  } catch {
    return false;
  }
}
