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
  return { db, pool };
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
