import { isDeepStrictEqual } from 'node:util';
import test from 'ava';
import { CompiledQuery, sql } from 'kysely';
import { sumupsStatement, userTotals } from '../shared/tracking/sumups/read.ts';
import { startWorkers } from '../workers/worker.ts';
import { applyNow, insertRawActivity, oracleRows, rollupRows } from './helpers/sumups.ts';
import { startTrackingApi, type TrackingTestUser } from './helpers/tracking.ts';
import { activity, me } from './helpers/tracking-activities.ts';
import { type Body, waitFor } from './helpers/tracking-exports.ts';

const api = await startTrackingApi();
const { db } = api.database;
const workers = await startWorkers({ ...api.config, WORKER_QUEUES: ['records'], OUTBOX_POLL_MS: 50 });
test.after.always(async () => {
  await workers.close();
  await api.close();
});

const RUNNING = 121;
const CYCLING = 385;

const members = (body: Body) => body['hydra:member'] as Body[];
const violations = (body: Body) => (body.violations as { propertyPath: string; message: string }[]) ?? [];

/** Waits until the workers have brought `u`'s rollup in line with their activities; answers both. */
async function settled(u: TrackingTestUser) {
  const read = async () => ({ rollup: await rollupRows(db, [u.ldid]), oracle: await oracleRows(db, [u.ldid]) });
  return waitFor(read, (r) => r.oracle.length > 0 && isDeepStrictEqual(r.rollup, r.oracle));
}

/** A user with activities rolled up directly (no worker): two sports over two years, in UTC. */
async function fixture() {
  const u = await api.user();
  await api.call('GET', '/me', u);
  const add = async (sportId: number, iso: string, summaries: Record<string, number>) => {
    const id = await insertRawActivity(db, {
      userId: u.ldid,
      sportId,
      startdate: new Date(iso),
      duration: 1000,
      summaries,
    });
    await applyNow(db, id, u.ldid);
    return id;
  };
  await add(RUNNING, '2025-12-30T08:00:00Z', { '5': 10000, '18': 50 });
  await add(RUNNING, '2026-01-05T08:00:00Z', { '5': 5000.5, '23': 300 });
  await add(CYCLING, '2026-01-20T08:00:00Z', { '5': 40000, '18': 400, '4': 140 });
  await add(RUNNING, '2026-03-01T08:00:00Z', { '5': 8000 });
  return u;
}

const list = (u: TrackingTestUser, query = '') => api.call('GET', `/user_sumups${query}`, u);

