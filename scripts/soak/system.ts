// bench/harness.ts loads autocannon, typed by bench/autocannon.d.ts: named here so that
// `npm run build` (which compiles scripts/, not bench/) has the typings too.
/// <reference path="../../bench/autocannon.d.ts" />
import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { removeRedisKeys, startApiProcess, stopApiProcess } from '../../bench/harness.ts';
import { ensureDatabase } from '../../shared/db/create-database.ts';
import { createDb, type Db } from '../../shared/db/database.ts';
import { migrateToLatest } from '../../shared/db/migrate.ts';
import { seedReferentials } from '../../shared/db/referentials.ts';
import { WorkerProcess } from '../../test/helpers/worker-process.ts';

/** The system under soak: its own database, Redis key prefix and storage, the API and one worker process. */
export interface SoakSystem {
  databaseUrl: string;
  db: Db;
  pool: pg.Pool;
  api: { url: string; child: ChildProcess };
  worker: WorkerProcess;
  /** Stops both processes and removes the Redis keys and files; drops the database unless `keepDatabase`. */
  stop: (keepDatabase: boolean) => Promise<void>;
}

/**
 * Starts the system on a database made fresh (dropped if a previous run left it, migrated,
 * seeded), a Redis prefix and a storage folder of this run only: a developer's data is never touched.
 */
export async function startSystem(databaseUrl: string, poolMax: number): Promise<SoakSystem> {
  await dropDatabase(databaseUrl);
  await ensureDatabase(databaseUrl);
  const { db, pool } = createDb(databaseUrl, 4);
  await migrateToLatest(db);
  await seedReferentials(db);
  const prefix = `sbsoak${process.pid}`;
  const storage = await mkdtemp(path.join(tmpdir(), 'sports-soak-'));
  // The API process takes this process's environment with its own settings on top (bench/harness.ts).
  process.env.QUEUE_PREFIX = prefix;
  process.env.STORAGE_DIR = storage;
  // Production refuses the public default; the run's sessions need no lasting secret.
  process.env.COOKIE_KEYS = randomBytes(24).toString('base64url');
  let api: SoakSystem['api'] | undefined;
  let worker: WorkerProcess | undefined;
  const stop = async (keepDatabase: boolean) => {
    if (api) await stopApiProcess(api.child);
    await worker?.stop();
    await removeRedisKeys(prefix);
    await rm(storage, { recursive: true, force: true });
    await db.destroy();
    if (!keepDatabase) await dropDatabase(databaseUrl);
  };
  try {
    api = await startApiProcess(databaseUrl, 'all', poolMax);
    worker = new WorkerProcess({
      NODE_ENV: 'production',
      DATABASE_URL: databaseUrl,
      QUEUE_PREFIX: prefix,
      STORAGE_DIR: storage,
      PUBLIC_URL: api.url,
      WORKER_QUEUES: 'all',
    });
    await worker.started();
  } catch (error) {
    await stop(true);
    throw error;
  }
  return { databaseUrl, db, pool, api, worker, stop };
}

async function dropDatabase(url: string): Promise<void> {
  const name = decodeURIComponent(new URL(url).pathname.slice(1));
  const admin = new URL(url);
  admin.pathname = '/postgres';
  const client = new pg.Client({ connectionString: admin.toString() });
  await client.connect();
  try {
    await client.query(`drop database if exists "${name.replaceAll('"', '""')}" with (force)`);
  } finally {
    await client.end();
  }
}
