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

export function createDb(url: string, max = 10): DbHandle {
  const pool = new pg.Pool({ connectionString: url, max, idleTimeoutMillis: 30_000 });
  // An idle client losing its connection (Postgres restart) must not crash the process.
  pool.on('error', () => {});
  const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
  POOLS.set(db, pool);
  return { db, pool };
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
