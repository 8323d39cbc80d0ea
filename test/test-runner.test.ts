import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import test from 'ava';
import { type AvaStats, closingLine, summarize } from '../scripts/test-summary.ts';

const root = path.join(import.meta.dirname, '..');

const stats = (counts: Partial<AvaStats>): AvaStats => ({
  declaredTests: 10,
  passedTests: 0,
  passedKnownFailingTests: 0,
  failedTests: 0,
  failedHooks: 0,
  remainingTests: 0,
  timedOutTests: 0,
  skippedTests: 0,
  todoTests: 0,
  uncaughtExceptions: 0,
  unhandledRejections: 0,
  unexpectedProcessExits: 0,
  failedWorkers: 0,
  internalErrors: 0,
  sharedWorkerErrors: 0,
  ...counts,
});

const line = (counts: Partial<AvaStats> | undefined, exitCode: number) =>
  closingLine(summarize(counts && stats(counts), exitCode));

test('a passing run', (t) => {
  t.is(line({ passedTests: 9, passedKnownFailingTests: 1 }, 0), 'ava: 10 passed, 0 failed');
  t.is(line({ passedTests: 8, skippedTests: 1, todoTests: 1 }, 0), 'ava: 8 passed, 0 failed, 1 skipped, 1 todo');
});

test('failed hooks, timeouts, tests that never ran and uncaught exceptions count as failed', (t) => {
  t.is(line({ passedTests: 1, failedHooks: 1, remainingTests: 2 }, 1), 'ava: 1 passed, 3 failed (1 hook, 2 never ran)');
  t.is(
    line({ passedTests: 150, failedHooks: 1, remainingTests: 4, timedOutTests: 4 }, 1),
    'ava: 150 passed, 5 failed (1 hook, 4 timed out)',
  );
  t.is(
    line({ passedTests: 3, failedTests: 2, uncaughtExceptions: 1, failedWorkers: 1 }, 1),
    'ava: 3 passed, 4 failed (2 tests, 1 uncaught exception, 1 crashed test file)',
  );
  t.is(
    line({ unhandledRejections: 2, unexpectedProcessExits: 1, internalErrors: 1 }, 1),
    'ava: 0 passed, 4 failed (2 unhandled rejections, 1 process.exit() call, 1 internal error)',
  );
  t.is(line({ declaredTests: 0 }, 1), 'ava: 0 passed, 1 failed (no tests found)');
});

test('a failed run never says 0 failed', (t) => {
  t.is(line({ passedTests: 5 }, 1), 'ava: 5 passed, 1 failed (ava exited with status 1)');
  t.is(line(undefined, 1), 'ava: 0 passed, 1 failed (ava exited with status 1 before reporting any result)');
  // Statistics lost although ava said success: still a failure (the recording is broken).
  t.is(line(undefined, 0), 'ava: 0 passed, 1 failed (ava exited with status 0 before reporting any result)');
});

/** Runs `npm test`'s runner (scripts/test.ts, with c8) on a fixture suite; its exit code and last line. */
async function runFixtureSuite(name: string): Promise<{ code: number; last: string }> {
  const config = path.join('test', 'fixtures', name, 'ava.config.js');
  try {
    const { stdout } = await promisify(execFile)(process.execPath, ['scripts/test.ts', '--config', config], {
      cwd: root,
    });
    return { code: 0, last: stdout.trim().split('\n').at(-1) ?? '' };
  } catch (error) {
    const { code, stdout } = error as { code: number; stdout: string };
    return { code, last: stdout.trim().split('\n').at(-1) ?? '' };
  }
}

test('the runner reports a suite failing in a before hook as failed', async (t) => {
  const { code, last } = await runFixtureSuite('failing-hook');
  t.not(code, 0);
  t.is(last, 'ava: 1 passed, 3 failed (1 hook, 2 never ran)');
});

test('the runner reports a test stopped by the timeout as failed', async (t) => {
  const { code, last } = await runFixtureSuite('timeout');
  t.not(code, 0);
  t.is(last, 'ava: 1 passed, 1 failed (1 timed out)');
});
