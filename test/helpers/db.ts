import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { createDb, type Db } from '../../shared/db/database.ts';
import { migrateToLatest } from '../../shared/db/migrate.ts';
import { seedReferentials } from '../../shared/db/referentials.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
export const SERVER_URL = process.env.TEST_DATABASE_SERVER ?? 'postgres://root@127.0.0.1:5432';

/** Hash of everything that shapes the template: a change in migrations or seed data rebuilds it. */
function templateHash(): string {
  const hash = createHash('sha256');
  for (const dir of ['shared/db/migrations', 'shared/referentials', 'shared/db/schema']) {
    for (const file of readdirSync(path.join(ROOT, dir)).sort())
      hash.update(file).update(readFileSync(path.join(ROOT, dir, file)));
  }
  hash.update(readFileSync(path.join(ROOT, 'shared/db/referentials.ts')));
  return hash.digest('hex').slice(0, 12);
}

const dbUrl = (name: string) => `${SERVER_URL}/${name}`;

async function withAdmin<T>(fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: dbUrl('postgres') });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

/** Migrated and seeded once per content hash; test files then clone it (fast, file-level copy). */
async function ensureTemplate(client: pg.Client): Promise<string> {
  const name = `sb_tpl_${templateHash()}`;
  const exists = await client.query('select 1 from pg_database where datname = $1', [name]);
  if (exists.rowCount) return name;
  const building = `${name}_build`;
  await client.query(`drop database if exists ${building}`);
  await client.query(`create database ${building}`);
  const { db } = createDb(dbUrl(building), 2);
  try {
    await migrateToLatest(db);
    await seedReferentials(db);
  } finally {
    await db.destroy();
  }
  await client.query(`alter database ${building} rename to ${name}`);
  // Older templates (from other migration sets) are no longer needed.
  const old = await client.query<{ datname: string }>(
    "select datname from pg_database where datname like 'sb_tpl_%' and datname <> $1",
    [name],
  );
  for (const row of old.rows) await client.query(`drop database if exists ${row.datname}`).catch(() => {});
  return name;
}

/** Databases left by test processes that died before their teardown (named sb_test_<pid>_...). */
async function dropAbandoned(client: pg.Client): Promise<void> {
  const { rows } = await client.query<{ datname: string }>(
    "select datname from pg_database where datname like 'sb\\_test\\_%'",
  );
  for (const { datname } of rows) {
    const pid = Number(datname.split('_')[2]);
    if (!Number.isInteger(pid) || isAlive(pid)) continue;
    await client.query(`drop database if exists ${datname} with (force)`).catch(() => {});
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as { code?: string }).code === 'EPERM';
  }
}

export interface TestDatabase {
  name: string;
  url: string;
  db: Db;
  pool: pg.Pool;
  drop: () => Promise<void>;
}

/**
 * A database of its own for one test file: a clone of the migrated, seeded template. Creation
 * is serialized across test processes with an advisory lock (a template must not be copied
 * while another process is building it).
 */
export async function createTestDatabase(): Promise<TestDatabase> {
  const name = `sb_test_${process.pid}_${Math.random().toString(36).slice(2, 8)}`;
  await withAdmin(async (client) => {
    await client.query("select pg_advisory_lock(hashtext('sports-backend:test-template'))");
    try {
      const template = await ensureTemplate(client);
      await dropAbandoned(client);
      await client.query(`create database ${name} template ${template}`);
    } finally {
      await client.query("select pg_advisory_unlock(hashtext('sports-backend:test-template'))");
    }
  });
  const url = dbUrl(name);
  const { db, pool } = createDb(url, 5);
  return {
    name,
    url,
    db,
    pool,
    drop: async () => {
      await db.destroy();
      await withAdmin((client) => client.query(`drop database if exists ${name} with (force)`));
    },
  };
}
