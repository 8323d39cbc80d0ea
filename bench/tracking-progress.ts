import { cpus, loadavg } from 'node:os';
import { sql } from 'kysely';
import { ensureDatabase } from '../shared/db/create-database.ts';
import { createDb, type Db } from '../shared/db/database.ts';
import { migrateToLatest } from '../shared/db/migrate.ts';
import { seedReferentials } from '../shared/db/referentials.ts';
import { equipmentsQuery, listEquipments } from '../shared/tracking/gear/store.ts';
import { applyActivityProgress, rebuildUserProgress } from '../shared/tracking/progress/apply.ts';
import { lockUserRecords } from '../shared/tracking/records/records-store.ts';
import { applyActivitySumups, rebuildUserSumups } from '../shared/tracking/sumups/rollup.ts';
import { benchDatabaseUrl, envNumber } from './harness.ts';
import { prng } from './places-data.ts';
import { fmt, quantile } from './stats.ts';
import { benchUser } from './tracking-records-data.ts';

/**
 * bench/tracking-progress (docs/tracking-gear-goals-challenges.md, "Benchmark"): the records job's
 * gear-and-challenges step per activity change (the transaction it adds: lock, read the activity
 * and what it added, move the gear totals and the challenges, commit), for a user with 100
 * activities and one with BENCH_PROGRESS_ACTIVITIES (10,000) over five years, each with 20 gear
 * items and 18 challenges (the five years, each year, each month of the last one), alternating:
 * a change of gear and back, of distance and back, an activity created in the challenges'
 * windows and deleted. O(1) in the history: the medians of both users agree (goal: 10,000's ≤
 * 2 × 100's). Beside: the gear list's statement and plan (one index scan), its time, and a
 * rebuild of each user (O(history)).
 */

const SETTINGS = {
  activities: Math.round(envNumber('BENCH_PROGRESS_ACTIVITIES', 10_000)),
  otherUsers: Math.round(envNumber('BENCH_PROGRESS_OTHER_USERS', 50)),
  changes: Math.max(10, Math.round(envNumber('BENCH_PROGRESS_CHANGES', 200))),
};
const GOAL_RATIO = 2;
/** Bump when the generator changes: the data is reloaded. */
const GENERATOR = 'progress-v2';
const SMALL = 100;
const OTHER_ACTIVITIES = 250;
const GEAR = 20;
const YEARS = [2021, 2022, 2023, 2024, 2025];
const SPORTS = [121, 121, 121, 385, 385, 168];
const FROM = Date.UTC(YEARS[0] as number, 0, 1);
const SPAN = Date.UTC((YEARS.at(-1) as number) + 1, 0, 1) - FROM;

// ---- the data ----

/** 20 gear items (shoes auto-assigned to running, bikes to cycling) and 18 challenges. */
async function gearAndChallenges(db: Db, userId: string, activities: number): Promise<string[]> {
  const gear = await db
    .insertInto('user_equipments')
    .values(
      Array.from({ length: GEAR }, (_, i) => ({
        user_id: userId,
        category: i % 2 ? 'bike' : 'shoes',
        brand: i % 2 ? 'Triban' : 'Kalenji',
        name: `Item ${i}`,
        sports_auto_assigned: i < 2 ? [i % 2 ? 385 : 121] : [],
        alert_distance: String(800_000),
      })),
    )
    .returning('id')
    .execute();
  // Targets a user reaches: the five years at a third of their distance, a year at a tenth of it,
  // a month at a twentieth of its activities.
  const perYear = activities / YEARS.length;
  const challenges = [
    { name: 'Five years', target: String(Math.round(perYear * 5 * 15_000 * 0.33)), from: FROM, to: FROM + SPAN, dt: 5 },
    ...YEARS.map((y) => ({
      name: `${y}`,
      target: String(Math.round(perYear * 15_000 * 0.1)),
      from: Date.UTC(y, 0, 1),
      to: Date.UTC(y + 1, 0, 1) - 1000,
      dt: 5,
    })),
    ...Array.from({ length: 12 }, (_, m) => ({
      name: `month ${m + 1}`,
      target: String(Math.max(1, Math.round(perYear / 12 / 20))),
      from: Date.UTC(2025, m, 1),
      to: Date.UTC(2025, m + 1, 1) - 1000,
      dt: 98,
    })),
  ];
  await db
    .insertInto('user_challenges')
    .values(
      challenges.map((c) => ({
        user_id: userId,
        name: c.name,
        target_datatype_id: c.dt,
        target: c.target,
        started_at: new Date(c.from),
        ended_at: new Date(c.to),
        sport_id: null,
      })),
    )
    .execute();
  return gear.map((g) => g.id);
}

