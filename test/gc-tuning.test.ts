import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import test from 'ava';

const run = promisify(execFile);
const TUNING = pathToFileURL(new URL('../shared/runtime/gc-tuning.ts', import.meta.url).pathname).href;

/**
 * A process that allocates 1 GB of short-lived 1 MB Buffers (as the API does with request bodies
 * and driver messages) and prints how many full (major) collections that cost.
 */
async function majorCollections(tuned: boolean): Promise<number> {
  const script = `
    import { PerformanceObserver, constants } from 'node:perf_hooks';
    ${tuned ? `await import(${JSON.stringify(TUNING)});` : ''}
    let major = 0;
    new PerformanceObserver((list) => {
      for (const e of list.getEntries()) if (e.detail?.kind === constants.NODE_PERFORMANCE_GC_MAJOR) major++;
    }).observe({ entryTypes: ['gc'] });
    for (let i = 0; i < 1000; i++) {
      Buffer.allocUnsafe(1 << 20)[0] = i;
      if (i % 50 === 0) await new Promise((r) => setImmediate(r));
    }
    await new Promise((r) => setTimeout(r, 50));
    console.log(major);`;
  const { stdout, stderr } = await run(process.execPath, ['--input-type=module', '-e', script]);
  // V8 reports a flag it does not know on stderr and goes on: a Node upgrade must not hide that.
  if (stderr.includes('unrecognized flag')) throw new Error(stderr);
  return Number(stdout.trim());
}

test('gc-tuning: short-lived Buffers no longer force a full collection every 64 MB', async (t) => {
  const [untuned, tuned] = await Promise.all([majorCollections(false), majorCollections(true)]);
  t.log(`major collections for 1 GB of short-lived 1 MB Buffers: ${untuned} untuned, ${tuned} tuned`);
  t.true(untuned >= 4, `V8's default counts them against its 64 MB external limit (${untuned})`);
  t.true(tuned <= 2, `tuned: ${tuned}`);
});

test('gc-tuning: every process entry point imports it before anything else', async (t) => {
  for (const entry of ['api/main.ts', 'workers/main.ts', 'scripts/start.ts']) {
    const text = await readFile(new URL(`../${entry}`, import.meta.url), 'utf8');
    const firstImport = text.split('\n').find((line) => line.startsWith('import '));
    t.is(firstImport, "import '../shared/runtime/gc-tuning.ts';", entry);
  }
});
