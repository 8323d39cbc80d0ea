import test from 'ava';
import { sql } from 'kysely';
import { activitiesQuery } from '../shared/tracking/activities/list.ts';
import { ensureTrackingUser } from '../shared/tracking/users/store.ts';
import { startTrackingApi } from './helpers/tracking.ts';
import { activityCalls, HIKING, ids, me, RUNNING } from './helpers/tracking-activities.ts';

const api = await startTrackingApi();
test.after.always(() => api.close());

const { db } = api.database;
const { created, list } = activityCalls(api);

test("GET /activities lists only the caller's activities, without streams, as a hydra:Collection with paging", async (t) => {
  const u = await api.user();
  const other = await api.user();
  const mine = [];
  for (let i = 0; i < 5; i++)
    mine.push(
      (await created(u, { startdate: `2024-05-0${i + 1}T08:00:00+00:00`, datastream: { '0': { '1': 1 } } })).id,
    );
  await created(other);
  const res = await list(u, '?limit=2');
  t.is(res.status, 200);
  t.like(res.body, {
    '@context': '/v2/contexts/Activity',
    '@id': '/v2/activities',
    '@type': 'hydra:Collection',
    'hydra:totalItems': 5,
  });
  // Most recent start first by default.
  t.deepEqual(ids(res.body), [mine[4], mine[3]]);
  t.is(res.body['hydra:member'][0].datastream, undefined);
  t.is(res.body['hydra:member'][0].locations, undefined);
  t.is(res.body['hydra:member'][0]['@id'], `/v2/activities/${mine[4]}`);
  t.is(res.body['hydra:view']['hydra:next'], '/v2/activities?limit=2&page=2');
  const last = await list(u, '?limit=2&page=3');
  t.deepEqual(ids(last.body), [mine[0]]);
  t.is(last.body['hydra:view']['hydra:next'], undefined);
  const variables = res.body['hydra:search']['hydra:mapping'].map((m: { variable: string }) => m.variable);
  for (const v of [
    'user',
    'user[]',
    'sport',
    'sport[]',
    'startdate[after]',
    'createdAt[strictly_before]',
    'trackFlag',
    'order[duration]',
  ])
    t.true(variables.includes(v), v);
  for (const query of ['?limit=0', '?limit=101', '?page=0', '?page=abc'])
    t.is((await list(u, query)).status, 422, query);
});

test('list filters: user / user[], sport / sport[] (IRI or id), startdate and createdAt bounds, trackFlag', async (t) => {
  const u = await api.user();
  const other = await api.user();
  const run1 = await created(u, { startdate: '2024-01-01T10:00:00+00:00' });
  const hike = await created(u, {
    sport: `/v2/sports/${HIKING}`,
    startdate: '2024-02-01T10:00:00+00:00',
    locations: { '0': { latitude: 1, longitude: 2 } },
  });
  const run2 = await created(u, { startdate: '2024-03-01T10:00:00+00:00' });
  const q = async (query: string) => {
    const res = await list(u, query);
    t.is(res.status, 200, `${query}: ${JSON.stringify(res.body).slice(0, 300)}`);
    return ids(res.body).sort();
  };
  const all = [run1.id, hike.id, run2.id].sort();
  t.deepEqual(await q(`?user=${me(u)}`), all);
  t.deepEqual(await q(`?user=${u.ldid}`), all);
  t.deepEqual(await q(`?user=${me(other)}`), []);
  t.deepEqual(await q(`?user[]=${me(other)}&user[]=${me(u)}`), all);
  t.deepEqual(await q(`?sport=/v2/sports/${HIKING}`), [hike.id]);
  t.deepEqual(await q(`?sport=${RUNNING}`), [run1.id, run2.id].sort());
  t.deepEqual(await q(`?sport[]=${RUNNING}&sport[]=/v2/sports/${HIKING}`), all);
  t.deepEqual(await q('?startdate[after]=2024-02-01T10:00:00%2B00:00'), [hike.id, run2.id].sort());
  t.deepEqual(await q('?startdate[strictly_after]=2024-02-01T10:00:00%2B00:00'), [run2.id]);
  t.deepEqual(await q('?startdate[before]=2024-02-01T11:00:00%2B01:00'), [run1.id, hike.id].sort());
  t.deepEqual(await q('?startdate[strictly_before]=2024-02-01T10:00:00Z'), [run1.id]);
  t.deepEqual(await q('?startdate[after]=2024-01-15T00:00:00Z&startdate[before]=2024-02-15T00:00:00Z&sport=168'), [
    hike.id,
  ]);
  t.deepEqual(await q('?trackFlag=true'), [hike.id]);
  t.deepEqual(await q('?trackFlag=0'), [run1.id, run2.id].sort());
  // createdAt: the creation instants (stored by the database).
  await db
    .updateTable('activities')
    .set({ created_at: new Date('2020-06-01T00:00:00Z') })
    .where('id', '=', run1.id)
    .execute();
  t.deepEqual(await q('?createdAt[before]=2021-01-01T00:00:00Z'), [run1.id]);
  t.deepEqual(await q('?createdAt[strictly_after]=2020-06-01T00:00:00Z'), [hike.id, run2.id].sort());
  for (const query of [
    '?sport=running',
    '?user=/v2/sports/1',
    '?startdate[after]=yesterday',
    '?startdate[after]=2024-01-01T00:00:00',
    '?trackFlag=maybe',
    '?order[startdate]=up',
  ]) {
    const res = await list(u, query);
    t.is(res.status, 422, query);
    t.like(res.body, { '@type': 'ConstraintViolationList' });
  }
});

