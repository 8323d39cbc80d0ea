import test from 'ava';
import { sql } from 'kysely';
import {
  createMeasure,
  MAX_MEASURE_MAGNITUDE,
  measuresQuery,
  measureValueProblem,
} from '../shared/tracking/measures/store.ts';
import { ensureTrackingUser } from '../shared/tracking/users/store.ts';
import { startTrackingApi, type TrackingTestUser } from './helpers/tracking.ts';

const api = await startTrackingApi();
test.after.always(() => api.close());

const WEIGHT = 181; // grams
const HEIGHT = 27; // cm
const LAP = 20; // bool
const ELEVATION = 14; // m, may be negative

const me = (u: TrackingTestUser) => `/v2/users/${u.ldid}`;
const measure = (u: TrackingTestUser, fields: Record<string, unknown> = {}) => ({
  user: me(u),
  datatype: `/v2/datatypes/${WEIGHT}`,
  value: 72500,
  date: '2024-05-01T08:30:00+02:00',
  ...fields,
});
const post = (u: TrackingTestUser, body: unknown) => api.call('POST', '/user_measures', u, { body });
const list = (u: TrackingTestUser, query = '') => api.call('GET', `/user_measures${query}`, u);
const ids = (body: { 'hydra:member': { id: string }[] }) => body['hydra:member'].map((m) => m.id);
const violations = (body: { violations: { propertyPath: string }[] }) => body.violations.map((v) => v.propertyPath);

test('POST stores a measure of the caller: 201, the UserMeasure in JSON-LD, Location; GET answers it', async (t) => {
  const u = await api.user();
  const res = await post(u, measure(u));
  t.is(res.status, 201);
  t.regex(res.headers.get('content-type') ?? '', /^application\/ld\+json/);
  const m = res.body;
  t.like(m, {
    '@context': '/v2/contexts/UserMeasure',
    '@type': 'UserMeasure',
    user: me(u),
    datatype: '/v2/datatypes/181',
    value: 72500,
    date: '2024-05-01T06:30:00+00:00',
  });
  t.regex(m.id, /^[0-9a-f]{32}$/);
  t.is(m['@id'], `/v2/user_measures/${m.id}`);
  t.regex(m.createdAt, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\+00:00$/);
  t.is(m.updatedAt, m.createdAt);
  t.is(res.headers.get('location'), `${api.config.PUBLIC_URL}/v2/user_measures/${m.id}`);

  const got = await api.call('GET', `/user_measures/${m.id}`, u);
  t.is(got.status, 200);
  t.deepEqual(got.body, m);
  // An absolute IRI and JSON-LD members echoed from a read are accepted too.
  const again = await post(u, {
    ...measure(u, { user: `${api.config.PUBLIC_URL}${me(u)}` }),
    '@context': '/v2/contexts/UserMeasure',
    '@type': 'UserMeasure',
  });
  t.is(again.status, 201);
});

