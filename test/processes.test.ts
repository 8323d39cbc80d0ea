import { spawn } from 'node:child_process';
import test from 'ava';
import { QUEUE_NAMES } from '../shared/config.ts';
import { freePort, uniquePrefix } from './helpers/app.ts';
import { createTestDatabase } from './helpers/db.ts';

const database = await createTestDatabase();
test.after.always(() => database.drop());

/** Starts an entry point as operators do, waits for `ready` in its logs, sends SIGTERM. */
async function runUntilSigterm(entry: string, env: Record<string, string>, ready: RegExp) {
  const child = spawn(process.execPath, [entry], {
    env: { ...process.env, DATABASE_URL: database.url, QUEUE_PREFIX: uniquePrefix(), LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (d) => {
    output += d;
  });
  child.stderr.on('data', (d) => {
    output += d;
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const started = Date.now();
  // Generous: a start under the whole suite's load on 2 cores (TypeScript stripped at each import).
  while (!ready.test(output) && child.exitCode === null && Date.now() - started < 120_000)
    await new Promise((r) => setTimeout(r, 50));
  const wasReady = ready.test(output);
  child.kill('SIGTERM');
  const code = await exited;
  return { wasReady, code, output };
}

test('npm run worker: starts its queues and exits cleanly on SIGTERM', async (t) => {
  const { wasReady, code, output } = await runUntilSigterm(
    'workers/main.ts',
    { WORKER_QUEUES: 'thumbnails' },
    /workers started/,
  );
  t.true(wasReady, output);
  t.regex(output, /"queues":\["thumbnails"\]/);
  t.is(code, 0, output);
});

test('npm run worker: WORKER_QUEUES=all runs the queues that have jobs in this build', async (t) => {
  const { wasReady, code, output } = await runUntilSigterm(
    'workers/main.ts',
    { WORKER_QUEUES: 'all' },
    /workers started/,
  );
  t.true(wasReady, output);
  // Every planned queue has jobs in this build, in QUEUE_NAMES order.
  t.true(output.includes(`"queues":${JSON.stringify(QUEUE_NAMES)}`), output);
  t.is(code, 0, output);
});

test('npm run worker: a queue this build cannot run is a clear start error', async (t) => {
  // Every planned queue has jobs in this build: the one it cannot run is one it does not know.
  const { code, output } = await runUntilSigterm('workers/main.ts', { WORKER_QUEUES: 'exports,later' }, /never/);
  t.is(code, 2);
  t.true(output.includes(`WORKER_QUEUES: unknown value "later" (allowed: all, ${QUEUE_NAMES.join(', ')})`), output);
});

test('npm run api: serves, then drains and exits cleanly on SIGTERM', async (t) => {
  const port = await freePort();
  const { wasReady, code, output } = await runUntilSigterm(
    'api/main.ts',
    { PORT: String(port), HOST: '127.0.0.1', SEED_ON_START: 'false' },
    /api listening/,
  );
  t.true(wasReady, output);
  t.regex(output, /shutting down/);
  t.is(code, 0, output);
});

test('the start lines say where a process listens (every interface by default) and a URL to reach it here', async (t) => {
  const [port, metricsPort] = [await freePort(), await freePort()];
  const api = await runUntilSigterm('api/main.ts', { PORT: String(port), SEED_ON_START: 'false' }, /api listening/);
  t.regex(
    api.output,
    new RegExp(`"url":"http://127\\.0\\.0\\.1:${port}","listen":"0\\.0\\.0\\.0:${port}"`),
    api.output,
  );
  const worker = await runUntilSigterm(
    'workers/main.ts',
    { WORKER_QUEUES: 'thumbnails', WORKER_METRICS_PORT: String(metricsPort) },
    /workers started/,
  );
  t.regex(
    worker.output,
    new RegExp(
      `"metrics":"http://127\\.0\\.0\\.1:${metricsPort}/metrics","metricsListen":"0\\.0\\.0\\.0:${metricsPort}"`,
    ),
    worker.output,
  );
});
