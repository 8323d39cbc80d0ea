import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import test from 'ava';
import { loadConfig } from '../shared/config.ts';

// Issue 36 §2: the systemd units operators install (ops/systemd/) run node itself, stop it with
// SIGTERM and give it longer than its drain before SIGKILL.

const DIR = fileURLToPath(new URL('../ops/systemd/', import.meta.url));
const analyze = spawnSync('systemd-analyze', ['--version']).status === 0;

/** `[Section] Key=value` lines of a unit file, each key's values in order. */
function parseUnit(file: string): Map<string, string[]> {
  const entries = new Map<string, string[]>();
  let section = '';
  for (const raw of readFileSync(path.join(DIR, file), 'utf8').split('\n')) {
    const line = raw.trim();
    if (!line || line.startsWith('#')) continue;
    const header = /^\[(\w+)\]$/.exec(line);
    if (header) section = header[1] as string;
    else {
      const eq = line.indexOf('=');
      const key = `${section}.${line.slice(0, eq)}`;
      entries.set(key, [...(entries.get(key) ?? []), line.slice(eq + 1)]);
    }
  }
  return entries;
}

/** SHUTDOWN_TIMEOUT_MS by default, plus the 2 s onShutdown gives the closing itself. */
const drainSeconds = loadConfig({}).SHUTDOWN_TIMEOUT_MS / 1000 + 2;

for (const [file, entry] of [
  ['sports-api.service', 'api/main.ts'],
  ['sports-worker@.service', 'workers/main.ts'],
] as const) {
  test(`${file}: node itself, SIGTERM, restarted on failure, stop timeout above the drain`, (t) => {
    const unit = parseUnit(file);
    const one = (key: string) => unit.get(key)?.at(-1);
    t.is(one('Service.ExecStart'), `/usr/bin/env node ${entry}`, 'no npm between systemd and node');
    t.is(one('Service.KillSignal'), 'SIGTERM');
    t.is(one('Service.KillMode'), 'mixed', 'SIGTERM to node alone, SIGKILL to all past the timeout');
    t.is(one('Service.Restart'), 'on-failure');
    t.is(one('Service.RestartPreventExitStatus'), '2', 'a bad setting is not restarted in a loop');
    t.true(Number(one('Service.TimeoutStopSec')) > drainSeconds);
    t.truthy(one('Service.EnvironmentFile'));
    t.is(one('Install.WantedBy'), 'multi-user.target');
  });
}

test('sports-worker@.service: the instance names the queues; the API migrates, workers only check', (t) => {
  const env = parseUnit('sports-worker@.service').get('Service.Environment') ?? [];
  t.true(env.includes('WORKER_QUEUES=%I'));
  t.true(env.includes('MIGRATE_ON_START=false'));
});

test('systemd-analyze verify finds nothing to say about the units (when systemd is installed)', (t) => {
  if (!analyze) {
    t.log('systemd-analyze not found (Debian package systemd): the parse above stands');
    t.pass();
    return;
  }
  // A template is verified as one of its instances.
  const dir = mkdtempSync(path.join(tmpdir(), 'sb-units-'));
  try {
    const api = path.join(dir, 'sports-api.service');
    const worker = path.join(dir, 'sports-worker@records.service');
    copyFileSync(path.join(DIR, 'sports-api.service'), api);
    copyFileSync(path.join(DIR, 'sports-worker@.service'), worker);
    const run = spawnSync('systemd-analyze', ['verify', api, worker], { encoding: 'utf8' });
    t.is(run.status, 0, run.stderr);
    // verify exits 0 on directives it ignores (a misspelt signal, a bad time): it must say nothing.
    t.is(run.stdout + run.stderr, '');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('docker-compose.yml: the API and the worker run node itself, with a stop grace above the drain', (t) => {
  const compose = readFileSync(new URL('../docker-compose.yml', import.meta.url), 'utf8');
  for (const [service, entry] of [
    ['api', 'api/main.ts'],
    ['worker', 'workers/main.ts'],
  ]) {
    const block = new RegExp(`^  ${service}:\\n((?:    .*\\n|\\n)*)`, 'm').exec(compose)?.[1] ?? '';
    t.true(block.includes(`command: ["node", "${entry}"]`), service);
    t.true(Number(/stop_grace_period: (\d+)s/.exec(block)?.[1]) > drainSeconds, service);
  }
});
