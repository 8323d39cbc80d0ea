import { cpus, loadavg } from 'node:os';
import { sql } from 'kysely';
import { ensureDatabase } from '../shared/db/create-database.ts';
import { createDb, type Db, poolOf } from '../shared/db/database.ts';
import { migrateToLatest } from '../shared/db/migrate.ts';
import { seedReferentials } from '../shared/db/referentials.ts';
import { lockUserRecords } from '../shared/tracking/records/records-store.ts';
import { sumupsStatement } from '../shared/tracking/sumups/read.ts';
import { applyActivitySumups, rebuildUserSumups } from '../shared/tracking/sumups/rollup.ts';
import { findTrackingCredentials } from '../shared/tracking/users/credentials.ts';
import { benchDatabaseUrl, envNumber, loadSettings } from './harness.ts';
import { prng } from './places-data.ts';
import { fmt, quantile } from './stats.ts';
import { compareReads, trackingCaller } from './tracking-reads.ts';
import { benchUser } from './tracking-records-data.ts';

/**
 * bench/tracking-sumups (docs/tracking-statistics.md, "Benchmark"):
 * 1. year-by-month statistics of a user with BENCH_SUMUPS_ACTIVITIES (10,000) activities over five
 *    years, `GET /v2/user_sumups?type=month&period[between]=…&exists[sport]=false` (every datatype,
 *    and distance only), among other users' rows, through the API (autocannon, 16 connections),
 *    through the bare server and as the API's statements straight through pg, alternating in rounds
 *    (bench/tracking-reads.ts). Goals: API ≥ 0.75 × bare, API p99 ≤ 1.5 × the SQL's p99.
 * 2. the rollup's work per activity change (the transaction the records job adds: lock, read the
 *    activity and what it added, subtract and add, commit) for a user with 100 activities and for
 *    the user with 10,000, alternating: a sport change of one of their stored activities and its
 *    change back, and a new activity created then deleted. O(1) in the history: the medians of
 *    both users agree (goal: 10,000's ≤ 2 × 100's). A rebuild of each (O(history)) is printed beside.
 */

const SETTINGS = {
  ...loadSettings(),
  activities: Math.round(envNumber('BENCH_SUMUPS_ACTIVITIES', 10_000)),
  otherUsers: Math.round(envNumber('BENCH_SUMUPS_OTHER_USERS', 200)),
  changes: Math.max(10, Math.round(envNumber('BENCH_SUMUPS_CHANGES', 300))),
  parts: (process.env.BENCH_SUMUPS_PARTS ?? 'read,update').split(','),
};
const GOAL_UPDATE_RATIO = 2;
/** Bump when the generator changes: the data is reloaded. */
const GENERATOR = 'sumups-v1';
const SMALL = 100;
const OTHER_ACTIVITIES = 250;
const YEARS = [2021, 2022, 2023, 2024, 2025];
const SPORTS = [121, 121, 121, 385, 385, 168, 126];
const ZONE = 'Europe/Paris';

// ---- the data ----

/** `count` activities of `userId` spread over the five years, with the summaries watches give. */
async function insertActivities(db: Db, userId: string, count: number, seed: number): Promise<void> {
  const random = prng(seed);
  const from = Date.UTC(YEARS[0] as number, 0, 1);
  const span = Date.UTC((YEARS.at(-1) as number) + 1, 0, 1) - from;
  for (let done = 0; done < count; ) {
    const batch = Math.min(1000, count - done);
    const rows = Array.from({ length: batch }, () => {
      const duration = 1200 + Math.floor(random() * 6000);
      const distance = Math.round(duration * (2 + random() * 6) * 10) / 10;
      return {
        user_id: userId,
        sport_id: SPORTS[Math.floor(random() * SPORTS.length)] as number,
        startdate: new Date(from + Math.floor(random() * span)),
        duration,
        manual: false,
        data_summaries: JSON.stringify({
          '4': 120 + Math.round(random() * 50),
          '5': distance,
          '18': Math.round(random() * 400),
          '23': Math.round(duration / 6),
          '24': duration,
        }),
        location: 'null',
        kept_duplicate: true,
      };
    });
    await db.insertInto('activities').values(rows).execute();
    done += batch;
  }
}

/** Rebuilds a user's rollup as the job does (lock, rebuild, commit); returns the milliseconds. */
async function rebuild(db: Db, userId: string): Promise<number> {
  const started = performance.now();
  await db.transaction().execute(async (trx) => {
    await lockUserRecords(trx, userId);
    await rebuildUserSumups(trx, userId);
  });
  return performance.now() - started;
}

interface Users {
  big: { accountId: string; ldid: string };
  small: { accountId: string; ldid: string };
}

