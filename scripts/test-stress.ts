import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { availableParallelism, loadavg } from 'node:os';
import path from 'node:path';
import { usageError } from '../shared/runtime/cli.ts';

/**
 * `npm run test:stress`: the README's test command (`npm test`) several times in a row while every
 * core is held busy, to prove the suite does not depend on a quiet machine. The load is stress-ng
 * from Debian (installed with apt-get when missing and run as root, like scripts/ensure-system.ts),
 * else one Node busy loop per core. Prints each run's outcome and wall time; exits 1 when any failed.
 */

const USAGE = `usage: npm run test:stress -- [--runs N] [test files or ava options]
  runs \`npm test\` N times in a row (default 3) while ${availableParallelism()} busy loops hold every core;
  prints passed or failed and the wall time of each run, and exits 1 if any run failed.`;

// `--runs N` is ours; everything else (test files, ava options) goes to `npm test`.
const args = process.argv.slice(2);
let runsArg = '3';
const avaArgs: string[] = [];
for (let i = 0; i < args.length; i++) {
  const arg = args[i] as string;
  if (arg === '--runs') runsArg = args[++i] ?? '';
  else if (arg.startsWith('--runs=')) runsArg = arg.slice('--runs='.length);
  else avaArgs.push(arg);
}
const runs = Number(runsArg);
if (!Number.isInteger(runs) || runs < 1) usageError(USAGE, `--runs ${runsArg}: give a whole number from 1`);

const cores = availableParallelism();

const onPath = (command: string) =>
  (process.env.PATH ?? '').split(path.delimiter).some((dir) => dir !== '' && existsSync(path.join(dir, command)));

/** stress-ng on the PATH, installed first when we may; false when it is not to be had. */
function stressNg(): boolean {
  if (onPath('stress-ng')) return true;
  if (process.getuid?.() !== 0 || !existsSync('/usr/bin/apt-get')) return false;
  console.log('test:stress: installing stress-ng with apt-get');
  const install = ['install', '-y', '-q', '--no-install-recommends', '-o', 'DPkg::Lock::Timeout=600', 'stress-ng'];
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  for (const steps of [[install], [['update', '-q'], install]]) {
    try {
      for (const args of steps) execFileSync('apt-get', args, { stdio: 'inherit', env });
      if (onPath('stress-ng')) return true;
    } catch {}
  }
  return false;
}

/** Holds every core busy until stop(). */
function startLoad(): { what: string; stop: () => void } {
  let children: ChildProcess[];
  let what: string;
  if (stressNg()) {
    children = [spawn('stress-ng', ['--cpu', String(cores), '--quiet'], { stdio: 'ignore' })];
    what = `stress-ng --cpu ${cores}`;
  } else {
    children = Array.from({ length: cores }, () => spawn(process.execPath, ['-e', 'for (;;) {}'], { stdio: 'ignore' }));
    what = `${cores} Node busy loops`;
  }
  const stop = () => {
    for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
  };
  process.once('exit', stop);
  return { what, stop };
}

/** One `npm test`: its output goes through; its closing line (`ava: N passed, N failed`) is kept. */
function npmTest(): Promise<{ code: number; closing: string }> {
  return new Promise((resolve) => {
    const child = spawn('npm', ['test', ...(avaArgs.length > 0 ? ['--', ...avaArgs] : [])], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let tail = '';
    child.stdout.on('data', (chunk: Buffer) => {
      process.stdout.write(chunk);
      tail = (tail + chunk.toString()).slice(-4_000);
    });
    child.on('close', (code, signal) => {
      const closing = tail.match(/^ava: .*$/m)?.[0] ?? 'no closing line';
      resolve({ code: code ?? (signal ? 1 : 0), closing });
    });
  });
}

const minutes = (ms: number) =>
  `${Math.floor(ms / 60_000)}m${String(Math.round((ms % 60_000) / 1000)).padStart(2, '0')}s`;

const load = startLoad();
process.on('SIGINT', () => {
  load.stop();
  process.exit(130);
});
process.on('SIGTERM', () => {
  load.stop();
  process.exit(143);
});
console.log(`test:stress: ${runs} runs of npm test while ${load.what} hold the ${cores} cores`);
const results: string[] = [];
let failed = 0;
for (let run = 1; run <= runs; run++) {
  const started = Date.now();
  const { code, closing } = await npmTest();
  const ok = code === 0;
  if (!ok) failed++;
  const line = `run ${run}/${runs}: ${ok ? 'passed' : 'FAILED'} in ${minutes(Date.now() - started)} (${closing}; load average ${loadavg()[0]?.toFixed(1)})`;
  results.push(line);
  console.log(`test:stress: ${line}`);
}
load.stop();
console.log(`\ntest:stress, ${load.what} on ${cores} cores:\n${results.join('\n')}`);
console.log(failed === 0 ? `test:stress: all ${runs} runs passed` : `test:stress: ${failed} of ${runs} runs failed`);
process.exit(failed === 0 ? 0 : 1);
