import { spawn } from 'node:child_process';
import test from 'ava';
import pg from 'pg';
import { freePort } from './helpers/app.ts';
import { runScript } from './helpers/cli.ts';

// Issue 36 §5: `npm run cluster:pg-replica` takes its ports, as `cluster:redis -- --port` does.

const SCRIPT = 'scripts/cluster/pg-replica.ts';

test('bad port options are usage errors', async (t) => {
  for (const [args, message] of [
    [['--replica-port', '70000'], /--replica-port 70000: give a port from 1 to 65535/],
    [['--port', 'x'], /--port x: give a port/],
    [['--port', '5433', '--primary-port', '5432'], /give one of them/],
    [['--port', '5433', '--replica-port', '5433'], /both 5433/],
  ] as const) {
    const run = await runScript(SCRIPT, args, {});
    t.is(run.code, 2, run.stderr);
    t.regex(run.stderr, message);
    t.regex(run.stderr, /usage: npm run cluster:pg-replica/);
  }
});

test('--port and --replica-port: the primary and the replica serve there; SIGTERM stops both', async (t) => {
  const [port, replicaPort] = [await freePort(), await freePort()];
  const child = spawn(process.execPath, [SCRIPT, '--port', String(port), '--replica-port', String(replicaPort)], {
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
  // initdb, migrations and a base backup: generous on a loaded machine.
  const end = Date.now() + 240_000;
  while (!/DATABASE_READ_URL=/.test(output) && child.exitCode === null && Date.now() < end)
    await new Promise((r) => setTimeout(r, 100));
  try {
    t.regex(output, new RegExp(`DATABASE_URL=postgres://postgres@127\\.0\\.0\\.1:${port}/sports`), output);
    t.regex(output, new RegExp(`DATABASE_READ_URL=postgres://postgres@127\\.0\\.0\\.1:${replicaPort}/sports`));
    const client = new pg.Client({ connectionString: `postgres://postgres@127.0.0.1:${replicaPort}/sports` });
    await client.connect();
    t.true((await client.query<{ r: boolean }>('select pg_is_in_recovery() as r')).rows[0]?.r, 'a standby');
    await client.end();
  } finally {
    child.kill('SIGTERM');
  }
  t.is(await exited, 0, output);
});
