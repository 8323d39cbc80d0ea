import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import test from 'ava';
import { Queue } from 'bullmq';
import { sql } from 'kysely';
import { createRedis } from '../shared/queue/connection.ts';
import { relayOutboxBatch } from '../shared/queue/outbox.ts';
import { QueueSet } from '../shared/queue/queues.ts';
import { DATATYPE } from '../shared/tracking/activities/data.ts';
import { enqueueRecompute, recomputeProgress } from '../shared/tracking/records/recompute-requests.ts';
import { DEFAULT_RECORDS_SETTINGS } from '../shared/tracking/records/settings.ts';
import { startWorkers } from '../workers/worker.ts';
import { testConfig } from './helpers/app.ts';
import { runScript } from './helpers/cli.ts';
import { createTestDatabase } from './helpers/db.ts';
import { insertActivity, insertTrackingUser } from './helpers/records.ts';

const database = await createTestDatabase();
const { db } = database;
test.after.always(() => database.drop());

const RUNNING = 121;

const runCli = (args: string[], env: Record<string, string> = {}) =>
  runScript('scripts/records-recompute.ts', args, { DATABASE_URL: database.url, MIGRATE_ON_START: 'false', ...env });

/** A running activity of `seconds` at `speed` m/s, one sample per second. */
async function run(userId: string, day: number, seconds: number, speed: number): Promise<string> {
  const elapsed = Array.from({ length: seconds + 1 }, (_, i) => i);
  return insertActivity(db, {
    userId,
    sportId: RUNNING,
    startdate: new Date(Date.UTC(2026, 1, day)),
    summaries: { [DATATYPE.DISTANCE]: seconds * speed },
    distance: { elapsed, metres: elapsed.map((i) => i * speed) },
  });
}

const recordsOf = (userId: string) =>
  db
    .selectFrom('user_records')
    .selectAll()
    .where('user_id', '=', userId)
    .orderBy('type')
    .orderBy('datatype_id')
    .execute();

test('usage: --user or --all, not both; an unknown option or user is refused', async (t) => {
  for (const args of [[], ['--user', 'abc', '--all'], ['--all', '--fast']]) {
    const r = await runCli(args);
    t.is(r.code, 2, args.join(' '));
    t.regex(r.stderr, /usage: npm run records:recompute -- \(--user <user id> \| --all\)/);
  }
  for (const [args, problem] of [
    [['--all', '--sport', 'run'], /--sport: not a sport id: run/],
    [['--all', '--since', '2024-13-45'], /--since: not a date/],
    [['--all', '--until', 'yesterday'], /--until: not a date/],
    [['--all', '--since', '2024-02-01', '--until', '2024-01-01'], /--until: must come after --since/],
  ] as const) {
    const r = await runCli([...args]);
    t.is(r.code, 2, args.join(' '));
    t.regex(r.stderr, problem);
    t.regex(r.stderr, /\[--sport <id>\[,<id>\.\.\.\]\] \[--since <date>\] \[--until <date>\]/);
  }
  const noSport = await runCli(['--all', '--sport', '999999']);
  t.is(noSport.code, 1);
  t.regex(noSport.stderr, /no sport 999999/);
  const unknown = await runCli(['--user', 'nobody']);
  t.is(unknown.code, 1);
  t.regex(unknown.stderr, /no tracking user nobody/);
  const badSettings = await runCli(['--all'], { RECORDS_FAMILIES_FILE: '/nonexistent/records.json' });
  t.is(badSettings.code, 2);
  t.regex(badSettings.stderr, /RECORDS_FAMILIES_FILE: cannot read/);
});