test('list orders: order[startdate|createdAt|duration|id]=asc|desc, the first given sorts first', async (t) => {
  const u = await api.user();
  const a = await created(u, { startdate: '2024-01-03T00:00:00+00:00', duration: 20 });
  const b = await created(u, { startdate: '2024-01-01T00:00:00+00:00', duration: 10 });
  const c = await created(u, { startdate: '2024-01-02T00:00:00+00:00', duration: 20 });
  const q = async (query: string) => ids((await list(u, query)).body);
  t.deepEqual(await q(''), [a.id, c.id, b.id]);
  t.deepEqual(await q('?order[startdate]=asc'), [b.id, c.id, a.id]);
  t.deepEqual(await q('?order[startdate]=DESC'), [a.id, c.id, b.id]);
  t.deepEqual(await q('?order[duration]=asc&order[startdate]=asc'), [b.id, c.id, a.id]);
  t.deepEqual(await q('?order[duration]=desc&order[startdate]=desc'), [a.id, c.id, b.id]);
  t.deepEqual(await q('?order[createdAt]=asc'), [a.id, b.id, c.id]);
  t.deepEqual(await q('?order[createdAt]=desc'), [c.id, b.id, a.id]);
  t.deepEqual(await q('?order[id]=asc'), [a.id, b.id, c.id].sort());
});

test('the list queries use the activities indexes, led by user_id', async (t) => {
  const users = [await api.user(), await api.user()];
  for (const u of users) await ensureTrackingUser(db, { accountId: u.id, ldid: u.ldid, claims: {} });
  const rows = users.flatMap((u) =>
    Array.from({ length: 2000 }, (_, i) => ({
      user_id: u.ldid,
      sport_id: i % 3 === 0 ? HIKING : RUNNING,
      startdate: new Date(Date.UTC(2020, 0, 1 + i)),
      duration: (i * 37) % 7200,
      manual: true,
      data_summaries: '{}',
      location: 'null',
    })),
  );
  for (let i = 0; i < rows.length; i += 1000)
    await db
      .insertInto('activities')
      .values(rows.slice(i, i + 1000))
      .execute();
  await sql`analyze activities`.execute(db);
  const caller = users[0]?.ldid as string;
  const plan = async (filter: Parameters<typeof activitiesQuery>[2]) => {
    const lines = await activitiesQuery(db, caller, filter).limit(30).explain();
    return lines.map((r) => String(r['QUERY PLAN'])).join('\n');
  };
  const cases: [Parameters<typeof activitiesQuery>[2], string][] = [
    [{}, 'activities_user_startdate_idx'],
    [{ startdate: { after: new Date('2022-01-01T00:00:00Z') } }, 'activities_user_startdate_idx'],
    [{ order: [{ prop: 'createdAt', direction: 'asc' }] }, 'activities_user_created_idx'],
    [{ createdAt: { before: new Date('2030-01-01T00:00:00Z') } }, 'activities_user_'],
    [{ order: [{ prop: 'duration', direction: 'desc' }] }, 'activities_user_duration_idx'],
    [{ order: [{ prop: 'id', direction: 'asc' }] }, 'activities_user_id_idx'],
    [{ sports: [HIKING], startdate: { after: new Date('2022-01-01T00:00:00Z') } }, 'activities_user_'],
  ];
  for (const [filter, index] of cases) {
    const p = await plan(filter);
    t.regex(p, new RegExp(`Index (Only )?Scan( Backward)? using ${index}`), p);
    t.notRegex(p, /Seq Scan/, p);
  }
});
