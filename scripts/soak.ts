import { cpus, loadavg } from 'node:os';
import { generatedPhase } from './soak/generated-phase.ts';
import { mixPhase } from './soak/mix.ts';
import type { Phase } from './soak/phase.ts';
import { checkOutbox, checkProbes } from './soak/pipeline.ts';
import { soakSettings } from './soak/settings.ts';
import { type SoakSystem, startSystem } from './soak/system.ts';
import { buildWorld } from './soak/world.ts';

/**
 * `npm run soak`: the API and one worker as their own processes on loopback, on a database, Redis
 * prefix and storage folder of their own, under a realistic mix of requests for SOAK_DURATION_S
 * seconds at SOAK_CONCURRENCY requests in flight (scripts/soak/mix.ts), then SOAK_GENERATED_REQUESTS
 * requests generated from /openapi.json (scripts/soak/generated-phase.ts). Prints per route the
 * count, throughput, p50, p99 and errors, then checks that the workers caught up (every outbox row done)
 * and that /health and /ready answer. Exit code 1 on any error: a 5xx, a network error or timeout,
 * a status other than the one expected, a failed or unfinished job. README, "Soak".
 */

/** The phases, one after the other against the same system and data. */
const PHASES: Phase[] = [mixPhase, generatedPhase];

const log = (s: string) => console.log(s);
const settings = soakSettings();
log(
  `soak on ${settings.databaseUrl.replace(/\/\/[^@]*@/, '//')}: ${settings.durationS} s at concurrency ${settings.concurrency}; ` +
    `${cpus().length} CPUs, load average ${loadavg()[0]?.toFixed(1)}`,
);
let system: SoakSystem | undefined;
let errors = 0;
try {
  const started = Date.now();
  system = await startSystem(settings.databaseUrl, settings.concurrency + 4);
  log(
    `database made, API ${system.api.url} (pid ${system.api.child.pid}) and worker (pid ${system.worker.child.pid}) ` +
      `started in ${((Date.now() - started) / 1000).toFixed(0)} s`,
  );
  const world = await buildWorld(system, settings, log);
  for (const phase of PHASES) {
    log(`\n=== ${phase.name}: ${phase.describe(world)}`);
    const stats = await phase.run(world);
    for (const line of stats.report()) log(line);
    errors += stats.errors;
  }
  log('\n=== after the load');
  for (const check of [
    await checkOutbox(system.db, settings.drainS),
    await checkProbes(system.api.url, settings.requestTimeoutMs),
  ]) {
    for (const line of check.lines) log(line);
    errors += check.errors;
  }
  if (system.worker.child.exitCode !== null) {
    log(`the worker process exited (code ${system.worker.child.exitCode}) during the run: ERROR`);
    errors++;
  }
} catch (error) {
  console.error(error);
  errors++;
} finally {
  if (errors > 0 && system) {
    // The worker logs every job; its warnings and errors (pino levels 40 and up) say what went wrong.
    const problems = system.worker.output.split('\n').filter((l) => /"level":[4-6]\d/.test(l));
    log(
      problems.length
        ? `worker warnings and errors:\n${problems.slice(-20).join('\n')}`
        : 'the worker logged no warning or error',
    );
  }
  // A failed run keeps its database to look into; the next run drops it.
  await system?.stop(errors > 0);
}
log(`\nsoak: ${errors === 0 ? 'PASS, no error' : `FAIL, ${errors} error(s)`}`);
process.exit(errors === 0 ? 0 : 1);