async function loadData(db: Db, log: (s: string) => void): Promise<Users> {
  await sql`create table if not exists bench_meta (key text primary key, value text not null)`.execute(db);
  const mark = `${GENERATOR}:${SETTINGS.activities}:${SETTINGS.otherUsers}`;
  const stored = await sql<{ value: string }>`select value from bench_meta where key = 'sumups'`.execute(db);
  const saved = stored.rows[0]?.value;
  if (saved?.startsWith(`${mark} `)) {
    log('data: reusing the activities and statistics loaded by a previous run');
    return JSON.parse(saved.slice(mark.length + 1)) as Users;
  }
  const started = performance.now();
  await sql`delete from bench_meta where key = 'sumups'`.execute(db);
  await sql`truncate activities, user_sumups, activity_sumup_state cascade`.execute(db);
  await db.deleteFrom('accounts').where('email', 'like', 'bench-records-sumups%').execute();
  const users: Users = { big: await benchUser(db, 'sumups-big'), small: await benchUser(db, 'sumups-small') };
  await db
    .updateTable('tracking_users')
    .set({ timezone: ZONE })
    .where('id', 'in', [users.big.ldid, users.small.ldid])
    .execute();
  await insertActivities(db, users.big.ldid, SETTINGS.activities, 1);
  await insertActivities(db, users.small.ldid, SMALL, 2);
  for (let u = 0; u < SETTINGS.otherUsers; u++) {
    const other = await benchUser(db, `sumups-other${u}`);
    await insertActivities(db, other.ldid, OTHER_ACTIVITIES, 100 + u);
    await rebuild(db, other.ldid);
  }
  const bigMs = await rebuild(db, users.big.ldid);
  await rebuild(db, users.small.ldid);
  await sql`vacuum analyze activities`.execute(db);
  await sql`vacuum analyze user_sumups`.execute(db);
  await sql`vacuum analyze activity_sumup_state`.execute(db);
  await sql`insert into bench_meta values ('sumups', ${`${mark} ${JSON.stringify(users)}`})`.execute(db);
  log(
    `data: loaded in ${((performance.now() - started) / 1000).toFixed(0)} s (the big user's rollup built in ${fmt(bigMs, 0)} ms)`,
  );
  return users;
}

// ---- 1. reads ----

/** The year-by-month statistics of each year: every datatype (60 rows), and distance only (12). */
function readRequests(): { path: string; filter: Parameters<typeof sumupsStatement>[1] }[] {
  return YEARS.flatMap((y) => {
    const between: [string, string] = [`${y}-01-01`, `${y}-12-01`];
    const base = `/v2/user_sumups?type=month&period[between]=${between[0]}..${between[1]}&exists[sport]=false&limit=100`;
    return [
      { path: base, filter: { types: ['month' as const], period: { between }, hasSport: false } },
      {
        path: `${base}&datatype=/v2/datatypes/5`,
        filter: { types: ['month' as const], period: { between }, hasSport: false, datatypes: [5] },
      },
    ];
  });
}

async function readBench(db: Db, url: string, users: Users, log: (s: string) => void): Promise<boolean> {
  log(`\n--- 1. year-by-month statistics of the user with ${SETTINGS.activities} activities: API, bare server, SQL`);
  const sqlDb = createDb(url, SETTINGS.connections).db;
  try {
    const size = (
      await sql<{
        rows: number;
        mine: number;
        activities: number;
      }>`select (select count(*)::int from user_sumups) as rows,
          (select count(*)::int from user_sumups where user_id = ${users.big.ldid}) as mine,
          (select count(*)::int from activities) as activities`.execute(db)
    ).rows[0];
    log(
      `data size: ${size?.activities} activities of ${SETTINGS.otherUsers + 2} users, ${size?.rows} statistics rows (${size?.mine} of the user)`,
    );
    const requests = readRequests();
    // The statement the API runs for each request: written by the same function, name included.
    const statements = requests.map((r) => sumupsStatement(users.big.ldid, r.filter, { page: 1, limit: 100 }));
    const first = statements[0];
    if (first) {
      const plan = (
        await poolOf(sqlDb).query<{ 'QUERY PLAN': string }>(`explain analyze ${first.text}`, first.values)
      ).rows
        .map((r) => r['QUERY PLAN'])
        .join('\n');
      log(`EXPLAIN ANALYZE, ${requests[0]?.path}:\n${plan.replace(/^/gm, '  | ')}`);
    }
    const results = await compareReads(
      url,
      async ({ api }) => {
        const caller = await trackingCaller(db, api, users.big.accountId, 'sumups');
        const sqlPool = poolOf(sqlDb);
        return [
          {
            label: 'statistics, a year by month (GET /v2/user_sumups)',
            requests: requests.map((r) => ({ path: r.path, headers: caller.headers })),
            sql: async (i: number) => {
              const q = statements[i % statements.length] as (typeof statements)[number];
              await findTrackingCredentials(sqlDb, caller.credentials);
              return sqlPool.query(q);
            },
          },
        ];
      },
      log,
    );
    return results.every((r) => r.ok);
  } finally {
    await sqlDb.destroy();
  }
}

// ---- 2. the rollup's work per activity change ----

/** The transaction the records job adds for one activity: lock, bring the rollup in line, commit. */
async function timedApply(db: Db, userId: string, activityId: string): Promise<number> {
  const started = performance.now();
  await db.transaction().execute(async (trx) => {
    await lockUserRecords(trx, userId);
    await applyActivitySumups(trx, activityId);
  });
  return performance.now() - started;
}

