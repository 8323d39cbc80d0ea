import { writeFileSync } from 'node:fs';

/**
 * The closing line of `npm test`, counted from ava's own run statistics (the `stats` state
 * changes ava's reporters read), not from its human-readable output.
 */

/** The counters of ava 7's run status (lib/run-status.js) that the closing line needs. */
export interface AvaStats {
  declaredTests: number;
  passedTests: number;
  passedKnownFailingTests: number;
  failedTests: number;
  failedHooks: number;
  /** Selected tests that never passed or failed: still running at a timeout, or never run. */
  remainingTests: number;
  timedOutTests: number;
  skippedTests: number;
  todoTests: number;
  uncaughtExceptions: number;
  unhandledRejections: number;
  unexpectedProcessExits: number;
  failedWorkers: number;
  internalErrors: number;
  sharedWorkerErrors: number;
}

const COUNTERS: readonly (keyof AvaStats)[] = [
  'declaredTests',
  'passedTests',
  'passedKnownFailingTests',
  'failedTests',
  'failedHooks',
  'remainingTests',
  'timedOutTests',
  'skippedTests',
  'todoTests',
  'uncaughtExceptions',
  'unhandledRejections',
  'unexpectedProcessExits',
  'failedWorkers',
  'internalErrors',
  'sharedWorkerErrors',
];

export interface RunSummary {
  passed: number;
  failed: number;
  skipped: number;
  todo: number;
  /** What the failures are, e.g. `1 hook`, `4 timed out`; empty when none failed. */
  reasons: string[];
}

const plural = (count: number, one: string, many = `${one}s`) => `${count} ${count === 1 ? one : many}`;

/**
 * Counts a run. Everything that makes ava fail the run counts as failed: failed tests and hooks,
 * tests that timed out or never ran, uncaught exceptions, unhandled rejections, process exits,
 * crashed workers, internal errors. A run that exited non-zero is never reported as `0 failed`,
 * and neither is a run whose statistics were not recorded.
 */
export function summarize(stats: AvaStats | undefined, exitCode: number): RunSummary {
  if (!stats) {
    return {
      passed: 0,
      failed: 1,
      skipped: 0,
      todo: 0,
      reasons: [`ava exited with status ${exitCode} before reporting any result`],
    };
  }
  const notRun = Math.max(0, stats.remainingTests - stats.timedOutTests);
  const parts: [number, string][] = [
    [stats.failedTests, plural(stats.failedTests, 'test')],
    [stats.failedHooks, plural(stats.failedHooks, 'hook')],
    [stats.timedOutTests, `${stats.timedOutTests} timed out`],
    [notRun, `${notRun} never ran`],
    [stats.uncaughtExceptions, plural(stats.uncaughtExceptions, 'uncaught exception')],
    [stats.unhandledRejections, plural(stats.unhandledRejections, 'unhandled rejection')],
    [stats.unexpectedProcessExits, plural(stats.unexpectedProcessExits, 'process.exit() call')],
    [stats.failedWorkers, plural(stats.failedWorkers, 'crashed test file')],
    [
      stats.internalErrors + stats.sharedWorkerErrors,
      plural(stats.internalErrors + stats.sharedWorkerErrors, 'internal error'),
    ],
    [stats.declaredTests === 0 ? 1 : 0, 'no tests found'],
  ];
  const counted = parts.filter(([count]) => count > 0);
  let failed = counted.reduce((sum, [count]) => sum + count, 0);
  const reasons = counted.map(([, label]) => label);
  if (failed === 0 && exitCode !== 0) {
    failed = 1;
    reasons.push(`ava exited with status ${exitCode}`);
  }
  return {
    passed: stats.passedTests + stats.passedKnownFailingTests,
    failed,
    skipped: stats.skippedTests,
    todo: stats.todoTests,
    reasons,
  };
}

/** `ava: 150 passed, 6 failed (1 hook, 4 timed out, 1 uncaught exception), 2 skipped` */
export function closingLine(summary: RunSummary): string {
  let line = `ava: ${summary.passed} passed, ${summary.failed} failed`;
  if (summary.reasons.length > 0) line += ` (${summary.reasons.join(', ')})`;
  if (summary.skipped > 0) line += `, ${summary.skipped} skipped`;
  if (summary.todo > 0) line += `, ${summary.todo} todo`;
  return line;
}

/** Keeps only the counters (ava's stats also hold per-file maps). */
export function pickStats(value: Record<string, unknown>): AvaStats {
  const stats = {} as AvaStats;
  for (const key of COUNTERS) {
    const count = value[key];
    stats[key] = typeof count === 'number' ? count : 0;
  }
  return stats;
}

/**
 * ava's `observeRun` hook (ava.config.js): keeps the latest statistics and writes them to `file`
 * when ava's process exits, however it exits (end of run, Ctrl-C, a crash of its reporter).
 */
export function recordRun(events: AsyncIterable<{ type: string; stats?: Record<string, unknown> }>, file: string) {
  let latest: AvaStats | undefined;
  process.once('exit', () => {
    if (latest) writeFileSync(file, JSON.stringify(latest));
  });
  void (async () => {
    for await (const event of events) {
      if (event.type === 'stats' && event.stats) latest = pickStats(event.stats);
    }
  })();
}
