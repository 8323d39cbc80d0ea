import { readdir, readFile } from 'node:fs/promises';
import test from 'ava';
import { ConfigError } from '../shared/config.ts';
import { testConfig } from './helpers/app.ts';
import { createTestDatabase } from './helpers/db.ts';
import { WorkerProcess } from './helpers/worker-process.ts';

// WORKER_NICE (docs/operations.md): the worker process runs at that nice value, its threads too
// (they inherit it from the thread that starts them); a value outside 0-19 stops the start.

const database = await createTestDatabase();
test.after.always(database.drop);

/** The nice value of each thread of process `pid` (field 19 of /proc/<pid>/task/<tid>/stat). */
async function threadNices(pid: number): Promise<number[]> {
  const tasks = await readdir(`/proc/${pid}/task`);
  const nices: number[] = [];
  for (const tid of tasks) {
    const stat = await readFile(`/proc/${pid}/task/${tid}/stat`, 'utf8').catch(() => '');
    // The command name may hold spaces: the fields after it follow its closing parenthesis.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    if (fields.length > 17) nices.push(Number(fields[16]));
  }
  return nices;
}

test('a worker started with WORKER_NICE runs at that nice value, the threads it starts too', async (t) => {
  const config = testConfig({ DATABASE_URL: database.url });
  const worker = WorkerProcess.of(config, { WORKER_QUEUES: 'imports', WORKER_NICE: '7' });
  t.teardown(() => worker.stop());
  await worker.started();
  const pid = worker.child.pid as number;
  const nices = await threadNices(pid);
  t.is(nices[0], 7, 'the main thread');
  t.log(`threads' nice values: ${nices.join(' ')}`);
  // V8's platform threads start before any code runs (nice 0); the threads started after the
  // main one was reniced (libuv's pool, the import threads) inherit its value.
  t.true(
    nices.slice(1).some((n) => n === 7),
    'threads started afterwards inherit it',
  );
  t.deepEqual(
    (await threadNices(process.pid)).filter((n) => n === 7),
    [],
    'this test process is untouched',
  );
});

test('WORKER_NICE outside 0-19 is refused at the start, naming the variable', (t) => {
  for (const value of ['-1', '20', 'high'])
    t.throws(() => testConfig({ WORKER_NICE: value }), { instanceOf: ConfigError, message: /WORKER_NICE/ });
  t.is(testConfig({ WORKER_NICE: '19' }).WORKER_NICE, 19);
});
