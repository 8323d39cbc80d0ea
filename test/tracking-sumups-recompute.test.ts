import test from 'ava';
import { startWorkers } from '../workers/worker.ts';
import { testConfig } from './helpers/app.ts';
import { runScript } from './helpers/cli.ts';
import { createTestDatabase } from './helpers/db.ts';
import { insertTrackingUser } from './helpers/records.ts';
import { applyNow, insertRawActivity, oracleRows, rollupRows } from './helpers/sumups.ts';

const database = await createTestDatabase();
const { db } = database;
test.after.always(() => database.drop());

const runCli = (args: string[]) =>
  runScript('scripts/records-recompute.ts', args, { DATABASE_URL: database.url, MIGRATE_ON_START: 'false' });

test.serial(
  'npm run records:recompute rebuilds the statistics by period: equal to the sums of the activities',
  async (t) => {
    const alice = await insertTrackingUser(db);
    const bob = await insertTrackingUser(db);
    await db.updateTable('tracking_users').set({ timezone: 'Asia/Kathmandu' }).where('id', '=', alice).execute();
    // Activities stored without their jobs (as before this feature): no statistics yet.
    for (let i = 0; i < 6; i++)
      await insertRawActivity(db, {
        userId: i % 2 === 0 ? alice : bob,
        sportId: i % 3 === 0 ? 121 : 385,
        startdate: new Date(Date.UTC(2025, 11, 28 + i, 20, 30)),
        duration: 600 * (i + 1),
        summaries: { '5': 1000.1 * (i + 1), '18': i, '23': 0.3 },
      });
    t.deepEqual(await rollupRows(db, [alice, bob]), []);
    const workers = await startWorkers(
      testConfig({ DATABASE_URL: database.url, WORKER_QUEUES: 'records', OUTBOX_POLL_MS: '20' }),
    );
    t.teardown(() => workers.close());

    const one = await runCli(['--user', alice, '--wait']);
    t.is(one.code, 0, one.stderr);
    t.regex(one.stdout, /\n {2}1 statistics rebuild jobs enqueued \(one per user\)\n/);
    t.deepEqual(await rollupRows(db, [alice]), await oracleRows(db, [alice]));
    t.deepEqual(await rollupRows(db, [bob]), [], "only alice's");

    // Rows gone wrong (a value edited by hand, a row lost): --all sets everyone's right.
    await db.updateTable('user_sumups').set({ value: '12345' }).where('user_id', '=', alice).execute();
    await db.deleteFrom('user_sumups').where('user_id', '=', alice).where('type', '=', 'week').execute();
    const all = await runCli(['--all', '--wait']);
    t.is(all.code, 0, all.stderr);
    t.regex(all.stdout, /\n {2}2 statistics rebuild jobs enqueued \(one per user\)\n/);
    const expected = await oracleRows(db, [alice, bob]);
    t.true(expected.length > 0);
    t.deepEqual(await rollupRows(db, [alice, bob]), expected);

    // The rows the activity jobs keep and the rows a rebuild writes are the same rows.
    const before = await rollupRows(db, [alice, bob]);
    const ids = await db.selectFrom('activities').select(['id', 'user_id']).execute();
    for (const a of ids) t.is(await applyNow(db, a.id, a.user_id), 'unchanged');
    t.deepEqual(await rollupRows(db, [alice, bob]), before);
  },
);