test("through the API and the records workers: create, sport change and delete keep the statistics equal to the sums, in the user's zone", async (t) => {
  const u = await api.user();
  const put = await api.call('PUT', `/users/${u.ldid}`, u, { body: { timezone: 'europe/paris' } });
  t.is(put.status, 200);
  t.is(put.body.timezone, 'Europe/Paris');
  const post = async (fields: Record<string, unknown>) => {
    const res = await api.call('POST', '/activities', u, { body: activity(u, fields) });
    t.is(res.status, 201, JSON.stringify(res.body));
    return res.body.id as string;
  };
  // Sunday 31 March 23:30 UTC is Monday 1 April 01:30 in Paris: the week of 1 April, the month of April.
  const late = await post({
    startdate: '2024-03-31T23:30:00+00:00',
    duration: 1800,
    dataSummaries: { '5': 5000, '24': 1800 },
  });
  const early = await post({
    startdate: '2024-03-30T10:00:00+01:00',
    duration: 3600,
    dataSummaries: { '5': 10000.25, '18': 120 },
  });
  let state = await settled(u);
  t.deepEqual(state.rollup, state.oracle);
  const weeks = await list(u, '?type=week&exists[sport]=false&datatype=98');
  t.is(weeks.status, 200);
  t.deepEqual(
    members(weeks.body).map((m) => [m.period, m.value]),
    [
      ['2024-03-25', 1],
      ['2024-04-01', 1],
    ],
  );

  t.is((await api.call('PUT', `/activities/${late}`, u, { body: { sport: `/v2/sports/${CYCLING}` } })).status, 200);
  state = await waitFor(
    async () => ({ rollup: await rollupRows(db, [u.ldid]), oracle: await oracleRows(db, [u.ldid]) }),
    (r) => r.rollup.some((row) => row.sport_id === CYCLING) && isDeepStrictEqual(r.rollup, r.oracle),
  );
  t.deepEqual(state.rollup, state.oracle);
  t.true(state.rollup.some((r) => r.sport_id === CYCLING && r.datatype_id === 5 && r.value === '5000'));

  t.is((await api.call('DELETE', `/activities/${early}`, u)).status, 204);
  state = await waitFor(
    async () => ({ rollup: await rollupRows(db, [u.ldid]), oracle: await oracleRows(db, [u.ldid]) }),
    (r) => !r.rollup.some((row) => row.sport_id === RUNNING) && isDeepStrictEqual(r.rollup, r.oracle),
  );
  t.deepEqual(state.rollup, state.oracle);
  t.deepEqual(
    state.rollup.filter((r) => r.sport_id === null && r.datatype_id === 98).map((r) => `${r.type} ${r.period}`),
    ['month 2024-04-01', 'week 2024-04-01', 'year 2024-01-01'],
  );

  // Another zone: the rebuild job cuts the periods again (Sunday 31 March 23:30 UTC is 19:30 in
  // New York: the week of 25 March, the month of March).
  t.is((await api.call('PUT', `/users/${u.ldid}`, u, { body: { timezone: 'America/New_York' } })).status, 200);
  state = await waitFor(
    async () => ({ rollup: await rollupRows(db, [u.ldid]), oracle: await oracleRows(db, [u.ldid]) }),
    (r) => r.rollup.some((row) => row.period === '2024-03-25') && isDeepStrictEqual(r.rollup, r.oracle),
  );
  t.deepEqual(state.rollup, state.oracle);
  t.deepEqual(
    state.rollup.filter((r) => r.sport_id === null && r.datatype_id === 98).map((r) => `${r.type} ${r.period}`),
    ['month 2024-03-01', 'week 2024-03-25', 'year 2024-01-01'],
  );
  const states = await db.selectFrom('activity_sumup_state').select('timezone').where('user_id', '=', u.ldid).execute();
  t.deepEqual(
    states.map((s) => s.timezone),
    ['America/New_York'],
  );
});

test("GET /user_sumups: a Hydra collection of UserSumup with IRIs, the caller's only, in period order", async (t) => {
  const u = await fixture();
  const other = await fixture();
  const res = await list(u, '?type=year&datatype=/v2/datatypes/5');
  t.is(res.status, 200);
  t.like(res.body, {
    '@context': '/v2/contexts/UserSumup',
    '@id': '/v2/user_sumups',
    '@type': 'hydra:Collection',
    'hydra:totalItems': 5,
  });
  const first = members(res.body)[0] as Body;
  t.deepEqual(
    Object.keys(first).sort(),
    ['@id', '@type', 'createdAt', 'datatype', 'id', 'period', 'sport', 'type', 'updatedAt', 'user', 'value'].sort(),
  );
  t.like(first, {
    '@type': 'UserSumup',
    type: 'year',
    user: me(u),
    sport: null,
    datatype: '/v2/datatypes/5',
    period: '2025-01-01',
    value: 10000,
  });
  t.is(first['@id'], `/v2/user_sumups/${first.id}`);
  t.deepEqual(
    members(res.body).map((m) => [m.period, m.sport, m.value]),
    [
      ['2025-01-01', null, 10000],
      ['2025-01-01', '/v2/sports/121', 10000],
      ['2026-01-01', null, 53000.5],
      ['2026-01-01', '/v2/sports/121', 13000.5],
      ['2026-01-01', '/v2/sports/385', 40000],
    ],
  );
  // Pages of 4: the cycling row of 2026 is on the second.
  const all = await list(u, '?type=year&datatype=5&limit=4&page=2');
  t.deepEqual(
    members(all.body).map((m) => [m.period, m.sport, m.value]),
    [['2026-01-01', '/v2/sports/385', 40000]],
  );
  t.is(all.body['hydra:totalItems'], 5);
  const past = await list(u, '?type=year&datatype=5&limit=4&page=3');
  t.deepEqual(members(past.body), []);
  t.is(past.body['hydra:totalItems'], 5, 'a page past the end still counts');
  // Someone else's rows never show, whatever the user filter says.
  t.deepEqual(members((await list(u, `?user=${me(other)}`)).body), []);
  t.is((await list(u, `?user=${me(u)}&type=year&datatype=5`)).body['hydra:totalItems'], 5);
  const item = await api.call('GET', `/user_sumups/${first.id}`, u);
  t.is(item.status, 200);
  t.like(item.body, { '@context': '/v2/contexts/UserSumup', '@id': first['@id'], value: 10000 });
  t.is((await api.call('GET', `/user_sumups/${first.id}`, other)).status, 404);
});

