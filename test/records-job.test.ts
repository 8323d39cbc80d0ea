import test from 'ava';
import { sql } from 'kysely';
import { DATATYPE } from '../shared/tracking/activities/data.ts';
import { bestRecordsUpsert } from '../shared/tracking/records/records-store.ts';
import { applyRecordsSettings, DEFAULT_RECORDS_SETTINGS } from '../shared/tracking/records/settings.ts';
import {
  type ActivityLoader,
  type RecordsRequest,
  storedActivity,
  updateActivityRecords,
} from '../shared/tracking/records/update-records.ts';
import { startWorkers } from '../workers/worker.ts';
import { testConfig } from './helpers/app.ts';
import { insertActivity, insertTrackingUser, updateActivity } from './helpers/records.ts';
import { startTrackingApi } from './helpers/tracking.ts';

const api = await startTrackingApi();
const { db } = api.database;
test.after.always(() => api.close());

const RUNNING = 121;
const TRAIL = 126;
const ROAD_CYCLING = 385;
const FOOTBALL = 13;

/** 1 Hz cumulative distance: `speed(i)` metres in second i. */
function distanceStream(seconds: number, speed: (i: number) => number) {
  const elapsed: number[] = [];
  const metres: number[] = [];
  let total = 0;
  for (let i = 0; i <= seconds; i++) {
    if (i > 0) total += speed(i);
    elapsed.push(i);
    metres.push(total);
  }
  return { elapsed, metres };
}

const day = (n: number) => new Date(Date.UTC(2026, 0, n, 8));

const update = (activityId: string, userId: string, sports: number[] = [], force = false) =>
  updateActivityRecords(db, { activityId, userId, sports, force }, DEFAULT_RECORDS_SETTINGS);

async function records(userId: string) {
  const rows = await db
    .selectFrom('user_records')
    .selectAll()
    .where('user_id', '=', userId)
    .orderBy('sport_id')
    .orderBy('type')
    .orderBy('datatype_id')
    .execute();
  return rows;
}

const recordOf = async (userId: string, sportId: number, type: string, datatypeId: number) =>
  (await records(userId)).find((r) => r.sport_id === sportId && r.type === type && r.datatype_id === datatypeId);

test('records appear: summaries by recordWay, distance times from the stream; a better activity takes over', async (t) => {
  const user = await insertTrackingUser(db);
  // 10 km at 3.5 m/s (2857 s), summaries of a 10 km run.
  const tenK = await insertActivity(db, {
    userId: user,
    sportId: RUNNING,
    startdate: day(1),
    summaries: {
      [DATATYPE.DISTANCE]: 10_000,
      [DATATYPE.DURATION]: 2858,
      [DATATYPE.HR_AVG]: 150,
      [DATATYPE.HR_MAX]: 181,
    },
    distance: distanceStream(2858, () => 3.5),
  });
  const first = await update(tenK, user, [RUNNING]);
  t.like(first, { status: 'computed', sports: [RUNNING], removed: 0 });
  const after1 = await records(user);
  t.deepEqual(
    after1.map((r) => [r.type, r.datatype_id, r.value, r.activity_id]),
    [
      ['all', DATATYPE.HR_MAX, 181, tenK],
      ['all', DATATYPE.DISTANCE, 10_000, tenK],
      ['all', DATATYPE.DURATION, 2858, tenK],
      ['distance.10000m', DATATYPE.DURATION, 2857.143, tenK],
      ['distance.1000m', DATATYPE.DURATION, 285.714, tenK],
      ['distance.1609m', DATATYPE.DURATION, 459.714, tenK],
      ['distance.3218m', DATATYPE.DURATION, 919.429, tenK],
      ['distance.400m', DATATYPE.DURATION, 114.286, tenK],
      ['distance.5000m', DATATYPE.DURATION, 1428.571, tenK],
      ['distance.804m', DATATYPE.DURATION, 229.714, tenK],
    ],
  );
  t.is(first.written, after1.length);
  t.true(after1.every((r) => r.sport_id === RUNNING && r.date.getTime() === day(1).getTime()));

  // A faster 5 km the next day: it holds the times up to 5 km; the 10 km ones stay (same rows).
  const fiveK = await insertActivity(db, {
    userId: user,
    sportId: RUNNING,
    startdate: day(2),
    summaries: { [DATATYPE.DISTANCE]: 5000, [DATATYPE.HR_MAX]: 190 },
    distance: distanceStream(1250, () => 4),
  });
  const second = await update(fiveK, user, [RUNNING]);
  t.like(second, { status: 'computed', written: 7 });
  const after2 = new Map((await records(user)).map((r) => [`${r.type}/${r.datatype_id}`, r]));
  t.is(after2.get('distance.5000m/24')?.activity_id, fiveK);
  t.is(after2.get('distance.5000m/24')?.value, 1250);
  t.is(after2.get('all/3')?.activity_id, fiveK);
  t.is(after2.get('distance.10000m/24')?.activity_id, tenK);
  t.is(after2.get('all/5')?.activity_id, tenK);
  for (const r of after1) {
    const now = after2.get(`${r.type}/${r.datatype_id}`);
    t.is(now?.id, r.id, 'a record keeps its id when its holder changes');
    t.is(now?.created_at.getTime(), r.created_at.getTime());
    if (now?.activity_id === tenK) t.is(now.updated_at.getTime(), r.updated_at.getTime(), `${r.type} untouched`);
  }
});