test('POST refuses another user, an unknown or malformed datatype, a bad date or value: 422 naming the field', async (t) => {
  const u = await api.user();
  const other = await api.user();
  const cases: [Record<string, unknown>, string][] = [
    [measure(u, { user: me(other) }), 'user'],
    [measure(u, { user: '/v2/sports/121' }), 'user'],
    [measure(u, { datatype: '/v2/datatypes/999999' }), 'datatype'],
    [measure(u, { datatype: '/v2/sports/121' }), 'datatype'],
    [measure(u, { datatype: 181 }), 'datatype'],
    [measure(u, { date: '2024-05-01T08:30:00' }), 'date'],
    [measure(u, { date: '1850-01-01T00:00:00+00:00' }), 'date'],
    [measure(u, { date: '2024-02-30T08:30:00+00:00' }), 'date'],
    [measure(u, { date: '2023-02-29T08:30:00+00:00' }), 'date'],
    [measure(u, { date: '2024-01-01T24:00:00+00:00' }), 'date'],
    [measure(u, { value: '72500' }), 'value'],
    [measure(u, { value: -1 }), 'value'],
    [measure(u, { value: MAX_MEASURE_MAGNITUDE * 10 }), 'value'],
    [measure(u, { datatype: `/v2/datatypes/${LAP}`, value: 2 }), 'value'],
    [measure(u, { datatype: `/v2/datatypes/${HEIGHT}`, value: -170 }), 'value'],
  ];
  for (const [body, field] of cases) {
    const res = await post(u, body);
    t.is(res.status, 422, JSON.stringify(body));
    t.is(res.body['@type'], 'ConstraintViolationList');
    t.deepEqual(violations(res.body), [field], JSON.stringify(body));
  }
  const missing = await post(u, {});
  t.is(missing.status, 422);
  t.deepEqual(violations(missing.body).sort(), ['datatype', 'date', 'user', 'value']);
  // The rules on references and value report together.
  const both = await post(u, measure(u, { user: me(other), value: -1 }));
  t.deepEqual(violations(both.body), ['user', 'value']);
  const extra = await post(u, { ...measure(u), valeu: 1 });
  t.is(extra.status, 422);
  t.deepEqual(violations(extra.body), ['valeu']);
  t.is((await post(u, measure(u, { date: '2024-02-29T23:59:59.5-01:00' }))).status, 201);
  // Negative values stay allowed where the unit allows them (an elevation below sea level).
  t.is((await post(u, measure(u, { datatype: `/v2/datatypes/${ELEVATION}`, value: -12 }))).status, 201);
  t.is(
    await api.database.db.selectFrom('user_measures').where('user_id', '=', other.ldid).select('id').executeTakeFirst(),
    undefined,
  );
});

test('every operation needs the API key and a token (401 in the Hydra format)', async (t) => {
  const u = await api.user();
  const noToken = await api.call('GET', '/user_measures', null);
  t.is(noToken.status, 401);
  t.is(noToken.body['@type'], 'hydra:Error');
  const noKey = await api.fetch('/v2/user_measures', { headers: { authorization: `Bearer ${u.token}` } });
  t.is(noKey.status, 401);
  t.is((await post({ ...u, token: 'nope' }, measure(u))).status, 401);
});

test("the list holds the caller's measures only, filtered by datatype (IRI or id, scalar or array)", async (t) => {
  const u = await api.user();
  const other = await api.user();
  const w1 = (await post(u, measure(u, { date: '2024-01-01T00:00:00+00:00' }))).body.id;
  const w2 = (await post(u, measure(u, { date: '2024-02-01T00:00:00+00:00', value: 71000 }))).body.id;
  const h = (await post(u, measure(u, { datatype: '/v2/datatypes/27', value: 180 }))).body.id;
  await post(other, measure(other));

  const all = await list(u);
  t.is(all.status, 200);
  t.is(all.body['@type'], 'hydra:Collection');
  t.is(all.body['@id'], '/v2/user_measures');
  t.is(all.body['hydra:totalItems'], 3);
  t.deepEqual(ids(all.body), [w1, w2, h]); // by date ascending
  t.like(all.body['hydra:member'][0], { '@id': `/v2/user_measures/${w1}`, '@type': 'UserMeasure', value: 72500 });

  for (const q of [
    '?datatype=181',
    '?datatype=/v2/datatypes/181',
    `?datatype=${encodeURIComponent('/v2/datatypes/181')}`,
    '?datatype[]=181',
  ])
    t.deepEqual(ids((await list(u, q)).body), [w1, w2], q);
  for (const q of [
    '?datatype[]=181&datatype[]=27',
    '?datatype=181&datatype=/v2/datatypes/27',
    '?datatype=27&datatype[]=181',
  ])
    t.deepEqual(ids((await list(u, q)).body), [w1, w2, h], q);
  t.deepEqual(ids((await list(u, '?datatype=999999')).body), []);

  for (const q of ['?datatype=abc', '?datatype=/v2/sports/121', '?datatype[]=1.5']) {
    const bad = await list(u, q);
    t.is(bad.status, 422, q);
    t.regex(bad.body.violations[0].propertyPath, /^datatype/, q);
  }
  // The `user` filter cannot reach other users' measures.
  t.deepEqual(ids((await list(u, `?user=${me(other)}`)).body), []);
  t.deepEqual(ids((await list(u, `?user[]=${u.ldid}&datatype=27`)).body), [h]);
  t.deepEqual(ids((await list(other, '')).body).length, 1);
  const search = all.body['hydra:search'];
  t.is(search['@type'], 'hydra:IriTemplate');
  for (const v of ['datatype', 'datatype[]', 'date[after]', 'date[strictly_before]', 'order[date]', 'order[id]'])
    t.true(
      search['hydra:mapping'].some((m: { variable: string }) => m.variable === v),
      v,
    );
});

