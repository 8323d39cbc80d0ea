import { recordRun } from './scripts/test-summary.ts';

// Set by `npm test` (scripts/test.ts): ava's run statistics are written there for the closing line.
const summaryFile = process.env.AVA_SUMMARY_FILE;

// Node 24 runs the TypeScript sources directly (type stripping); no loader needed.
export default {
  files: ['test/**/*.test.ts'],
  extensions: { ts: 'module' },
  // sharp and other native modules must not load inside worker threads.
  workerThreads: false,
  concurrency: 3,
  // An inactivity watchdog (reset by every test result): the robustness walk alone takes about a minute.
  timeout: '180s',
  environmentVariables: { NODE_ENV: 'test', LOG_LEVEL: 'silent' },
  // observeRun is how ava 7 hands its run events to code outside its reporters (an experiment,
  // announced by one line at the start of the run); test/test-runner.test.ts checks it still works.
  ...(summaryFile && {
    nonSemVerExperiments: { observeRunsFromConfig: true },
    observeRun: ({ events }) => recordRun(events, summaryFile),
  }),
};