test('deleting the record holder promotes the next best; deleting the last activity removes the records', async (t) => {
  const user = await insertTrackingUser(db);
  const slow = await insertActivity(db, {
    userId: user,
    sportId: RUNNING,
    startdate: day(1),
    summaries: { [DATATYPE.DISTANCE]: 1200 },
    distance: distanceStream(400, () => 3),
  });
  const fast = await insertActivity(db, {
    userId: user,
    sportId: RUNNING,
    startdate: day(2),
    summaries: { [DATATYPE.DISTANCE]: 1000 },
    distance: distanceStream(250, () => 4),
  });
  await update(slow, user);
  await update(fast, user);
  t.is((await recordOf(user, RUNNING, 'distance.1000m', 24))?.activity_id, fast);

  await db.deleteFrom('activities').where('id', '=', fast).execute();
  const deleted = await update(fast, user, [RUNNING]);
  t.like(deleted, { status: 'deleted', sports: [RUNNING] });
  const promoted = await recordOf(user, RUNNING, 'distance.1000m', 24);
  t.is(promoted?.activity_id, slow);
  t.is(promoted?.value, 333.333);

  await db.deleteFrom('activities').where('id', '=', slow).execute();
  t.like(await update(slow, user, [RUNNING]), { status: 'deleted', written: 0 });
  t.deepEqual(await records(user), []);
  t.is(
    Number(
      (
        await db
          .selectFrom('activity_best_efforts')
          .select(sql`count(*)`.as('n'))
          .where('user_id', '=', user)
          .executeTakeFirst()
      )?.n,
    ),
    0,
  );
});

test('ties go to the earliest activity, whatever the order they were computed in', async (t) => {
  const user = await insertTrackingUser(db);
  const later = await insertActivity(db, {
    userId: user,
    sportId: RUNNING,
    startdate: day(5),
    summaries: { [DATATYPE.DISTANCE]: 400 },
    distance: distanceStream(100, () => 4),
  });
  await update(later, user);
  const earlier = await insertActivity(db, {
    userId: user,
    sportId: RUNNING,
    startdate: day(3),
    summaries: { [DATATYPE.DISTANCE]: 400 },
    distance: distanceStream(100, () => 4),
  });
  await update(earlier, user);
  t.is((await recordOf(user, RUNNING, 'distance.400m', 24))?.activity_id, earlier);
  t.is((await recordOf(user, RUNNING, 'all', DATATYPE.DISTANCE))?.activity_id, earlier);
  t.is((await recordOf(user, RUNNING, 'all', DATATYPE.DISTANCE))?.date.getTime(), day(3).getTime());
});

