import test from 'ava';
import { CompiledQuery, sql } from 'kysely';
import {
  activityBestEfforts,
  BEST_EFFORTS,
  effortName,
  RANKED_EFFORTS,
} from '../shared/tracking/records/best-effort-ranks.ts';
import { DEFAULT_RECORDS_SETTINGS } from '../shared/tracking/records/settings.ts';
import { updateActivityRecords } from '../shared/tracking/records/update-records.ts';
import { ensureTrackingUser } from '../shared/tracking/users/store.ts';
import { insertActivity } from './helpers/records.ts';
import { startTrackingApi, type TrackingTestUser } from './helpers/tracking.ts';

// GET /v2/activities/{id}/best_efforts (docs/tracking-records.md, "Best efforts of one activity").

const api = await startTrackingApi();
const { db } = api.database;
test.after.always(() => api.close());

const RUNNING = 121;
const TRAIL = 126;

const day = (n: number) => new Date(Date.UTC(2026, 0, n, 8));

/** 1 Hz cumulative distance at a constant speed, up to `metres`. */
function steady(speed: number, metres: number) {
  const elapsed: number[] = [];
  const distance: number[] = [];
  for (let i = 0; i * speed <= metres; i++) {
    elapsed.push(i);
    distance.push(i * speed);
  }
  return { elapsed, metres: distance };
}

async function trackingUser(): Promise<TrackingTestUser> {
  const u = await api.user();
  await ensureTrackingUser(db, { accountId: u.id, ldid: u.ldid, claims: {} });
  return u;
}

/** A run at `speed` over 1,200 m (so 400 m, ½ mile and 1 km are timed), its records job run. */
async function run(u: TrackingTestUser, speed: number, start: Date, sportId = RUNNING): Promise<string> {
  const id = await insertActivity(db, {
    userId: u.ldid,
    sportId,
    startdate: start,
    summaries: { 5: 1200 },
    distance: steady(speed, 1200),
  });
  await updateActivityRecords(
    db,
    { activityId: id, userId: u.ldid, sports: [], force: true },
    DEFAULT_RECORDS_SETTINGS,
  );
  return id;
}

type Member = Record<string, unknown>;
const members = (body: { 'hydra:member': Member[] }) => body['hydra:member'];
const byType = (list: Member[], type: string, datatype = '/v2/datatypes/24') =>
  list.find((m) => m.type === type && m.datatype === datatype);

test("each effort of an activity with its rank among the user's: podium of three, ties by earliest start, per sport", async (t) => {
  const u = await trackingUser();
  // 1 km in 250 s, 200 s, 333.333 s and 400 s; all cover 1,200 m (a tie on the distance record).
  const a4 = await run(u, 4, day(1));
  const a5 = await run(u, 5, day(2));
  const a3 = await run(u, 3, day(3));
  const a25 = await run(u, 2.5, day(4));
  // Faster, but another sport: ranked apart.
  await run(u, 10, day(5), TRAIL);

  const res = await api.call('GET', `/activities/${a5}/best_efforts`, u);
  t.is(res.status, 200, JSON.stringify(res.body));
  t.is(res.body['@type'], 'hydra:Collection');
  const list = members(res.body);
  t.deepEqual(
    list.map((m) => m.type),
    ['distance.400m', 'distance.804m', 'distance.1000m', 'all'],
  );
  t.like(byType(list, 'distance.1000m'), {
    '@id': `/v2/activities/${a5}/best_efforts#distance.1000m-24`,
    '@type': 'ActivityBestEffort',
    activity: `/v2/activities/${a5}`,
    sport: `/v2/sports/${RUNNING}`,
    name: '1 km',
    distance: 1000,
    value: 200,
    elapsedTime: 200,
    rank: 1,
  });
  t.like(byType(list, 'distance.804m'), { name: '½ mile', distance: 804, value: 160.8, rank: 1 });
  // The distance record: all four ran 1,200 m, the earliest start holds it.
  t.like(byType(list, 'all', '/v2/datatypes/5'), {
    name: null,
    distance: null,
    elapsedTime: null,
    value: 1200,
    rank: 2,
  });
  t.is(byType(list, 'all', '/v2/datatypes/5')?.startdate, '2026-01-02T08:00:00+00:00');

  const rankOf = async (id: string, type: string, datatype = 24) =>
    (await activityBestEfforts(db, u.ldid, id)).find((e) => e.type === type && e.datatypeId === datatype)?.rank;
  t.is(await rankOf(a4, 'distance.1000m'), 2);
  t.is(await rankOf(a3, 'distance.1000m'), 3);
  t.is(await rankOf(a25, 'distance.1000m'), null, `beyond the podium of ${RANKED_EFFORTS}`);
  t.is(await rankOf(a4, 'all', 5), 1);
  t.is(await rankOf(a3, 'all', 5), 3);
  t.is(await rankOf(a25, 'all', 5), null);

  // Rank 1 is the user's record of that sport, type and datatype.
  const record = await db
    .selectFrom('user_records')
    .select('activity_id')
    .where('user_id', '=', u.ldid)
    .where('sport_id', '=', RUNNING)
    .where('type', '=', 'distance.1000m')
    .executeTakeFirstOrThrow();
  t.is(record.activity_id, a5);

  // A faster run moves everyone down one place.
  const a6 = await run(u, 6, day(6));
  t.is(await rankOf(a6, 'distance.1000m'), 1);
  t.is(await rankOf(a5, 'distance.1000m'), 2);
  t.is(await rankOf(a3, 'distance.1000m'), null);
});

