import test from 'ava';
import { sql } from 'kysely';
import { listRecords, recordsQuery } from '../shared/tracking/records/records-read.ts';
import { ensureTrackingUser } from '../shared/tracking/users/store.ts';
import { startTrackingApi, type TrackingTestUser } from './helpers/tracking.ts';

// user_records is filled by the records job (next issue): these tests insert rows straight into it.
const api = await startTrackingApi();
test.after.always(() => api.close());
const db = api.database.db;

const RUNNING = 121;
const ROAD_CYCLING = 385;
const DURATION = 24;
const DISTANCE = 5;
const SPEED_MAX = 7;

async function userWithActivities(count: number): Promise<{ user: TrackingTestUser; activities: string[] }> {
  const user = await api.user();
  await ensureTrackingUser(db, { accountId: user.id, ldid: user.ldid, claims: {} });
  const activities: string[] = [];
  for (let i = 0; i < count; i++) {
    // Minimal rows in SQL: the columns with defaults are left to the table.
    const { rows } = await sql<{ id: string }>`
      insert into activities (user_id, sport_id, startdate, duration, manual)
      values (${user.ldid}, ${i % 2 === 0 ? RUNNING : ROAD_CYCLING}, ${new Date(Date.UTC(2024, 0, 1 + i, 8))}, 3600, true)
      returning id`.execute(db);
    const row = rows[0] as { id: string };
    activities.push(row.id);
  }
  return { user, activities };
}

interface RecordRow {
  id: string;
  activity: string;
  sport: number;
  type: string;
  datatype: number;
  value: number;
}

/** The n-th record of a fixture: created on February n+1, updated on March 10-n (so the two orders disagree). */
async function insertRecord(user: TrackingTestUser, r: Omit<RecordRow, 'id'>, n: number): Promise<RecordRow> {
  const row = await db
    .insertInto('user_records')
    .values({
      user_id: user.ldid,
      activity_id: r.activity,
      sport_id: r.sport,
      type: r.type,
      datatype_id: r.datatype,
      value: r.value,
      date: new Date('2024-01-01T08:00:00Z'),
      created_at: new Date(Date.UTC(2024, 1, 1 + n)),
      updated_at: new Date(Date.UTC(2024, 2, 10 - n)),
    })
    .returning('id')
    .executeTakeFirstOrThrow();
  return { id: row.id, ...r };
}

/** A user with 2 activities (running, cycling) and 6 records on them, created a day apart. */
async function fixture() {
  const { user, activities } = await userWithActivities(2);
  const [run, ride] = activities as [string, string];
  const specs: Omit<RecordRow, 'id'>[] = [
    { activity: run, sport: RUNNING, type: 'all', datatype: DISTANCE, value: 10000 },
    { activity: run, sport: RUNNING, type: 'all', datatype: DURATION, value: 3600 },
    { activity: run, sport: RUNNING, type: 'distance.5000m', datatype: DURATION, value: 1500 },
    { activity: run, sport: RUNNING, type: 'distance.1000m', datatype: DURATION, value: 280 },
    { activity: ride, sport: ROAD_CYCLING, type: 'all', datatype: DISTANCE, value: 42000 },
    { activity: ride, sport: ROAD_CYCLING, type: 'all', datatype: SPEED_MAX, value: 52000 },
  ];
  const records: RecordRow[] = [];
  for (const [i, spec] of specs.entries()) records.push(await insertRecord(user, spec, i));
  return { user, run, ride, records };
}

const list = (u: TrackingTestUser, query = '') => api.call('GET', `/user_records${query}`, u);
const ids = (body: { 'hydra:member': { id: string }[] }) => body['hydra:member'].map((m) => m.id);
const idsOf = (records: RecordRow[], keep: (r: RecordRow) => boolean = () => true) =>
  records
    .filter(keep)
    .map((r) => r.id)
    .sort();

test("the list holds the caller's records only, as UserRecord nodes, by id by default", async (t) => {
  const { user, run, records } = await fixture();
  const other = await fixture();
  const res = await list(user);
  t.is(res.status, 200);
  t.is(res.body['@type'], 'hydra:Collection');
  t.is(res.body['@id'], '/v2/user_records');
  t.is(res.body['hydra:totalItems'], 6);
  t.deepEqual(ids(res.body), idsOf(records));
  const first = records.find((r) => r.type === 'distance.5000m') as RecordRow;
  const node = res.body['hydra:member'].find((m: { id: string }) => m.id === first.id);
  t.deepEqual(node, {
    '@id': `/v2/user_records/${first.id}`,
    '@type': 'UserRecord',
    id: first.id,
    user: `/v2/users/${user.ldid}`,
    datatype: '/v2/datatypes/24',
    activity: `/v2/activities/${run}`,
    sport: '/v2/sports/121',
    type: 'distance.5000m',
    value: 1500,
    createdAt: '2024-02-03T00:00:00+00:00',
    updatedAt: '2024-03-08T00:00:00+00:00',
    date: '2024-01-01T08:00:00+00:00',
  });
  t.deepEqual(ids((await list(other.user)).body), idsOf(other.records));
  const search = res.body['hydra:search'];
  for (const v of [
    'activity',
    'activity[]',
    'sport',
    'sport[]',
    'type',
    'type[]',
    'datatype',
    'datatype[]',
    'order[value]',
  ])
    t.true(
      search['hydra:mapping'].some((m: { variable: string }) => m.variable === v),
      v,
    );
});