async function updateBench(db: Db, users: Users, log: (s: string) => void): Promise<boolean> {
  log(
    `\n--- 2. the rollup's work per activity change: ${SETTINGS.changes} rounds of (sport change, change back, create, delete), users with ${SMALL} and ${SETTINGS.activities} activities alternating`,
  );
  const random = prng(7);
  const idsOf = async (userId: string) =>
    (await db.selectFrom('activities').select('id').where('user_id', '=', userId).execute()).map((r) => r.id);
  const sides = [
    { label: `${SMALL} activities`, user: users.small.ldid, ids: await idsOf(users.small.ldid), times: [] as number[] },
    {
      label: `${SETTINGS.activities} activities`,
      user: users.big.ldid,
      ids: await idsOf(users.big.ldid),
      times: [] as number[],
    },
  ];
  const setSport = (id: string, sportId: number) =>
    db
      .updateTable('activities')
      .set((eb) => ({ sport_id: sportId, version: eb('version', '+', 1) }))
      .where('id', '=', id)
      .returning('sport_id')
      .execute();
  for (let i = 0; i < SETTINGS.changes + 5; i++) {
    const warm = i < 5;
    for (const side of sides) {
      const id = side.ids[Math.floor(random() * side.ids.length)] as string;
      const row = await db.selectFrom('activities').select('sport_id').where('id', '=', id).executeTakeFirstOrThrow();
      const samples: number[] = [];
      await setSport(id, row.sport_id === 385 ? 121 : 385);
      samples.push(await timedApply(db, side.user, id));
      await setSport(id, row.sport_id);
      samples.push(await timedApply(db, side.user, id));
      const created = await db
        .insertInto('activities')
        .values({
          user_id: side.user,
          sport_id: 121,
          startdate: new Date(Date.UTC(2023, 5, 1) + Math.floor(random() * 1e10)),
          duration: 3600,
          manual: true,
          data_summaries: JSON.stringify({ '5': 10000.5, '24': 3600, '23': 700 }),
          location: 'null',
          kept_duplicate: true,
        })
        .returning('id')
        .executeTakeFirstOrThrow();
      samples.push(await timedApply(db, side.user, created.id));
      await db.deleteFrom('activities').where('id', '=', created.id).execute();
      samples.push(await timedApply(db, side.user, created.id));
      if (!warm) side.times.push(...samples);
    }
  }
  const medians: number[] = [];
  for (const side of sides) {
    const sorted = Float64Array.from(side.times).sort();
    const mean = side.times.reduce((a, b) => a + b, 0) / side.times.length;
    medians.push(quantile(sorted, 0.5));
    log(
      `${side.label.padEnd(18)} per change: p50 ${fmt(quantile(sorted, 0.5), 2)} ms, p99 ${fmt(quantile(sorted, 0.99), 2)} ms, mean ${fmt(mean, 2)} ms (${side.times.length} changes)`,
    );
  }
  const ratio = (medians[1] as number) / (medians[0] as number);
  const ok = ratio <= GOAL_UPDATE_RATIO;
  log(
    `median ${SETTINGS.activities} / ${SMALL}: ${fmt(ratio, 2)} × (goal ≤ ${GOAL_UPDATE_RATIO} ×, O(1) in the history): ${ok ? 'PASS' : 'FAIL'}`,
  );
  const smallRebuild = await rebuild(db, users.small.ldid);
  const bigRebuild = await rebuild(db, users.big.ldid);
  log(
    `for comparison, a rebuild from scratch (O(history), a change of time zone): ${fmt(smallRebuild, 1)} ms for ${SMALL} activities, ${fmt(bigRebuild, 1)} ms for ${SETTINGS.activities}`,
  );
  return ok;
}

export async function run(): Promise<{ failed: boolean }> {
  const log = (s: string) => console.log(s);
  const url = benchDatabaseUrl('BENCH_SUMUPS_DATABASE_URL', 'sports_bench_sumups');
  log(
    `tracking-sumups benchmark on ${url.replace(/\/\/[^@]*@/, '//')}: parts ${SETTINGS.parts.join(', ')}; duration=${SETTINGS.durationS}s per side in ${SETTINGS.rounds} alternating rounds, warmup=${SETTINGS.warmupS}s, concurrency=${SETTINGS.connections}; ${cpus().length} CPUs, load average ${loadavg()[0]?.toFixed(1)}`,
  );
  await ensureDatabase(url);
  const { db } = createDb(url, 4);
  let failed = false;
  try {
    await migrateToLatest(db);
    await seedReferentials(db);
    const users = await loadData(db, log);
    if (SETTINGS.parts.includes('read') && !(await readBench(db, url, users, log))) failed = true;
    if (SETTINGS.parts.includes('update') && !(await updateBench(db, users, log))) failed = true;
  } finally {
    await db.destroy();
  }
  return { failed };
}
