import { spawn } from 'node:child_process';
import test from 'ava';
import pg from 'pg';
import { freePort, uniquePrefix } from './helpers/app.ts';
import { runScript } from './helpers/cli.ts';
import { createTestDatabase, SERVER_URL } from './helpers/db.ts';

// Issue 36 §2: the documented commands (`npm run api`, `npm run worker`) as an operator or a
// supervisor runs them: a signal to npm reaches node, which drains, and npm exits with it.

const database = await createTestDatabase();
test.after.always(() => database.drop());

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

/**
 * `npm run <script>` in its own process group (as a terminal runs it); once `ready` is logged,
 * `signal` goes to npm alone, or to the whole group as a terminal's Ctrl-C does.
 */
async function npmRunUntil(script: string, env: Record<string, string>, ready: RegExp, signal: 'npm' | 'group') {
  const child = spawn('npm', ['run', '--silent', script], {
    env: { ...process.env, DATABASE_URL: database.url, QUEUE_PREFIX: uniquePrefix(), LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  let output = '';
  const keep = (d: Buffer) => {
    output += d;
  };
  child.stdout.on('data', keep);
  child.stderr.on('data', keep);
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const end = Date.now() + 120_000;
  // Generous: npm, then node stripping TypeScript at each import, on a loaded machine.
  while (!ready.test(output) && child.exitCode === null && Date.now() < end)
    await new Promise((r) => setTimeout(r, 50));
  const line = output.split('\n').find((l) => ready.test(l)) ?? '';
  const nodePid = Number(/"pid":(\d+)/.exec(line)?.[1]);
  const npmPid = child.pid as number;
  if (ready.test(output)) process.kill(signal === 'npm' ? npmPid : -npmPid, signal === 'npm' ? 'SIGTERM' : 'SIGINT');
  else child.kill('SIGKILL');
  const code = await exited;
  return { ready: ready.test(output), code, output, npmPid, nodePid };
}

test('SIGTERM to `npm run api` reaches node: it drains, exits 0, and npm exits with it', async (t) => {
  const port = await freePort();
  const run = await npmRunUntil(
    'api',
    { PORT: String(port), HOST: '127.0.0.1', SEED_ON_START: 'false' },
    /api listening/,
    'npm',
  );
  t.true(run.ready, run.output);
  t.not(run.nodePid, run.npmPid, 'node is npm’s child, not npm itself');
  t.regex(run.output, /"signal":"SIGTERM".*"msg":"shutting down"/);
  t.is(run.code, 0, run.output);
  t.false(alive(run.nodePid), 'node is gone once npm has exited');
});

test('SIGTERM to `npm run worker` reaches node: it closes its workers and exits 0', async (t) => {
  const run = await npmRunUntil('worker', { WORKER_QUEUES: 'thumbnails' }, /workers started/, 'npm');
  t.true(run.ready, run.output);
  t.regex(run.output, /"msg":"shutting down"/);
  t.is(run.code, 0, run.output);
  t.false(alive(run.nodePid));
});

test('Ctrl-C (SIGINT to the process group, forwarded again by npm) is one shutdown, not a forced exit', async (t) => {
  const run = await npmRunUntil('worker', { WORKER_QUEUES: 'thumbnails' }, /workers started/, 'group');
  t.true(run.ready, run.output);
  t.notRegex(run.output, /second signal/);
  t.is(run.code, 0, run.output);
  t.false(alive(run.nodePid));
});

test('the API on a missing database says to run npm run migrate', async (t) => {
  const run = await runScript('api/main.ts', [], {
    DATABASE_URL: `${SERVER_URL}/sb_missing_${uniquePrefix()}`,
    PORT: String(await freePort()),
  });
  t.is(run.code, 2, run.stderr);
  t.regex(run.stderr, /database "sb_missing_\w+" does not exist: run `npm run migrate`/);
  t.notRegex(run.stderr, /migration unknown failed/);
});

test('with MIGRATE_ON_START=false, the API and the worker refuse a database behind their migrations', async (t) => {
  // Named like the helper's databases, so that a run that dies before its teardown has it dropped.
  const name = `sb_test_${process.pid}_empty`;
  const admin = new pg.Client({ connectionString: `${SERVER_URL}/postgres` });
  await admin.connect();
  await admin.query(`create database ${name}`);
  try {
    const env = { DATABASE_URL: `${SERVER_URL}/${name}`, MIGRATE_ON_START: 'false', PORT: String(await freePort()) };
    for (const entry of ['api/main.ts', 'workers/main.ts']) {
      const run = await runScript(entry, [], env);
      t.is(run.code, 2, `${entry}: ${run.stderr}`);
      t.regex(run.stderr, /lacks \d+ migration\(s\) of this release .*run `npm run migrate`/, entry);
    }
  } finally {
    await admin.query(`drop database if exists ${name} with (force)`);
    await admin.end();
  }
});