test('filters activity, sport, type and datatype: scalar, array and repeated forms, IRIs or bare ids', async (t) => {
  const { user, run, ride, records } = await fixture();
  const q = async (query: string) => {
    const res = await list(user, query);
    t.is(res.status, 200, query);
    return ids(res.body).sort();
  };
  const runIri = encodeURIComponent(`/v2/activities/${run}`);
  for (const query of [`?activity=${runIri}`, `?activity=${run}`, `?activity[]=${runIri}`])
    t.deepEqual(
      await q(query),
      idsOf(records, (r) => r.activity === run),
      query,
    );
  t.deepEqual(await q(`?activity[]=${run}&activity[]=${ride}`), idsOf(records));
  t.deepEqual(await q(`?activity=${run}&activity=${ride}`), idsOf(records));
  t.deepEqual(await q('?activity=unknownactivity'), []);

  for (const query of ['?sport=/v2/sports/385', '?sport=385', '?sport[]=385'])
    t.deepEqual(
      await q(query),
      idsOf(records, (r) => r.sport === ROAD_CYCLING),
      query,
    );
  t.deepEqual(await q('?sport[]=121&sport[]=/v2/sports/385'), idsOf(records));

  t.deepEqual(
    await q('?type=all'),
    idsOf(records, (r) => r.type === 'all'),
  );
  t.deepEqual(
    await q('?type[]=distance.5000m&type[]=distance.1000m'),
    idsOf(records, (r) => r.type.startsWith('distance.')),
  );
  t.deepEqual(await q('?type=distance.42195m'), []);

  for (const query of ['?datatype=24', '?datatype=/v2/datatypes/24', '?datatype[]=24'])
    t.deepEqual(
      await q(query),
      idsOf(records, (r) => r.datatype === DURATION),
      query,
    );
  t.deepEqual(
    await q('?datatype[]=5&datatype[]=7'),
    idsOf(records, (r) => r.datatype !== DURATION),
  );

  // Filters combine: every one must match.
  t.deepEqual(
    await q('?sport=121&type=all&datatype=5'),
    idsOf(records, (r) => r.sport === RUNNING && r.type === 'all' && r.datatype === DISTANCE),
  );
  t.deepEqual(await q(`?activity=${ride}&sport=121`), []);
  // Another user's IRI in `user` lists nothing; the caller's own lists everything.
  const stranger = await api.user();
  t.deepEqual(await q(`?user=/v2/users/${stranger.ldid}`), []);
  t.deepEqual(await q(`?user[]=/v2/users/${user.ldid}`), idsOf(records));
});

test('malformed filter values are 422 naming the parameter', async (t) => {
  const { user } = await fixture();
  for (const [query, param] of [
    ['?sport=running', 'sport'],
    ['?sport[]=/v2/datatypes/5', 'sport[]'],
    ['?datatype=1.5', 'datatype'],
    ['?activity=/v2/sports/121', 'activity'],
    ['?activity=/v2/activities/a/b', 'activity'],
    [`?type=${'x'.repeat(65)}`, 'type'],
    ['?type=', 'type'],
    ['?order[value]=biggest', 'order[value]'],
    ['?limit=101', 'limit'],
    ['?page=0', 'page'],
  ] as const) {
    const res = await list(user, query);
    t.is(res.status, 422, query);
    t.is(res.body['@type'], 'ConstraintViolationList', query);
    t.regex(res.body.violations[0].propertyPath, new RegExp(`^${param.replace(/[[\]]/g, '\\$&')}`), query);
  }
  const many = Array.from({ length: 101 }, (_, i) => `sport[]=${i + 1}`).join('&');
  t.is((await list(user, `?${many}`)).status, 422);
});