test('date filters: after and before include the bound, strictly_ excludes it; offsets are honoured', async (t) => {
  const u = await api.user();
  const at = (d: string) => post(u, measure(u, { date: d })).then((r) => r.body.id as string);
  const jan = await at('2024-01-01T00:00:00+00:00');
  const feb = await at('2024-02-01T00:00:00+00:00');
  const mar = await at('2024-03-01T00:00:00+00:00');
  const q = (s: string) => list(u, s).then((r) => ids(r.body));
  t.deepEqual(await q('?date[after]=2024-02-01T00:00:00%2B00:00'), [feb, mar]);
  t.deepEqual(await q('?date[strictly_after]=2024-02-01T00:00:00%2B00:00'), [mar]);
  t.deepEqual(await q('?date[before]=2024-02-01T00:00:00%2B00:00'), [jan, feb]);
  t.deepEqual(await q('?date[strictly_before]=2024-02-01T00:00:00%2B00:00'), [jan]);
  // 01:00+01:00 is midnight UTC: the same instant.
  t.deepEqual(await q('?date[after]=2024-02-01T01:00:00%2B01:00&date[before]=2024-02-01T01:00:00%2B01:00'), [feb]);
  t.deepEqual(await q('?date[after]=2024-01-15T00:00:00Z&date[strictly_before]=2024-03-01T00:00:00Z'), [feb]);
  const bad = await list(u, '?date[after]=yesterday');
  t.is(bad.status, 422);
  t.deepEqual(violations(bad.body), ['date[after]']);
});

test('order[date], order[id], order[createdAt] in either direction; the first given sorts first', async (t) => {
  const u = await api.user();
  const made: { id: string; date: string }[] = [];
  for (const date of ['2024-03-01T00:00:00Z', '2024-01-01T00:00:00Z', '2024-02-01T00:00:00Z']) {
    made.push({ id: (await post(u, measure(u, { date }))).body.id, date });
    await new Promise((r) => setTimeout(r, 5)); // distinct createdAt
  }
  const byDate = [...made].sort((a, b) => a.date.localeCompare(b.date)).map((m) => m.id);
  const byId = made.map((m) => m.id).sort();
  const q = (s: string) => list(u, s).then((r) => ids(r.body));
  t.deepEqual(await q('?order[date]=asc'), byDate);
  t.deepEqual(await q('?order[date]=desc'), [...byDate].reverse());
  t.deepEqual(await q('?order[date]=DESC'), [...byDate].reverse());
  t.deepEqual(await q('?order[id]=asc'), byId);
  t.deepEqual(await q('?order[id]=desc'), [...byId].reverse());
  t.deepEqual(
    await q('?order[createdAt]=asc'),
    made.map((m) => m.id),
  );
  t.deepEqual(await q('?order[createdAt]=desc'), made.map((m) => m.id).reverse());
  // Same value for every row on the first key: the second one decides.
  await api.database.db
    .updateTable('user_measures')
    .set({ date: new Date('2024-01-01T00:00:00Z') })
    .where('user_id', '=', u.ldid)
    .execute();
  t.deepEqual(await q('?order[date]=asc&order[id]=desc'), [...byId].reverse());
  const bad = await list(u, '?order[date]=up');
  t.is(bad.status, 422);
  t.deepEqual(violations(bad.body), ['order[date]']);
});

