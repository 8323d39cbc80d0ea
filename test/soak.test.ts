import { spawn } from 'node:child_process';
import test from 'ava';
import pg from 'pg';
import { MIX } from '../scripts/soak/mix.ts';
import { SERVER_URL } from './helpers/db.ts';

// `npm run soak` as CI runs it: 30 seconds of the whole mix against the API and a worker as their
// own processes, then the pipeline and probe checks. Its own database (named like the test
// databases, so a run that dies is cleaned up by the next test run) and its own Redis prefix.
const database = `sb_test_${process.pid}_soak${Math.random().toString(36).slice(2, 6)}`;

test.after.always(async () => {
  // The soak drops its database when it passes and keeps it when it fails.
  const admin = new pg.Client({ connectionString: `${SERVER_URL}/postgres` });
  await admin.connect();
  await admin.query(`drop database if exists ${database} with (force)`);
  await admin.end();
});

/** A report line: route, count, req/s, p50, p99, errors (scripts/soak/route-stats.ts). */
function routeLine(output: string, route: string): { count: number; errors: number } | undefined {
  const escaped = route.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  const m = new RegExp(`^${escaped} +(\\d+) +\\S+ +\\S+ +\\S+ +(\\d+)$`, 'm').exec(output);
  return m ? { count: Number(m[1]), errors: Number(m[2]) } : undefined;
}

test('a 30-second soak of the whole mix, then generated requests, answers every request as expected and the workers catch up', async (t) => {
  const child = spawn(process.execPath, ['scripts/soak.ts'], {
    env: {
      ...process.env,
      SOAK_DURATION_S: '30',
      SOAK_CONCURRENCY: '4',
      SOAK_PLACES: '2000',
      SOAK_PARTNERS: '100',
      SOAK_USERS: '4',
      // The generated requests' own test is test/robustness-hostile-input.test.ts: here, that the phase runs.
      SOAK_GENERATED_REQUESTS: '200',
      // How long the workers may take to catch up is no budget here: a deadline that only catches a hang.
      SOAK_DRAIN_S: '120',
      SOAK_DATABASE_URL: `${SERVER_URL}/${database}`,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (d) => {
    output += d;
  });
  child.stderr.on('data', (d) => {
    output += d;
  });
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  t.log(output.slice(-6_000));

  t.is(code, 0);
  for (const route of MIX.flatMap((k) => k.routes)) {
    const line = routeLine(output, route);
    t.truthy(line, `no report line for ${route}`);
    t.true((line?.count ?? 0) > 0, `${route} was never requested`);
    t.is(line?.errors, 0, `errors on ${route}`);
  }
  t.regex(output, /^all routes +\d+ +\S+ +0$/m);
  t.regex(output, /^200 sent in \d+ s/m);
  t.regex(output, /^errors: 0$/m, 'the generated requests');
  t.regex(output, /^outbox: every row finished/m);
  t.regex(output, /^probes: \/health and \/ready answer 200$/m);
  t.regex(output, /^soak: PASS, no error$/m);
});