/** `count` activities of `userId` over the five years, each with one or two of its gear. */
async function insertActivities(db: Db, userId: string, gear: string[], count: number, seed: number) {
  const random = prng(seed);
  for (let done = 0; done < count; ) {
    const batch = Math.min(1000, count - done);
    const rows = Array.from({ length: batch }, () => {
      const duration = 1200 + Math.floor(random() * 6000);
      const pick = () => gear[Math.floor(random() * gear.length)] as string;
      return {
        user_id: userId,
        sport_id: SPORTS[Math.floor(random() * SPORTS.length)] as number,
        startdate: new Date(FROM + Math.floor(random() * SPAN)),
        duration,
        manual: true,
        data_summaries: JSON.stringify({
          '5': Math.round(duration * (2 + random() * 6) * 10) / 10,
          '18': Math.round(random() * 400),
          '24': duration,
        }),
        location: 'null',
        kept_duplicate: true,
        moving_time: duration - Math.floor(random() * 120),
        equipment_ids: random() < 0.2 ? [...new Set([pick(), pick()])] : [pick()],
      };
    });
    await db.insertInto('activities').values(rows).execute();
    done += batch;
  }
}

/**
 * Rebuilds a user's gear totals and challenges as the job does (lock, rebuild, commit); returns
 * the milliseconds. Their statistics too, before, untimed: the change bench times their step beside.
 */
async function rebuild(db: Db, userId: string): Promise<number> {
  await db.transaction().execute(async (trx) => {
    await lockUserRecords(trx, userId);
    await rebuildUserSumups(trx, userId);
  });
  const started = performance.now();
  await db.transaction().execute(async (trx) => {
    await lockUserRecords(trx, userId);
    await rebuildUserProgress(trx, userId);
  });
  return performance.now() - started;
}

interface User {
  ldid: string;
  gear: string[];
}

async function loadData(db: Db, log: (s: string) => void): Promise<{ big: User; small: User }> {
  await sql`create table if not exists bench_meta (key text primary key, value text not null)`.execute(db);
  const mark = `${GENERATOR}:${SETTINGS.activities}:${SETTINGS.otherUsers}`;
  const stored = await sql<{ value: string }>`select value from bench_meta where key = 'progress'`.execute(db);
  const saved = stored.rows[0]?.value;
  if (saved?.startsWith(`${mark} `)) {
    log('data: reusing the activities, gear and challenges loaded by a previous run');
    return JSON.parse(saved.slice(mark.length + 1)) as { big: User; small: User };
  }
  const started = performance.now();
  await sql`delete from bench_meta where key = 'progress'`.execute(db);
  await sql`truncate activities, user_equipments, user_challenges, activity_progress_state, user_sumups, activity_sumup_state cascade`.execute(
    db,
  );
  await db.deleteFrom('accounts').where('email', 'like', 'bench-records-progress%').execute();
  const user = async (label: string, count: number, seed: number): Promise<User> => {
    const { ldid } = await benchUser(db, `progress-${label}`);
    const gear = await gearAndChallenges(db, ldid, count);
    await insertActivities(db, ldid, gear, count, seed);
    return { ldid, gear };
  };
  const users = { big: await user('big', SETTINGS.activities, 1), small: await user('small', SMALL, 2) };
  for (let u = 0; u < SETTINGS.otherUsers; u++)
    await rebuild(db, (await user(`other${u}`, OTHER_ACTIVITIES, 100 + u)).ldid);
  const bigMs = await rebuild(db, users.big.ldid);
  await rebuild(db, users.small.ldid);
  for (const table of ['activities', 'user_equipments', 'user_challenges', 'activity_progress_state'])
    await sql`vacuum analyze ${sql.table(table)}`.execute(db);
  await sql`insert into bench_meta values ('progress', ${`${mark} ${JSON.stringify(users)}`})`.execute(db);
  log(
    `data: loaded in ${((performance.now() - started) / 1000).toFixed(0)} s (the big user's gear and challenges built in ${fmt(bigMs, 0)} ms)`,
  );
  return users;
}