test.serial('deterministic job ids: enqueueing twice before the workers run makes one job per activity', async (t) => {
  const user = await insertTrackingUser(db);
  for (let day = 1; day <= 3; day++) await run(user, day, 300, 3);
  const config = testConfig({ DATABASE_URL: database.url });
  const redis = createRedis(config.REDIS_URL, 'producer');
  await new Promise((resolve) => redis.once('ready', resolve));
  const queues = new QueueSet(redis, config.QUEUE_PREFIX);
  const queue = new Queue('records', { connection: redis, prefix: config.QUEUE_PREFIX });
  t.teardown(async () => {
    // The jobs go, and their rows with them: the next test's workers would otherwise find them
    // lost (no marker in their Redis: redis-loss.ts) and rightly run them.
    await db.deleteFrom('outbox').where('job_id', 'like', 'records-recompute-%').execute();
    await queue.obliterate({ force: true }).catch(() => {});
    await queue.close();
    await queues.close();
    redis.disconnect();
  });
  const options = { scope: { userId: user }, settings: DEFAULT_RECORDS_SETTINGS, force: false, pageSize: 2 };
  const first = await enqueueRecompute(db, options);
  const second = await enqueueRecompute(db, options);
  t.like(first, { total: 3, enqueued: 3, upToDate: 0, forced: null });
  t.like(second, { total: 3, enqueued: 3, upToDate: 0 });
  while ((await relayOutboxBatch(db, queues)) > 0);
  const counts = await queue.getJobCounts('waiting');
  t.is(counts.waiting, 3, 'six outbox rows, three jobs');
  const jobs = await queue.getJobs(['waiting']);
  for (const j of jobs) t.regex(j.id ?? '', new RegExp(`^records-recompute-[0-9a-f]+-v1-${first.settings}$`));
  t.deepEqual(await recomputeProgress(db, { userId: user }, first), { pending: 3, otherSettings: null });
  // --force: new ids (the run's time), so jobs already done are not mistaken for these.
  const forced = await enqueueRecompute(db, { ...options, force: true });
  t.regex(forced.forced ?? '', /^\d{8}T\d{9}Z$/);
  while ((await relayOutboxBatch(db, queues)) > 0);
  t.is((await queue.getJobCounts('waiting')).waiting, 6);
});

test.serial(
  'npm run records:recompute: --user then --all with --wait; a second run finds nothing to do; new settings redo it',
  async (t) => {
    const alice = await insertTrackingUser(db);
    const bob = await insertTrackingUser(db);
    const aliceRuns = [await run(alice, 1, 300, 3), await run(alice, 2, 400, 3.5), await run(alice, 3, 200, 4)];
    await run(bob, 1, 500, 3);
    await run(bob, 2, 100, 5);
    // Started after the inserts: its relay could otherwise send an insert's job before the
    // helper removes it, and the activity would be up to date before the CLI runs.
    const workers = await startWorkers(
      testConfig({ DATABASE_URL: database.url, WORKER_QUEUES: 'records', OUTBOX_POLL_MS: '20' }),
    );
    t.teardown(() => workers.close());

    const one = await runCli(['--user', alice, '--wait']);
    t.is(one.code, 0, one.stderr);
    t.regex(one.stdout, new RegExp(`records:recompute \\(user ${alice}, settings [0-9a-f]{12}\\):`));
    t.regex(one.stdout, /\n {2}3 activities\n {2}3 recompute jobs enqueued .*\n {2}0 already up to date, skipped\n/);
    t.regex(one.stdout, /recomputed in [\d.]+ s \(\d+ activities\/s, enqueueing included\)/);
    const aliceRecords = await recordsOf(alice);
    t.is(aliceRecords.find((r) => r.type === 'distance.400m')?.activity_id, aliceRuns[2]);
    t.is(aliceRecords.find((r) => r.type === 'all')?.value, 1400);
    t.deepEqual(await recordsOf(bob), [], "only alice's activities");

    // Everyone: the rest of the activities (earlier tests' too), alice's are up to date.
    const all = await runCli(['--all', '--wait']);
    t.is(all.code, 0, all.stderr);
    const total = Number(
      (await db.selectFrom('activities').select(db.fn.countAll().as('n')).executeTakeFirstOrThrow()).n,
    );
    t.regex(all.stdout, new RegExp(`\\n {2}${total} activities\\n {2}${total - 3} recompute jobs enqueued`));
    t.regex(all.stdout, /\n {2}3 already up to date, skipped\n/);
    t.is((await recordsOf(bob)).find((r) => r.type === 'distance.400m')?.value, 80);

    const before = await recordsOf(alice);
    const again = await runCli(['--all', '--wait']);
    t.is(again.code, 0, again.stderr);
    t.regex(
      again.stdout,
      new RegExp(`\\n {2}0 recompute jobs enqueued .*\\n {2}${total} already up to date, skipped\\n`),
    );
    const forced = await runCli(['--user', alice, '--force', '--wait']);
    t.regex(forced.stdout, /, forced\):\n {2}3 activities\n {2}3 recompute jobs enqueued/);
    t.deepEqual(await recordsOf(alice), before, 'same records, same updated_at');

    // Only 1 km timed now, for the workers and the command: the other running distances go.
    const dir = mkdtempSync(path.join(tmpdir(), 'records-cli-'));
    const file = path.join(dir, 'families.json');
    writeFileSync(file, JSON.stringify({ families: { running: { distances: [1000] } } }));
    await workers.close();
    const configured = await startWorkers(
      testConfig({
        DATABASE_URL: database.url,
        WORKER_QUEUES: 'records',
        OUTBOX_POLL_MS: '20',
        RECORDS_FAMILIES_FILE: file,
      }),
    );
    t.teardown(() => configured.close());
    const redo = await runCli(['--user', alice, '--wait'], { RECORDS_FAMILIES_FILE: file });
    t.is(redo.code, 0, redo.stderr);
    t.regex(redo.stdout, /\n {2}3 recompute jobs enqueued/);
    t.deepEqual(
      (await recordsOf(alice)).map((r) => r.type),
      ['all', 'distance.1000m'],
    );

    // The command without the file: the workers recompute under theirs, and --wait says so.
    const mismatch = await runCli(['--user', alice, '--force', '--wait']);
    t.is(mismatch.code, 1, mismatch.stdout);
    t.regex(mismatch.stderr, /the workers recompute with other records settings \([0-9a-f]{12}\) than this command/);
  },
);