test('paging: limit (default 30, at most 100) and page, with hydra:totalItems and the view links', async (t) => {
  const u = await api.user();
  const rows = Array.from({ length: 35 }, (_, i) => ({
    user_id: u.ldid,
    datatype_id: WEIGHT,
    value: 70000 + i,
    date: new Date(Date.UTC(2023, 0, 1 + i)),
  }));
  await ensureTrackingUser(api.database.db, { accountId: u.id, ldid: u.ldid, claims: {} });
  await api.database.db.insertInto('user_measures').values(rows).execute();
  const first = await list(u);
  t.is(first.body['hydra:member'].length, 30);
  t.is(first.body['hydra:totalItems'], 35);
  t.is(first.body['hydra:view']['hydra:next'], '/v2/user_measures?page=2&limit=30');
  const second = await list(u, '?limit=10&page=4');
  t.deepEqual(
    second.body['hydra:member'].map((m: { value: number }) => m.value),
    [70030, 70031, 70032, 70033, 70034],
  );
  t.is(second.body['hydra:view']['hydra:next'], undefined);
  t.is(second.body['hydra:view']['hydra:previous'], '/v2/user_measures?limit=10&page=3');
  t.deepEqual((await list(u, '?page=9')).body['hydra:member'], []);
  for (const q of ['?limit=101', '?limit=0', '?page=0', '?page=10001', '?limit=abc'])
    t.is((await list(u, q)).status, 422, q);
  t.is((await list(u, '?limit=100')).body['hydra:member'].length, 35);
});

test("PUT changes the fields sent of the caller's measure; the rules of the creation apply", async (t) => {
  const u = await api.user();
  const other = await api.user();
  const m = (await post(u, measure(u))).body;
  await new Promise((r) => setTimeout(r, 5));
  const res = await api.call('PUT', `/user_measures/${m.id}`, u, { body: { value: 71800 } });
  t.is(res.status, 200);
  t.like(res.body, { id: m.id, value: 71800, date: m.date, datatype: m.datatype, createdAt: m.createdAt });
  const row = await api.database.db
    .selectFrom('user_measures')
    .select(['created_at', 'updated_at'])
    .where('id', '=', m.id)
    .executeTakeFirstOrThrow();
  t.true(row.updated_at > row.created_at);

  const moved = await api.call('PUT', `/user_measures/${m.id}`, u, {
    body: { ...measure(u), datatype: '/v2/datatypes/27', value: 181, date: '2024-06-01T10:00:00-05:00' },
  });
  t.is(moved.status, 200);
  t.like(moved.body, { datatype: '/v2/datatypes/27', value: 181, date: '2024-06-01T15:00:00+00:00' });

  for (const [body, field] of [
    [{ user: me(other) }, 'user'],
    [{ datatype: '/v2/datatypes/999999' }, 'datatype'],
    [{ value: -5 }, 'value'],
    [{ datatype: `/v2/datatypes/${LAP}` }, 'value'], // 181 is no boolean
    [{ date: 'tomorrow' }, 'date'],
  ] as const) {
    const bad = await api.call('PUT', `/user_measures/${m.id}`, u, { body });
    t.is(bad.status, 422, JSON.stringify(body));
    t.deepEqual(violations(bad.body), [field], JSON.stringify(body));
  }
  t.is((await api.call('PUT', `/user_measures/${m.id}`, u, { body: {} })).status, 422);
  t.like((await api.call('GET', `/user_measures/${m.id}`, u)).body, { value: 181 });
});

test("another user's measure is a 404 for GET, PUT and DELETE, as are unknown and malformed ids", async (t) => {
  const u = await api.user();
  const other = await api.user();
  const m = (await post(u, measure(u))).body;
  for (const [method, body] of [
    ['GET', undefined],
    ['PUT', { value: 1 }],
    ['DELETE', undefined],
  ] as const) {
    const res = await api.call(method, `/user_measures/${m.id}`, other, body ? { body } : {});
    t.is(res.status, 404, method);
    t.is(res.body['@type'], 'hydra:Error', method);
  }
  t.like((await api.call('GET', `/user_measures/${m.id}`, u)).body, { value: 72500 });
  for (const id of ['0123456789abcdef0123456789abcdef', 'a%2Fb', 'x'.repeat(65), '%20'])
    t.is((await api.call('GET', `/user_measures/${id}`, u)).status, 404, id);
});

