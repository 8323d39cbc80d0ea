import test from 'ava';
import { sql } from 'kysely';
import { DISTANCE_SQL, similarOrder, similarQuery } from '../shared/tracking/activities/similar.ts';
import { ensureTrackingUser } from '../shared/tracking/users/store.ts';
import { startTrackingApi, type TrackingTestUser } from './helpers/tracking.ts';
import { activity, HIKING, RUNNING } from './helpers/tracking-activities.ts';

// GET /v2/activities/{id}/similar/{datatype} (docs/tracking-activities.md, "Similar activities").

const api = await startTrackingApi();
const { db } = api.database;
test.after.always(() => api.close());

type Member = { id: string; name: string };
const names = (body: { 'hydra:member': Member[] }) => body['hydra:member'].map((m) => m.name);

/** An activity of `u` through the API: a name, a distance (m), a duration (s), other summaries. */
async function post(
  u: TrackingTestUser,
  name: string,
  distance: number | null,
  duration: number,
  more: Record<string, number> = {},
  sport = RUNNING,
): Promise<string> {
  const summaries: Record<string, number> = { '24': duration, ...more };
  if (distance !== null) summaries['5'] = distance;
  const res = await api.call('POST', '/activities', u, {
    body: activity(u, { name, duration, sport: `/v2/sports/${sport}`, dataSummaries: summaries }),
  });
  if (res.status !== 201) throw new Error(`POST ${res.status} ${JSON.stringify(res.body)}`);
  return (res.body as { id: string }).id;
}

/** A reference run of 10 km and its neighbours; speeds (datatype 9) and heart rates (4) where given. */
async function crafted(u: TrackingTestUser) {
  const ref = await post(u, 'ref', 10000, 3000, { '9': 12000, '4': 150 });
  await post(u, 'low bound', 9000, 2800, { '9': 11571, '4': 140 });
  await post(u, 'high bound', 11000, 3400, { '9': 11647 });
  await post(u, 'fast', 10200, 2700, { '9': 13600, '4': 160 });
  await post(u, 'too short', 8999, 2000, { '9': 16198 });
  await post(u, 'too long', 11001, 1000, { '9': 39603 });
  await post(u, 'hike', 10000, 100, {}, HIKING);
  await post(u, 'no distance', null, 1500);
  return ref;
}

const similar = (u: TrackingTestUser | null, id: string, datatype: string | number, query = '') =>
  api.call('GET', `/activities/${id}/similar/${datatype}${query}`, u);

test('same sport, distance within ±10 % (bounds in), the activity included, ranked by the datatype', async (t) => {
  const u = await api.user();
  const someone = await api.user();
  const ref = await crafted(u);
  await post(someone, 'theirs', 10000, 10);

  // Duration: the fastest first.
  const byDuration = await similar(u, ref, 24);
  t.is(byDuration.status, 200, JSON.stringify(byDuration.body));
  t.is(byDuration.body['@type'], 'hydra:Collection');
  t.deepEqual(names(byDuration.body), ['fast', 'low bound', 'ref', 'high bound']);
  t.is(byDuration.body['hydra:totalItems'], 4);
  t.is(byDuration.body['hydra:member'][0]['@type'], 'Activity');

  // Speed avg (recordWay 1): the highest first.
  t.deepEqual(names((await similar(u, ref, 9)).body), ['fast', 'ref', 'high bound', 'low bound']);
  // HR avg (recordWay 0): the lowest first, only the activities that have one.
  t.deepEqual(names((await similar(u, ref, 4)).body), ['low bound', 'ref', 'fast']);
  t.deepEqual(names((await similar(u, ref, 4, '?order=desc')).body), ['fast', 'ref', 'low bound']);
  // A datatype none of them has: nothing.
  t.deepEqual(names((await similar(u, ref, 23)).body), []);

  // Paging: page 2 of 2 by 3.
  const page2 = await similar(u, ref, 24, '?limit=3&page=2');
  t.deepEqual(names(page2.body), ['high bound']);
  t.is(page2.body['hydra:totalItems'], 4);
  t.truthy(page2.body['hydra:view']?.['hydra:previous']);
});

test('an activity without a distance is compared with those of its sport without one', async (t) => {
  const u = await api.user();
  await crafted(u);
  const indoor = await post(u, 'indoor', null, 1200);
  t.deepEqual(names((await similar(u, indoor, 24)).body), ['indoor', 'no distance']);
});

test("an unknown or malformed datatype is a 422 naming it; another user's activity a 404 whatever the datatype", async (t) => {
  const u = await api.user();
  const other = await api.user();
  const ref = await post(u, 'ref', 10000, 3000);
  for (const datatype of ['999999', 'abc', '0', '-1', '1.5']) {
    const res = await similar(u, ref, datatype);
    t.is(res.status, 422, datatype);
    t.is(res.body['@type'], 'ConstraintViolationList', datatype);
    t.is(res.body.violations[0].propertyPath, 'datatype', datatype);
  }
  t.regex((await similar(u, ref, 999999)).body.violations[0].message, /\/v2\/datatypes\/999999 does not exist/);
  for (const datatype of ['24', '999999', 'abc']) {
    const res = await similar(other, ref, datatype);
    t.is(res.status, 404, datatype);
    t.is(res.body['@type'], 'hydra:Error');
  }
  t.is((await similar(u, 'missing', 24)).status, 404);
  t.is((await similar(null, ref, 24)).status, 401);
  t.is((await similar(u, ref, 24, '?order=up')).status, 422);
  t.is((await similar(u, ref, 24, '?limit=101')).status, 422);
});

test('the order of a datatype', (t) => {
  t.is(similarOrder(24, 1), 'asc', 'duration: the fastest first, although its recordWay is 1');
  t.is(similarOrder(9, 1), 'desc');
  t.is(similarOrder(4, 0), 'asc');
});

test('the candidates are one range of activities_user_sport_distance_idx', async (t) => {
  const users = [await api.user(), await api.user()];
  for (const u of users) {
    await ensureTrackingUser(db, { accountId: u.id, ldid: u.ldid, claims: {} });
    // 4,000 activities over two sports and distances of 1 to 50 km.
    await sql`
      insert into activities (user_id, sport_id, startdate, duration, manual, location, data_summaries)
      select ${u.ldid}, case when n % 4 = 0 then ${HIKING}::int else ${RUNNING}::int end, now() - n * interval '1 hour', 1000 + n, true,
        'null'::jsonb, jsonb_build_object('5', 1000 + (n * 7919) % 49000, '24', 1000 + n)
      from generate_series(1, 4000) n`.execute(db);
  }
  await sql`analyze activities`.execute(db);
  const caller = (users[0] as TrackingTestUser).ldid;
  const query = similarQuery(db, caller, RUNNING, 10000, 24, 'asc');
  const rows = await query.execute();
  const distances = await db
    .selectFrom('activities')
    .select(DISTANCE_SQL.as('d'))
    .where('user_id', '=', caller)
    .where('sport_id', '=', RUNNING)
    .execute();
  t.is(rows.length, distances.filter((r) => r.d !== null && r.d >= 9000 && r.d <= 11000).length);
  t.true(rows.length > 0);
  const plan = (await query.limit(30).explain()).map((r) => String(r['QUERY PLAN'])).join('\n');
  t.regex(plan, /(Index (Only )?Scan using|Bitmap Index Scan on) activities_user_sport_distance_idx/, plan);
  t.notRegex(plan, /Seq Scan/, plan);
});
