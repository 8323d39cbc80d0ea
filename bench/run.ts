/**
 * `npm run bench [name...]`: runs the benchmarks (all by default) one after the other. Each prints
 * its absolute numbers, its data size and side-by-side ratios; the exit code is 1 if a goal failed.
 * Benchmarks never run in the test suite.
 */
const BENCHMARKS: Record<string, () => Promise<{ failed: boolean }>> = {
  'places-search': async () => (await import('./places-search.ts')).run(),
  'places-balanced': async () => (await import('./places-balanced.ts')).run(),
  'partners-search': async () => (await import('./partners-search.ts')).run(),
  'catalogue-search': async () => (await import('./catalogue-search.ts')).run(),
  'tracking-export': async () => (await import('./tracking-export.ts')).run(),
  'tracking-ingest': async () => (await import('./tracking-ingest.ts')).run(),
  'tracking-records': async () => (await import('./tracking-records.ts')).run(),
  'tracking-sumups': async () => (await import('./tracking-sumups.ts')).run(),
  'tracking-progress': async () => (await import('./tracking-progress.ts')).run(),
  'tracking-bulk-import': async () => (await import('./tracking-bulk-import.ts')).run(),
  'tracking-streams': async () => (await import('./tracking-streams.ts')).run(),
  'tracking-feed': async () => (await import('./tracking-feed.ts')).run(),
  'slow-clients': async () => (await import('./slow-clients.ts')).run(),
  webhooks: async () => (await import('./webhooks.ts')).run(),
};

const names = process.argv.slice(2);
const unknown = names.filter((n) => !BENCHMARKS[n]);
if (unknown.length) {
  console.error(`unknown benchmark(s): ${unknown.join(', ')}; available: ${Object.keys(BENCHMARKS).join(', ')}`);
  process.exit(2);
}
let failed = false;
for (const name of names.length ? names : Object.keys(BENCHMARKS)) {
  const started = Date.now();
  console.log(`\n##### ${name}`);
  const result = await (BENCHMARKS[name] as () => Promise<{ failed: boolean }>)();
  console.log(`##### ${name}: ${result.failed ? 'FAIL' : 'PASS'} (${((Date.now() - started) / 1000).toFixed(0)} s)`);
  failed ||= result.failed;
}
process.exit(failed ? 1 : 0);