test("a change of sport moves the activity's records; a change of its values replaces them", async (t) => {
  const user = await insertTrackingUser(db);
  const id = await insertActivity(db, {
    userId: user,
    sportId: TRAIL,
    startdate: day(1),
    summaries: { [DATATYPE.DISTANCE]: 6000 },
    distance: distanceStream(1500, () => 4),
  });
  await update(id, user, [TRAIL]);
  t.deepEqual(
    [...new Set((await records(user)).map((r) => r.sport_id))],
    [TRAIL],
    'a child of running: running distances',
  );
  t.truthy(await recordOf(user, TRAIL, 'distance.5000m', 24));

  // Now road cycling: cycling distances (5 km only in 6 km), nothing left under trail.
  await updateActivity(db, id, { sportId: ROAD_CYCLING });
  const moved = await update(id, user, [ROAD_CYCLING, TRAIL]);
  t.like(moved, { status: 'computed', sports: [TRAIL, ROAD_CYCLING] });
  t.deepEqual(
    (await records(user)).map((r) => [r.sport_id, r.type, r.datatype_id]),
    [
      [ROAD_CYCLING, 'all', DATATYPE.DISTANCE],
      [ROAD_CYCLING, 'distance.5000m', DATATYPE.DURATION],
    ],
  );

  // The previous sport is found from the stored efforts even if the job does not name it.
  await updateActivity(db, id, { sportId: FOOTBALL, summaries: { [DATATYPE.DISTANCE]: 7000 } });
  t.like(await update(id, user), { status: 'computed', sports: [FOOTBALL, ROAD_CYCLING] });
  t.deepEqual(
    (await records(user)).map((r) => [r.sport_id, r.type, r.value]),
    [[FOOTBALL, 'all', 7000]],
    'football has no distance records',
  );
});

test('idempotent: a second run finds the work done; a forced one rewrites nothing that is equal', async (t) => {
  const user = await insertTrackingUser(db);
  const id = await insertActivity(db, {
    userId: user,
    sportId: RUNNING,
    startdate: day(1),
    summaries: { [DATATYPE.DISTANCE]: 2000, [DATATYPE.CALORIES]: 150 },
    distance: distanceStream(600, () => 3.4),
  });
  const first = await update(id, user);
  const before = await records(user);
  const again = await update(id, user);
  t.like(again, { status: 'up-to-date', written: 0, settings: first.settings });
  const forced = await update(id, user, [], true);
  t.like(forced, { status: 'computed', written: 0, removed: 0 });
  t.deepEqual(await records(user), before, 'same rows, same updated_at');

  // Other settings: the work is redone under them.
  const fewer = applyRecordsSettings({ families: { running: { distances: [1000] } } });
  const redone = await updateActivityRecords(db, { activityId: id, userId: user, sports: [], force: false }, fewer);
  t.like(redone, { status: 'computed', removed: 3 });
  t.not(redone.settings, first.settings);
  t.deepEqual(
    (await records(user)).map((r) => r.type),
    ['all', 'all', 'distance.1000m'],
  );
});

test('a job that read an older version than the stored one leaves the work to the newer job', async (t) => {
  const user = await insertTrackingUser(db);
  const id = await insertActivity(db, {
    userId: user,
    sportId: RUNNING,
    startdate: day(1),
    summaries: { [DATATYPE.DISTANCE]: 900 },
  });
  // The activity changes while the job reads it.
  const racing: ActivityLoader = async (conn, activityId) => {
    const read = await storedActivity(conn, activityId);
    await updateActivity(db, activityId, { summaries: { [DATATYPE.DISTANCE]: 950 } });
    return read;
  };
  const request: RecordsRequest = { activityId: id, userId: user, sports: [RUNNING], force: false };
  t.like(await updateActivityRecords(db, request, DEFAULT_RECORDS_SETTINGS, { load: racing }), {
    status: 'superseded',
  });
  t.deepEqual(await records(user), []);
  t.like(await update(id, user), { status: 'computed' });
  t.is((await recordOf(user, RUNNING, 'all', DATATYPE.DISTANCE))?.value, 950);
});

test('activities of one user computed at once: every record sees every activity', async (t) => {
  const user = await insertTrackingUser(db);
  const ids = await Promise.all(
    Array.from({ length: 8 }, (_, i) =>
      insertActivity(db, {
        userId: user,
        sportId: RUNNING,
        startdate: day(i + 1),
        summaries: { [DATATYPE.DISTANCE]: 1000 + i * 100, [DATATYPE.CALORIES]: 800 - i * 50 },
        distance: distanceStream(400, () => 3 + (i % 4) * 0.25),
      }),
    ),
  );
  await Promise.all(ids.map((id) => update(id, user)));
  t.is((await recordOf(user, RUNNING, 'all', DATATYPE.DISTANCE))?.activity_id, ids[7]);
  t.is((await recordOf(user, RUNNING, 'all', DATATYPE.CALORIES))?.activity_id, ids[0]);
  // Speeds 3, 3.25, 3.5, 3.75, then again: the first 3.75 m/s one (day 4) holds the 400 m.
  t.is((await recordOf(user, RUNNING, 'distance.400m', 24))?.activity_id, ids[3]);
});