test('GET /user_sumups filters: type, period (exact, between, gt, gte, lt, lte), sport, exists[sport], datatype, orders', async (t) => {
  const u = await fixture();
  const rows = async (query: string) => {
    const res = await list(u, `${query}&limit=100`);
    t.is(res.status, 200, `${query}: ${JSON.stringify(res.body)}`);
    return members(res.body).map(
      (m) => `${m.type} ${m.period} ${m.sport ?? 'all'} ${String(m.datatype).split('/').pop()} ${m.value}`,
    );
  };
  // Year by month, every sport, distance: what an app's yearly chart reads.
  t.deepEqual(await rows('?type=month&period[between]=2026-01-01..2026-12-01&exists[sport]=false&datatype=5'), [
    'month 2026-01-01 all 5 45000.5',
    'month 2026-03-01 all 5 8000',
  ]);
  t.deepEqual(
    await rows('?type[]=month&type[]=year&period=2025-12-01&period=2025-01-01&exists[sport]=false&datatype=98'),
    ['year 2025-01-01 all 98 1', 'month 2025-12-01 all 98 1'],
  );
  // 30 December 2025 is a Tuesday: its ISO week starts on Monday 29 December, in the year 2025.
  t.deepEqual(await rows('?type=week&period[lt]=2026-01-01&sport=/v2/sports/121&datatype=18'), [
    'week 2025-12-29 /v2/sports/121 18 50',
  ]);
  t.deepEqual(await rows('?type=week&period[lte]=2026-01-05&period[gt]=2025-12-29&exists[sport]=false&datatype=98'), [
    'week 2026-01-05 all 98 1',
  ]);
  t.deepEqual(await rows('?type=month&period[gte]=2026-03-01&exists[sport]=true&datatype=24'), [
    'month 2026-03-01 /v2/sports/121 24 1000',
  ]);
  t.deepEqual(await rows(`?type=year&sport=${CYCLING}&datatype[]=18&datatype[]=/v2/datatypes/23`), [
    'year 2026-01-01 /v2/sports/385 18 400',
  ]);
  // Orders: by datatype descending first, then the default (period, type, every sport first, id).
  t.deepEqual(await rows('?type=year&period=2026-01-01&exists[sport]=false&order[datatype.id]=desc'), [
    'year 2026-01-01 all 98 3',
    'year 2026-01-01 all 24 3000',
    'year 2026-01-01 all 23 300',
    'year 2026-01-01 all 18 400',
    'year 2026-01-01 all 5 53000.5',
  ]);
  t.deepEqual(await rows('?type=month&exists[sport]=false&datatype=98&order[period]=desc'), [
    'month 2026-03-01 all 98 1',
    'month 2026-01-01 all 98 2',
    'month 2025-12-01 all 98 1',
  ]);
  const byId = await list(u, '?order[id]=asc&limit=100');
  const ids = members(byId.body).map((m) => String(m.id));
  t.deepEqual(ids, [...ids].sort());
  // Heart rate (4) is not cumulable: never rolled up.
  t.false((await rows('?type=year')).some((r) => r.endsWith(' 4 140')));
});