test('DELETE answers 204; the measure is gone', async (t) => {
  const u = await api.user();
  const m = (await post(u, measure(u))).body;
  const res = await api.call('DELETE', `/user_measures/${m.id}`, u);
  t.is(res.status, 204);
  t.is(res.body, undefined);
  t.is((await api.call('GET', `/user_measures/${m.id}`, u)).status, 404);
  t.is((await api.call('DELETE', `/user_measures/${m.id}`, u)).status, 404);
});

test('measureValueProblem: finite, bounded, booleans 0/1, non-negative units', (t) => {
  t.is(measureValueProblem('g', 72500), undefined);
  t.is(measureValueProblem('m', -400), undefined);
  t.is(measureValueProblem('none', -3), undefined);
  t.is(measureValueProblem('deg', -12.5), undefined);
  t.is(measureValueProblem('bool', 1), undefined);
  t.regex(measureValueProblem('g', Number.NaN) ?? '', /finite/);
  t.regex(measureValueProblem('m', Number.POSITIVE_INFINITY) ?? '', /finite/);
  t.regex(measureValueProblem('m', -2e12) ?? '', /between/);
  t.regex(measureValueProblem('bool', 0.5) ?? '', /0 or 1/);
  for (const unit of ['g', 'kg', 'cm', 'bpm', '%', 's', 'kcal'])
    t.regex(measureValueProblem(unit, -1) ?? '', /negative/, unit);
});

test('createMeasure (no HTTP) refuses a body naming another user', async (t) => {
  const u = await api.user();
  await ensureTrackingUser(api.database.db, { accountId: u.id, ldid: u.ldid, claims: {} });
  const error = await t.throwsAsync(
    createMeasure(api.database.db, u.ldid, { userId: 'someone-else', datatypeId: WEIGHT, value: 1, date: new Date() }),
  );
  t.like(error, { kind: 'invalid' });
});

test('the list queries use the measures indexes', async (t) => {
  // A realistic table: the caller's daily measures of 3 datatypes over 3 years, other users' too.
  const users = [await api.user(), await api.user(), await api.user()];
  for (const u of users) await ensureTrackingUser(api.database.db, { accountId: u.id, ldid: u.ldid, claims: {} });
  const rows = users.flatMap((u) =>
    [WEIGHT, HEIGHT, 28].flatMap((datatype_id) =>
      Array.from({ length: 1000 }, (_, i) => ({
        user_id: u.ldid,
        datatype_id,
        value: 1 + i,
        date: new Date(Date.UTC(2021, 0, 1 + i)),
      })),
    ),
  );
  for (let i = 0; i < rows.length; i += 1000)
    await api.database.db
      .insertInto('user_measures')
      .values(rows.slice(i, i + 1000))
      .execute();
  await sql`analyze user_measures`.execute(api.database.db);
  const caller = users[0]?.ldid as string;
  const plan = async (filter: Parameters<typeof measuresQuery>[2]) => {
    const q = measuresQuery(api.database.db, caller, filter);
    const lines = await q.limit(30).explain();
    return lines.map((r) => String(r['QUERY PLAN'])).join('\n');
  };
  const byDatatype = await plan({ datatypes: [WEIGHT], date: { after: new Date('2022-01-01T00:00:00Z') } });
  t.regex(byDatatype, /Index Scan using user_measures_user_idx/, byDatatype);
  t.regex(byDatatype, /Index Cond: \(\(user_id = .*datatype_id = 181.*date >= /, byDatatype);
  t.notRegex(byDatatype, /Seq Scan|(?<!Incremental )Sort {2}\(/, byDatatype);
  const byDate = await plan({ date: { before: new Date('2022-01-01T00:00:00Z') } });
  t.regex(byDate, /Index Scan using user_measures_user_date_idx/, byDate);
  // The index gives the default order (date); only ties on date are sorted, by id.
  t.notRegex(byDate, /Seq Scan|(?<!Incremental )Sort {2}\(/, byDate);
});