test('order[id|type|value|createdAt|updatedAt], ascending or descending, the first given first', async (t) => {
  const { user, records } = await fixture();
  const q = async (query: string) => ids((await list(user, query)).body);
  const sorted = (key: (r: RecordRow) => string | number, dir: 1 | -1) =>
    [...records]
      .sort((a, b) => {
        const x = key(a);
        const y = key(b);
        return (x < y ? -1 : x > y ? 1 : a.id < b.id ? -1 : 1) * (x === y ? 1 : dir);
      })
      .map((r) => r.id);
  t.deepEqual(await q('?order[id]=asc'), idsOf(records));
  t.deepEqual(await q('?order[id]=desc'), idsOf(records).reverse());
  t.deepEqual(
    await q('?order[value]=asc'),
    sorted((r) => r.value, 1),
  );
  t.deepEqual(
    await q('?order[value]=desc'),
    sorted((r) => r.value, -1),
  );
  t.deepEqual(
    await q('?order[type]=asc'),
    sorted((r) => r.type, 1),
  );
  t.deepEqual(
    await q('?order[type]=desc'),
    sorted((r) => r.type, -1),
  );
  // createdAt follows insertion (a day apart); updatedAt runs the other way (see insertRecord).
  t.deepEqual(
    await q('?order[createdAt]=asc'),
    records.map((r) => r.id),
  );
  t.deepEqual(await q('?order[createdAt]=desc'), records.map((r) => r.id).reverse());
  t.deepEqual(await q('?order[updatedAt]=asc'), records.map((r) => r.id).reverse());
  t.deepEqual(
    await q('?order[updatedAt]=desc'),
    records.map((r) => r.id),
  );
  // Two keys: type first, then value descending within a type.
  const byTypeThenValue = [...records]
    .sort((a, b) => (a.type === b.type ? b.value - a.value : a.type < b.type ? -1 : 1))
    .map((r) => r.id);
  t.deepEqual(await q('?order[type]=asc&order[value]=desc'), byTypeThenValue);
});

test('paging: limit and page, hydra:totalItems and view links', async (t) => {
  const { user, records } = await fixture();
  const page1 = await list(user, '?limit=4');
  t.deepEqual(ids(page1.body), idsOf(records).slice(0, 4));
  t.is(page1.body['hydra:totalItems'], 6);
  t.is(page1.body['hydra:view']['hydra:next'], '/v2/user_records?limit=4&page=2');
  const page2 = await list(user, '?limit=4&page=2');
  t.deepEqual(ids(page2.body), idsOf(records).slice(4));
  t.is(page2.body['hydra:view']['hydra:next'], undefined);
  t.deepEqual(ids((await list(user, '?limit=4&page=3')).body), []);
});

test("GET one record: the caller's own; another user's, unknown or malformed ids are 404", async (t) => {
  const { user, records } = await fixture();
  const other = await fixture();
  const mine = records[0] as RecordRow;
  const res = await api.call('GET', `/user_records/${mine.id}`, user);
  t.is(res.status, 200);
  t.like(res.body, { '@context': '/v2/contexts/UserRecord', '@id': `/v2/user_records/${mine.id}`, id: mine.id });
  for (const id of [other.records[0]?.id, '0123456789abcdef0123456789abcdef', 'x'.repeat(65), 'a%2Fb']) {
    const miss = await api.call('GET', `/user_records/${id}`, user);
    t.is(miss.status, 404, id);
    t.is(miss.body['@type'], 'hydra:Error', id);
  }
  t.is((await api.call('GET', `/user_records/${mine.id}`, null)).status, 401);
  // Read only: no writes on records.
  t.is((await api.call('POST', '/user_records', user, { body: {} })).status, 405);
  t.is((await api.call('DELETE', `/user_records/${mine.id}`, user)).status, 405);
});

test('a record goes away with its activity', async (t) => {
  const { user, run, records } = await fixture();
  await db.deleteFrom('activities').where('id', '=', run).execute();
  t.deepEqual(
    ids((await list(user)).body),
    idsOf(records, (r) => r.activity !== run),
  );
});

test("listRecords (no HTTP): the unique index led by user_id finds the caller's rows", async (t) => {
  const { user } = await fixture();
  const found = await listRecords(
    db,
    user.ldid,
    { sports: [RUNNING], order: [{ prop: 'value', direction: 'desc' }] },
    { page: 1, limit: 2 },
  );
  t.is(found.total, 4);
  t.deepEqual(
    found.items.map((r) => r.value),
    [10000, 3600],
  );
  const plan = await db.connection().execute(async (conn) => {
    await sql`set enable_seqscan = off`.execute(conn);
    try {
      const rows = await recordsQuery(conn, user.ldid, { types: ['all'] }).explain();
      return rows.map((r) => String(r['QUERY PLAN'])).join('\n');
    } finally {
      await sql`reset enable_seqscan`.execute(conn);
    }
  });
  t.regex(plan, /user_records_user_id_sport_id_type_datatype_id_key/, plan);
});