test('the GPS track is used when there is no distance stream', async (t) => {
  const user = await insertTrackingUser(db);
  const steps = 1200;
  const metresPerDegree = (Math.PI / 180) * 6_371_008.8;
  const elapsed = Array.from({ length: steps + 1 }, (_, i) => i);
  const id = await insertActivity(db, {
    userId: user,
    sportId: RUNNING,
    startdate: day(1),
    track: {
      elapsed,
      latitude: elapsed.map((i) => 50 + (i * 3) / metresPerDegree),
      longitude: elapsed.map(() => 3),
    },
  });
  await update(id, user);
  const r = await recordOf(user, RUNNING, 'distance.1000m', 24);
  t.truthy(r);
  t.true(Math.abs((r?.value as number) - 333.333) <= 0.002, String(r?.value));
});

test('the refresh reads the best of each record group through activity_best_efforts_best_idx', async (t) => {
  const user = await insertTrackingUser(db);
  // 3000 record groups for this user and as many for another one.
  const other = await insertTrackingUser(db);
  for (const owner of [user, other]) {
    const id = await insertActivity(db, { userId: owner, sportId: RUNNING, startdate: day(1) });
    await sql`
      insert into activity_best_efforts (activity_id, type, datatype_id, user_id, sport_id, value, score, startdate)
      select ${id}, 'distance.' || g || 'm', 24, ${owner}, ${RUNNING}, g, -g, now()
      from generate_series(1, 3000) g`.execute(db);
  }
  await sql`analyze activity_best_efforts`.execute(db);
  const compiled = bestRecordsUpsert(user, RUNNING).compile(db);
  const plan = (await db.executeQuery<{ 'QUERY PLAN': string }>({ ...compiled, sql: `explain ${compiled.sql}` })).rows
    .map((r) => r['QUERY PLAN'])
    .join('\n');
  t.regex(plan, /activity_best_efforts_best_idx/, plan);
  t.notRegex(plan, /Seq Scan on activity_best_efforts/, plan);
});

test.serial('through the API and the worker: POST, PUT of the sport and DELETE keep the records', async (t) => {
  const workers = await startWorkers(
    testConfig({
      DATABASE_URL: api.database.url,
      QUEUE_PREFIX: api.config.QUEUE_PREFIX,
      WORKER_QUEUES: 'records',
      OUTBOX_POLL_MS: '20',
    }),
  );
  t.teardown(() => workers.close());
  const u = await api.user();
  const waitFor = async (check: () => Promise<boolean>) => {
    const end = Date.now() + 120_000;
    while (!(await check()) && Date.now() < end) await new Promise((r) => setTimeout(r, 25));
    return check();
  };
  // 1000 s at 4 m/s, one sample per second.
  const datastream = Object.fromEntries(
    Array.from({ length: 1001 }, (_, i) => [String(i), { [DATATYPE.DISTANCE]: i * 4 }]),
  );
  const posted = await api.call('POST', '/activities', u, {
    body: {
      user: `/v2/users/${u.ldid}`,
      sport: `/v2/sports/${RUNNING}`,
      startdate: '2026-03-01T07:00:00+00:00',
      duration: 1000,
      dataSummaries: { [DATATYPE.DISTANCE]: 4000 },
      datastream,
    },
  });
  t.is(posted.status, 201, JSON.stringify(posted.body));
  const id = (posted.body as { id: string }).id;
  t.true(await waitFor(async () => (await recordOf(u.ldid, RUNNING, 'distance.3218m', 24)) !== undefined));
  t.is((await recordOf(u.ldid, RUNNING, 'distance.1000m', 24))?.value, 250);
  t.is((await recordOf(u.ldid, RUNNING, 'all', DATATYPE.DISTANCE))?.activity_id, id);

  const put = await api.call('PUT', `/activities/${id}`, u, { body: { sport: `/v2/sports/${ROAD_CYCLING}` } });
  t.is(put.status, 200, JSON.stringify(put.body));
  t.true(await waitFor(async () => (await records(u.ldid)).every((r) => r.sport_id === ROAD_CYCLING)));
  t.deepEqual(
    (await records(u.ldid)).map((r) => r.type),
    ['all'],
    'cycling times 5 km and more: 4 km has only the summary',
  );

  t.is((await api.call('DELETE', `/activities/${id}`, u)).status, 204);
  t.true(await waitFor(async () => (await records(u.ldid)).length === 0));
});