// ---- the gear list ----

async function listBench(db: Db, users: { big: User }, log: (s: string) => void): Promise<boolean> {
  log(`\n--- 1. the gear list of the user with ${SETTINGS.activities} activities and ${GEAR} gear items`);
  const q = equipmentsQuery(db, users.big.ldid, {})
    .select(sql<string>`count(*) over ()`.as('matching_rows'))
    .limit(30)
    .offset(0)
    .compile();
  const explained = await db.executeQuery({ ...q, sql: `explain (analyze, buffers) ${q.sql}` });
  const lines = (explained.rows as { 'QUERY PLAN': string }[]).map((r) => r['QUERY PLAN']);
  log(`EXPLAIN ANALYZE:\n${lines.join('\n').replace(/^/gm, '  | ')}`);
  // An index scan, or a bitmap scan of the same index for a handful of rows (then sorted): never the whole table.
  const oneScan =
    lines.some((l) => /Index Scan (using|on) user_equipments_user_idx/.test(l)) &&
    !lines.some((l) => /Seq Scan/.test(l));
  const times: number[] = [];
  for (let i = 0; i < 200; i++) {
    const started = performance.now();
    await listEquipments(db, users.big.ldid, {}, { page: 1, limit: 30 });
    times.push(performance.now() - started);
  }
  const sorted = Float64Array.from(times).sort();
  log(
    `one statement over user_equipments_user_idx: ${oneScan ? 'PASS' : 'FAIL'}; 200 reads: p50 ${fmt(quantile(sorted, 0.5), 2)} ms, p99 ${fmt(quantile(sorted, 0.99), 2)} ms`,
  );
  return oneScan;
}

// ---- the step per activity change ----

/**
 * The transaction the records job adds for one activity (lock, bring gear and challenges in line,
 * commit), timed; then, for a reference measured under the same load, the statistics' step of the
 * same change in a transaction of its own (bench/tracking-sumups.ts times it alone).
 */
async function timedApply(db: Db, userId: string, activityId: string, statistics: number[]): Promise<number> {
  const started = performance.now();
  await db.transaction().execute(async (trx) => {
    await lockUserRecords(trx, userId);
    await applyActivityProgress(trx, { activityId, userId });
  });
  const took = performance.now() - started;
  const reference = performance.now();
  await db.transaction().execute(async (trx) => {
    await lockUserRecords(trx, userId);
    await applyActivitySumups(trx, activityId);
  });
  statistics.push(performance.now() - reference);
  return took;
}