test.serial(
  '--sport, --since and --until narrow the activities and the users whose statistics are rebuilt',
  async (t) => {
    const carol = await insertTrackingUser(db);
    // Running on February 1, 2 and 3, 2026, and a ride on February 2.
    for (let day = 1; day <= 3; day++) await run(carol, day, 120, 3);
    await insertActivity(db, { userId: carol, sportId: 381, startdate: new Date(Date.UTC(2026, 1, 2)) });
    t.teardown(() =>
      db
        .deleteFrom('outbox')
        .where('payload', '@>', sql`${JSON.stringify({ userId: carol })}::jsonb`)
        .execute(),
    );
    const scoped = await runCli([
      '--user',
      carol,
      '--sport',
      '121',
      '--since',
      '2026-02-02',
      '--until',
      '2026-02-03T00:00:00Z',
    ]);
    t.is(scoped.code, 0, scoped.stderr);
    t.regex(
      scoped.stdout,
      new RegExp(
        `\\(user ${carol}, sports 121, from 2026-02-02T00:00:00.000Z, before 2026-02-03T00:00:00.000Z, settings`,
      ),
    );
    t.regex(scoped.stdout, /\n {2}1 activities\n {2}1 recompute jobs enqueued/);
    t.regex(scoped.stdout, /\n {2}1 statistics rebuild jobs enqueued/);
    const sports = await runCli(['--user', carol, '--sport', '121,381', '--sport', '/v2/sports/381']);
    t.regex(sports.stdout, /\n {2}4 activities\n/);
    // Everyone's, narrowed: only the users with such an activity get a statistics rebuild.
    const everyone = await runCli(['--all', '--sport', '381', '--since', '2026-02-02', '--until', '2026-02-03']);
    t.is(everyone.code, 0, everyone.stderr);
    t.regex(everyone.stdout, /\n {2}1 activities\n/);
    t.regex(everyone.stdout, /\n {2}1 statistics rebuild jobs enqueued/);
  },
);
