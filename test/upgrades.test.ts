import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import test from 'ava';
import { sql } from 'kysely';
import { SCHEMA_LEVEL } from '../shared/db/release.ts';
import { startWorkers } from '../workers/worker.ts';
import { freePort, startTestApi, testConfig, uniquePrefix } from './helpers/app.ts';

// Issue 36 §6: what the zero-downtime upgrade of docs/operations.md relies on. Each process names
// its release in pg_stat_activity (the check before a migration), and a process of the previous
// release starts on a schema a newer release migrated (a restart mid-deploy, a rollback).

const docs = readFileSync(new URL('../docs/operations.md', import.meta.url), 'utf8');
/** The check of the runbook, as an operator copies it. */
const RELEASES_QUERY = /```sql\n(select application_name[^`]*?)```/.exec(docs)?.[1] ?? '';

test('the API and the worker show their release in pg_stat_activity, as the runbook query lists it', async (t) => {
  t.regex(RELEASES_QUERY, /pg_stat_activity/, 'the runbook has its query');
  const api = await startTestApi(t);
  const workers = await startWorkers(
    testConfig({ DATABASE_URL: api.database.url, QUEUE_PREFIX: api.config.QUEUE_PREFIX, WORKER_QUEUES: 'records' }),
  );
  t.teardown(() => workers.close());
  // Both relays poll PostgreSQL: each process keeps a connection open.
  const want = [`sports-api ${SCHEMA_LEVEL}`, `sports-worker ${SCHEMA_LEVEL}`];
  const end = Date.now() + 60_000;
  let names: string[] = [];
  while (Date.now() < end) {
    const { rows } = await sql
      .raw<{ application_name: string }>(RELEASES_QUERY.replace(/;\s*$/, ''))
      .execute(api.database.db);
    names = rows.map((r) => r.application_name);
    if (want.every((w) => names.includes(w))) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  t.deepEqual(
    names.filter((n) => want.includes(n)),
    want,
  );
});

test('processes of the previous release start on a schema a newer release migrated', async (t) => {
  const api = await startTestApi(t);
  await sql`insert into kysely_migration (name, timestamp) values ('9999_next_release', now()::text)`.execute(
    api.database.db,
  );
  const env = { DATABASE_URL: api.database.url, QUEUE_PREFIX: uniquePrefix(), MIGRATE_ON_START: 'true' };
  const apiRun = await untilStarted(
    'api/main.ts',
    { ...env, PORT: String(await freePort()), SEED_ON_START: 'false' },
    /api listening/,
  );
  t.regex(apiRun.output, /"ahead":\["9999_next_release"\].*newer release: running on it without migrating/);
  t.is(apiRun.code, 0, apiRun.output);
  const workerRun = await untilStarted('workers/main.ts', { ...env, WORKER_QUEUES: 'records' }, /workers started/);
  t.is(workerRun.code, 0, workerRun.output);
});

/** Runs an entry point until `ready` is logged (or it exits), then SIGTERM. */
async function untilStarted(entry: string, env: Record<string, string>, ready: RegExp) {
  const child = spawn(process.execPath, [entry], { env: { ...process.env, LOG_LEVEL: 'info', ...env } });
  let output = '';
  child.stdout.on('data', (d) => {
    output += d;
  });
  child.stderr.on('data', (d) => {
    output += d;
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const end = Date.now() + 120_000;
  while (!ready.test(output) && child.exitCode === null && Date.now() < end)
    await new Promise((r) => setTimeout(r, 50));
  child.kill('SIGTERM');
  return { code: await exited, output };
}