test("an activity without efforts answers an empty collection; another user's or a missing one 404, without a token 401", async (t) => {
  const u = await trackingUser();
  const other = await trackingUser();
  const bare = await insertActivity(db, { userId: u.ldid, sportId: RUNNING, startdate: day(1) });
  const empty = await api.call('GET', `/activities/${bare}/best_efforts`, u);
  t.is(empty.status, 200);
  t.deepEqual(members(empty.body), []);
  t.is(empty.body['hydra:totalItems'], 0);

  const theirs = await run(other, 4, day(2));
  const hidden = await api.call('GET', `/activities/${theirs}/best_efforts`, u);
  t.is(hidden.status, 404);
  t.is(hidden.body['@type'], 'hydra:Error');
  t.is((await api.call('GET', '/activities/nope/best_efforts', u)).status, 404);
  t.is((await api.call('GET', `/activities/${theirs}/best_efforts`, null)).status, 401);
  t.is((await api.call('GET', `/activities/${theirs}/best_efforts`, other)).status, 200);
});

test('names of the distances', (t) => {
  t.deepEqual([400, 804, 1000, 1500, 1609, 5000, 21097, 42195, 160900].map(effortName), [
    '400 m',
    '½ mile',
    '1 km',
    '1500 m',
    '1 mile',
    '5 km',
    'Half marathon',
    'Marathon',
    '100 miles',
  ]);
});

test("the rank reads a few rows of the records index, whatever the user's history", async (t) => {
  const u = await trackingUser();
  const someone = await trackingUser();
  // Many activities with efforts, for this user and another, so the planner sees a real table.
  for (const owner of [u, someone]) {
    await sql`
      insert into activities (id, user_id, sport_id, startdate, duration, manual, location, data_summaries)
      select ${owner.ldid} || '-plan-' || n, ${owner.ldid}, ${RUNNING}, now() - n * interval '1 day', 3000, true, 'null'::jsonb, '{}'::jsonb
      from generate_series(1, 3000) n`.execute(db);
    await sql`
      insert into activity_best_efforts (activity_id, type, datatype_id, user_id, sport_id, value, score, startdate)
      select ${owner.ldid} || '-plan-' || n, d.type, 24, ${owner.ldid}, ${RUNNING}, 1000 + n, -(1000 + n), now() - n * interval '1 day'
      from generate_series(1, 3000) n
      cross join (values ('distance.1000m'), ('distance.5000m'), ('distance.10000m')) d (type)`.execute(db);
  }
  await sql`analyze activities`.execute(db);
  await sql`analyze activity_best_efforts`.execute(db);
  const id = `${u.ldid}-plan-1500`;
  const efforts = await activityBestEfforts(db, u.ldid, id);
  t.deepEqual(
    efforts.map((e) => [e.type, e.rank]),
    [
      ['distance.1000m', null],
      ['distance.5000m', null],
      ['distance.10000m', null],
    ],
  );
  t.is((await activityBestEfforts(db, u.ldid, `${u.ldid}-plan-2`))[0]?.rank, 2);

  const { rows } = await db.executeQuery<{ 'QUERY PLAN': string }>(
    CompiledQuery.raw(`explain ${BEST_EFFORTS}`, [id, u.ldid]),
  );
  const plan = rows.map((r) => r['QUERY PLAN']).join('\n');
  t.regex(plan, /Index (Only )?Scan using activity_best_efforts_best_idx/, plan);
  t.regex(plan, /Limit/, plan);
  t.notRegex(plan, /Seq Scan/, plan);
});