async function changeBench(db: Db, users: { big: User; small: User }, log: (s: string) => void): Promise<boolean> {
  log(
    `\n--- 2. gear totals and challenges per activity change: ${SETTINGS.changes} rounds of (gear change and back, distance change and back, create and delete), users with ${SMALL} and ${SETTINGS.activities} activities alternating`,
  );
  const random = prng(7);
  const idsOf = async (userId: string) =>
    (await db.selectFrom('activities').select('id').where('user_id', '=', userId).execute()).map((r) => r.id);
  const sides = [
    {
      label: `${SMALL} activities`,
      user: users.small,
      ids: await idsOf(users.small.ldid),
      times: [] as number[],
      statistics: [] as number[],
    },
    {
      label: `${SETTINGS.activities} activities`,
      user: users.big,
      ids: await idsOf(users.big.ldid),
      times: [] as number[],
      statistics: [] as number[],
    },
  ];
  const set = (id: string, changes: { equipment_ids?: string[]; data_summaries?: string }) =>
    db
      .updateTable('activities')
      .set((eb) => ({ ...changes, version: eb('version', '+', 1) }))
      .where('id', '=', id)
      .execute();
  for (let i = 0; i < SETTINGS.changes + 5; i++) {
    const warm = i < 5;
    for (const side of sides) {
      const { ldid, gear } = side.user;
      const id = side.ids[Math.floor(random() * side.ids.length)] as string;
      const row = await db
        .selectFrom('activities')
        .select(['equipment_ids', 'data_summaries'])
        .where('id', '=', id)
        .executeTakeFirstOrThrow();
      const samples: number[] = [];
      const stats: number[] = [];
      await set(id, { equipment_ids: [gear[Math.floor(random() * gear.length)] as string] });
      samples.push(await timedApply(db, ldid, id, stats));
      await set(id, { equipment_ids: row.equipment_ids });
      samples.push(await timedApply(db, ldid, id, stats));
      const summaries = row.data_summaries;
      await set(id, { data_summaries: JSON.stringify({ ...summaries, '5': (summaries['5'] ?? 0) + 1000 }) });
      samples.push(await timedApply(db, ldid, id, stats));
      await set(id, { data_summaries: JSON.stringify(summaries) });
      samples.push(await timedApply(db, ldid, id, stats));
      const created = await db
        .insertInto('activities')
        .values({
          user_id: ldid,
          sport_id: 121,
          startdate: new Date(FROM + Math.floor(random() * SPAN)),
          duration: 3600,
          manual: true,
          data_summaries: JSON.stringify({ '5': 10000.5, '24': 3600, '18': 120 }),
          location: 'null',
          kept_duplicate: true,
          moving_time: 3500,
          equipment_ids: [gear[0] as string],
        })
        .returning('id')
        .executeTakeFirstOrThrow();
      samples.push(await timedApply(db, ldid, created.id, stats));
      await db.deleteFrom('activities').where('id', '=', created.id).execute();
      samples.push(await timedApply(db, ldid, created.id, stats));
      if (!warm) {
        side.times.push(...samples);
        side.statistics.push(...stats);
      }
    }
  }
  const medians: number[] = [];
  for (const side of sides) {
    const sorted = Float64Array.from(side.times).sort();
    const mean = side.times.reduce((a, b) => a + b, 0) / side.times.length;
    medians.push(quantile(sorted, 0.5));
    const reference = Float64Array.from(side.statistics).sort();
    log(
      `${side.label.padEnd(18)} per change: p50 ${fmt(quantile(sorted, 0.5), 2)} ms, p99 ${fmt(quantile(sorted, 0.99), 2)} ms, mean ${fmt(mean, 2)} ms (${side.times.length} changes); the statistics' step of the same changes: p50 ${fmt(quantile(reference, 0.5), 2)} ms`,
    );
  }
  const ratio = (medians[1] as number) / (medians[0] as number);
  const ok = ratio <= GOAL_RATIO;
  log(
    `median ${SETTINGS.activities} / ${SMALL}: ${fmt(ratio, 2)} × (goal ≤ ${GOAL_RATIO} ×, O(1) in the history): ${ok ? 'PASS' : 'FAIL'}`,
  );
  const smallRebuild = await rebuild(db, users.small.ldid);
  const bigRebuild = await rebuild(db, users.big.ldid);
  log(
    `for comparison, a rebuild from scratch (O(history), records:recompute): ${fmt(smallRebuild, 1)} ms for ${SMALL} activities, ${fmt(bigRebuild, 1)} ms for ${SETTINGS.activities}`,
  );
  return ok;
}

export async function run(): Promise<{ failed: boolean }> {
  const log = (s: string) => console.log(s);
  const url = benchDatabaseUrl('BENCH_PROGRESS_DATABASE_URL', 'sports_bench_progress');
  log(
    `tracking-progress benchmark on ${url.replace(/\/\/[^@]*@/, '//')}: ${cpus().length} CPUs, load average ${loadavg()[0]?.toFixed(1)}`,
  );
  await ensureDatabase(url);
  const { db } = createDb(url, 4);
  let failed = false;
  try {
    await migrateToLatest(db);
    await seedReferentials(db);
    const users = await loadData(db, log);
    if (!(await listBench(db, users, log))) failed = true;
    if (!(await changeBench(db, users, log))) failed = true;
  } finally {
    await db.destroy();
  }
  return { failed };
}
