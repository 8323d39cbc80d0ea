// Node 24 runs the TypeScript sources directly (type stripping); no loader needed.
export default {
  files: ['test/**/*.test.ts'],
  extensions: { ts: 'module' },
  // sharp and other native modules must not load inside worker threads.
  workerThreads: false,
  concurrency: 3,
  timeout: '60s',
  environmentVariables: { NODE_ENV: 'test', LOG_LEVEL: 'silent' },
};