test('GET /user_sumups: a bad type, period, datatype or sport is a 422 naming the parameter', async (t) => {
  const u = await fixture();
  const cases: [string, string, RegExp][] = [
    ['?type=day', 'type', /must be week, month or year/],
    ['?type[]=month&type[]=fortnight', 'type[]', /must be week, month or year/],
    ['?period=2026-13-01', 'period', /YYYY-MM-DD/],
    ['?period[gte]=2026-02-30', 'period[gte]', /YYYY-MM-DD/],
    ['?period[lt]=March', 'period[lt]', /YYYY-MM-DD/],
    ['?period[between]=2026-01-01', 'period[between]', /YYYY-MM-DD\.\.YYYY-MM-DD/],
    ['?period[between]=2026-02-01..2026-01-01', 'period[between]', /2026-02-01 is after 2026-01-01/],
    ['?datatype=/v2/sports/5', 'datatype', /must be the IRI or the integer id of a Datatype/],
    ['?datatype=4', 'datatype', /datatype 4 is not summed/],
    ['?datatype[]=5&datatype[]=999999', 'datatype', /datatype 999999 is not summed/],
    ['?sport=running', 'sport', /must be the IRI or the integer id of a Sport/],
    ['?exists[sport]=maybe', 'exists[sport]', /must be true or false/],
  ];
  for (const [query, parameter, message] of cases) {
    const res = await list(u, query);
    t.is(res.status, 422, query);
    t.is(res.body['@type'], 'ConstraintViolationList', query);
    const found = violations(res.body).find((v) => v.propertyPath === parameter);
    t.truthy(found, `${query}: ${JSON.stringify(res.body.violations)}`);
    t.regex(found?.message ?? '', message, query);
  }
});

test('GET /users/{id}/stats: totals over all time per datatype, every sport and per sport; another id is a 404', async (t) => {
  const u = await fixture();
  const other = await api.user();
  const res = await api.call('GET', `/users/${u.ldid}/stats`, u);
  t.is(res.status, 200);
  t.deepEqual(res.body, {
    '@context': '/v2/contexts/UserStats',
    '@id': `/v2/users/${u.ldid}/stats`,
    '@type': 'UserStats',
    user: me(u),
    dataSummaries: { '5': 63000.5, '18': 450, '23': 300, '24': 4000, '98': 4 },
    sports: [
      { sport: '/v2/sports/121', dataSummaries: { '5': 23000.5, '18': 50, '23': 300, '24': 3000, '98': 3 } },
      { sport: '/v2/sports/385', dataSummaries: { '5': 40000, '18': 400, '24': 1000, '98': 1 } },
    ],
  });
  // Equal to the oracle's sums over every activity.
  const { rows } = await sql<{ value: string }>`
    select trim_scale(sum((data_summaries->>'5')::numeric))::text as value from activities where user_id = ${u.ldid}`.execute(
    db,
  );
  t.is(res.body.dataSummaries['5'], Number(rows[0]?.value));
  t.is((await api.call('GET', `/users/${other.ldid}/stats`, u)).status, 404);
  t.is((await api.call('GET', `/users/${u.ldid}/stats`, null)).status, 401);
  await api.call('GET', '/me', other);
  const empty = await api.call('GET', `/users/${other.ldid}/stats`, other);
  t.like(empty.body, { dataSummaries: {}, sports: [] });
});

test('PUT /users/{id} timezone: an IANA name in its canonical spelling, null for UTC; an unknown zone is a 422 naming it', async (t) => {
  const u = await api.user();
  for (const bad of ['Mars/Olympus_Mons', '+01:00', 'UTC+1', 'Europe/Pariss']) {
    const res = await api.call('PUT', `/users/${u.ldid}`, u, { body: { timezone: bad } });
    t.is(res.status, 422, bad);
    t.deepEqual(
      violations(res.body).map((v) => v.propertyPath),
      ['timezone'],
      bad,
    );
  }
  t.is((await api.call('PUT', `/users/${u.ldid}`, u, { body: { timezone: 42 } })).status, 422);
  t.is((await api.call('GET', '/me', u)).body.timezone, null, 'UTC until set');
  const set = await api.call('PUT', `/users/${u.ldid}`, u, { body: { timezone: 'US/Eastern' } });
  t.is(set.body.timezone, 'America/New_York');
  t.is((await api.call('GET', `/users/${u.ldid}`, u)).body.timezone, 'America/New_York');
  // The change asked for a rebuild of the statistics; sending the same zone again asks for none.
  await api.call('PUT', `/users/${u.ldid}`, u, { body: { timezone: 'America/New_York' } });
  const jobs = await db
    .selectFrom('outbox')
    .select('job_id')
    .where('job_name', '=', 'sumups-rebuild')
    .where(sql<string>`payload->>'userId'`, '=', u.ldid)
    .execute();
  t.is(jobs.length, 1);
  t.regex(jobs[0]?.job_id ?? '', new RegExp(`^sumups-rebuild-${u.ldid}-\\d{8}T\\d{9}Z$`));
  const cleared = await api.call('PUT', `/users/${u.ldid}`, u, { body: { timezone: null } });
  t.is(cleared.body.timezone, null);
});

