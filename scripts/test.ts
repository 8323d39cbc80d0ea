import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { constants, tmpdir } from 'node:os';
import path from 'node:path';
import { type AvaStats, closingLine, pickStats, summarize } from './test-summary.ts';

/**
 * `npm test`: ava under c8 (coverage tables at the end), then one closing line counted from ava's
 * run statistics, which ava.config.js records in AVA_SUMMARY_FILE: `ava: N passed, N failed (...)`.
 * Arguments go to ava. Exits non-zero whenever ava did or anything counted as failed.
 */
const bin = (name: string) => path.join(import.meta.dirname, '..', 'node_modules', '.bin', name);
const work = mkdtempSync(path.join(tmpdir(), 'sb-test-'));
const summaryFile = path.join(work, 'summary.json');
const c8 = [
  '--reporter=text-summary',
  '--reporter=text',
  ...['api', 'shared', 'workers', 'scripts'].map((dir) => `--include=${dir}/**`),
  // Its own raw-coverage directory: a run started inside a run (test/test-runner.test.ts) must not
  // wipe the outer run's files, which c8 clears at start.
  `--temp-directory=${path.join(work, 'coverage')}`,
];
// Every test file, worker and CLI the tests start is a Node process that compiles the same sources:
// V8's code cache, kept between runs (Node checks each entry against its source), spares most of that.
const compileCache = path.join(import.meta.dirname, '..', 'node_modules', '.cache', 'node-compile');
const child = spawn(process.execPath, [bin('c8'), ...c8, process.execPath, bin('ava'), ...process.argv.slice(2)], {
  stdio: 'inherit',
  env: { NODE_COMPILE_CACHE: compileCache, ...process.env, AVA_SUMMARY_FILE: summaryFile },
});
// Ctrl-C reaches ava directly (same process group) and ava reports the interrupted run: stay to count it.
process.on('SIGINT', () => {});
process.on('SIGTERM', () => child.kill('SIGTERM'));
const exitCode = await new Promise<number>((resolve) => {
  child.on('close', (code, signal) => resolve(code ?? 128 + (signal ? constants.signals[signal] : 0)));
});

let stats: AvaStats | undefined;
try {
  stats = pickStats(JSON.parse(readFileSync(summaryFile, 'utf8')));
} catch {
  // No statistics: ava stopped before its run started, or was killed; summarize() counts a failure.
}
rmSync(work, { recursive: true, force: true });
const summary = summarize(stats, exitCode);
console.log(closingLine(summary));
process.exit(exitCode !== 0 ? exitCode : summary.failed > 0 ? 1 : 0);