test('each read is one statement over user_sumups_key (EXPLAIN, sequential scans off)', async (t) => {
  const u = await fixture();
  await sql`analyze user_sumups`.execute(db);
  const plan = await db.connection().execute(async (conn) => {
    await sql`set enable_seqscan = off`.execute(conn);
    try {
      const lines = async (q: { explain: () => Promise<Record<string, unknown>[]> }) =>
        (await q.explain()).map((r) => String(r['QUERY PLAN'])).join('\n');
      // The statement listSumups sends, explained with its values.
      const explained = async (s: { text: string; values: unknown[] }) =>
        (await conn.executeQuery<Record<string, unknown>>(CompiledQuery.raw(`explain ${s.text}`, s.values))).rows
          .map((r) => String(r['QUERY PLAN']))
          .join('\n');
      const page = { page: 1, limit: 30 };
      return {
        yearByMonth: await explained(
          sumupsStatement(
            u.ldid,
            { types: ['month'], period: { between: ['2026-01-01', '2026-12-01'] }, hasSport: false, datatypes: [5] },
            page,
          ),
        ),
        everything: await explained(sumupsStatement(u.ldid, {}, page)),
        totals: await lines(
          conn
            .selectFrom('user_sumups')
            .select(['sport_id', 'datatype_id', sql`sum(value)`.as('v')])
            .where('user_id', '=', u.ldid)
            .where('type', '=', 'year')
            .groupBy(['sport_id', 'datatype_id']),
        ),
      };
    } finally {
      await sql`reset enable_seqscan`.execute(conn);
    }
  });
  for (const [name, p] of Object.entries(plan)) {
    t.regex(p, /Index (Only )?Scan (using|on) user_sumups_key/, `${name}:\n${p}`);
    t.notRegex(p, /Seq Scan/, `${name}:\n${p}`);
  }
  // The bounds are index conditions, not filters over the user's rows.
  t.regex(plan.yearByMonth, /Index Cond: .*type.*period/s, plan.yearByMonth);
  t.is((await userTotals(db, u.ldid)).length, 14, 'every sport (5 datatypes), running (5), cycling (4)');
});

test('the Hydra documentation and the OpenAPI document describe UserSumup and UserStats', async (t) => {
  const docs = await api.call('GET', '/docs.jsonld', null);
  const classes = (docs.body['hydra:supportedClass'] as Body[]).map((c) => c['hydra:title'] ?? c['@id']);
  t.true(
    classes.some((c) => String(c).includes('UserSumup')),
    JSON.stringify(classes),
  );
  t.true(
    classes.some((c) => String(c).includes('UserStats')),
    JSON.stringify(classes),
  );
  t.is((await api.call('GET', '/contexts/UserStats', null)).status, 200);
  t.is((await api.call('GET', '/contexts/UserSumup', null)).status, 200);
  const openapi = (await (await api.fetch('/openapi.json')).json()) as { paths: Record<string, Body> };
  t.truthy(openapi.paths['/v2/user_sumups']?.get);
  t.truthy(openapi.paths['/v2/user_sumups/{id}']?.get);
  t.truthy(openapi.paths['/v2/users/{id}/stats']?.get);
  const list = openapi.paths['/v2/user_sumups']?.get as { parameters: { name: string }[] };
  const parameters = list.parameters.map((p) => p.name);
  for (const name of [
    'type',
    'period',
    'period[between]',
    'period[gt]',
    'period[gte]',
    'period[lt]',
    'period[lte]',
    'sport',
    'exists[sport]',
    'datatype',
    'user',
    'order[period]',
    'order[id]',
    'order[datatype.id]',
  ])
    t.true(parameters.includes(name), name);
});
