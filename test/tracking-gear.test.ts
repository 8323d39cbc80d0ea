import test from 'ava';
import { MAX_EQUIPMENTS_PER_USER } from '../shared/tracking/gear/store.ts';
import { compactTime, enqueueSumupsRebuild } from '../shared/tracking/sumups/rebuild-requests.ts';
import { startWorkers } from '../workers/worker.ts';
import { startTrackingApi, type TrackingTestUser } from './helpers/tracking.ts';
import { activity, me } from './helpers/tracking-activities.ts';
import { type Body, waitFor } from './helpers/tracking-exports.ts';
import { startReceiver, verified } from './helpers/webhook-receiver.ts';

// Gear (docs/tracking-gear-goals-challenges.md): the resource, its validation and limit, the
// activities' `equipments` (named, auto-assigned, moved by PUT, deleted), the totals the records
// workers keep, the sum-ups, the autocomplete and the `equipment_alert` web hook event.

const env = { WEBHOOKS_ALLOW_HTTP: 'true', WEBHOOKS_ALLOW_PRIVATE: 'true' };
const api = await startTrackingApi({ env });
const { db } = api.database;
const workers = await startWorkers({ ...api.config, WORKER_QUEUES: ['records', 'webhooks'], OUTBOX_POLL_MS: 50 });
const receiver = await startReceiver();
test.after.always(async () => {
  await receiver.close();
  await workers.close();
  await api.close();
});

const RUNNING = 121;
const CYCLING = 385;
const members = (body: Body) => body['hydra:member'] as Body[];
const paths = (body: Body) => (body.violations as { propertyPath: string }[]).map((v) => v.propertyPath);
const gearIri = (id: unknown) => `/v2/user_equipments/${id}`;

const shoes = (u: TrackingTestUser, fields: Body = {}) => ({
  user: me(u),
  category: 'shoes',
  brand: 'Kalenji',
  name: 'Kiprun KS900',
  ...fields,
});

async function created(u: TrackingTestUser, path: string, body: Body): Promise<Body> {
  const res = await api.call('POST', path, u, { body });
  if (res.status !== 201) throw new Error(`POST ${path}: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body;
}

/** The gear as GET answers it once its totals are `expected` (the records workers run meanwhile). */
async function totalsOf(u: TrackingTestUser, id: unknown, expected: Body): Promise<Body> {
  const read = async () => (await api.call('GET', `/user_equipments/${id}`, u)).body as Body;
  const done = (g: Body) => JSON.stringify(g.totals) === JSON.stringify(expected);
  const gear = await waitFor(read, done);
  if (!done(gear)) throw new Error(`totals ${JSON.stringify(gear.totals)}, expected ${JSON.stringify(expected)}`);
  return gear;
}

const totals = (distance: number, duration: number, movingTime: number, elevationGain: number, activities: number) => ({
  distance,
  duration,
  movingTime,
  elevationGain,
  activities,
});

test('gear: create, read, list with filters, update and delete; sum-ups as v2.26 IRIs, totals at 0', async (t) => {
  const u = await api.user();
  const res = await api.call('POST', '/user_equipments', u, {
    body: shoes(u, { sportsAutoAssigned: [`/v2/sports/${RUNNING}`], startDate: '2024-01-01T00:00:00+01:00' }),
  });
  t.is(res.status, 201, JSON.stringify(res.body));
  const g = res.body as Body;
  t.is(res.headers.get('location'), `${api.config.PUBLIC_URL}${gearIri(g.id)}`);
  t.like(g, {
    '@type': 'UserEquipment',
    '@id': gearIri(g.id),
    user: me(u),
    category: 'shoes',
    brand: 'Kalenji',
    sportsAutoAssigned: [`/v2/sports/${RUNNING}`],
    startDate: '2023-12-31T23:00:00+00:00',
    retired: false,
    alertDistance: null,
    alertedAt: null,
    totals: totals(0, 0, 0, 0, 0),
  });
  t.deepEqual(
    g.sumups,
    [5, 24, 30, 18, 98].map((d) => `${gearIri(g.id)}/sumups#${d}`),
  );
  const sumups = await api.call('GET', `/user_equipments/${g.id}/sumups`, u);
  t.is(sumups.status, 200);
  t.deepEqual(
    members(sumups.body).map((s) => [s['@id'], s.datatype, s.value]),
    [5, 24, 30, 18, 98].map((d) => [`${gearIri(g.id)}/sumups#${d}`, `/v2/datatypes/${d}`, 0]),
  );

  const bike = await created(u, '/user_equipments', {
    category: 'bike',
    brand: 'Triban',
    name: 'RC 520',
    sportsAutoAssigned: [`/v2/sports/${CYCLING}`],
    retired: true,
  });
  t.deepEqual((await api.call('GET', `/user_equipments/${g.id}`, u)).body, g);
  const list = async (query = '') =>
    members((await api.call('GET', `/user_equipments${query}`, u)).body).map((m) => m.id);
  t.deepEqual(await list(), [g.id, bike.id]);
  t.deepEqual(await list(`?sportsAutoAssigned=${CYCLING}`), [bike.id]);
  t.deepEqual(await list(`?sportsAutoAssigned[]=/v2/sports/${RUNNING}&sportsAutoAssigned[]=1`), [g.id]);
  t.deepEqual(await list('?retired=false'), [g.id]);
  t.deepEqual(await list(`?user=${me(await api.user())}`), []);
  t.is((await api.call('GET', '/user_equipments?limit=1&page=2', u)).body['hydra:totalItems'], 2);
  t.is((await api.call('GET', '/user_equipments?page=5', u)).body['hydra:totalItems'], 2);

  const put = await api.call('PUT', `/user_equipments/${g.id}`, u, {
    body: { ...g, brand: 'Asics', alertDistance: 700000 },
  });
  t.is(put.status, 200, JSON.stringify(put.body));
  t.like(put.body, { brand: 'Asics', name: 'Kiprun KS900', alertDistance: 700000, category: 'shoes' });

  const run = await created(u, '/activities', activity(u, { equipments: [gearIri(g.id)] }));
  t.deepEqual(run.equipments, [gearIri(g.id)]);
  const changedAt = () =>
    db
      .selectFrom('activities')
      .select('updated_at')
      .where('id', '=', run.id as string)
      .executeTakeFirstOrThrow();
  const before = await changedAt();
  t.is((await api.call('DELETE', `/user_equipments/${g.id}`, u)).status, 204);
  t.is((await api.call('GET', `/user_equipments/${g.id}`, u)).status, 404);
  t.deepEqual(((await api.call('GET', `/activities/${run.id}`, u)).body as Body).equipments, []);
  t.true((await changedAt()).updated_at > before.updated_at, 'its updatedAt moves (sync clients see it)');
});

test('gear: bad input is a 422 naming the field; another user sees 404; more than the limit is a 409', async (t) => {
  const u = await api.user();
  const other = await api.user();
  const bad = await api.call('POST', '/user_equipments', u, {
    body: shoes(u, {
      category: 'spaceship',
      brand: 'K',
      user: me(other),
      sportsAutoAssigned: ['/v2/sports/999999'],
      alertDistance: -3,
      colour: 'red',
    }),
  });
  t.is(bad.status, 422);
  t.deepEqual(paths(bad.body).sort(), ['alertDistance', 'brand', 'category', 'colour'].sort());
  const rules = await api.call('POST', '/user_equipments', u, {
    body: shoes(u, { user: me(other), sportsAutoAssigned: ['/v2/sports/999999'] }),
  });
  t.is(rules.status, 422);
  t.deepEqual(paths(rules.body), ['user', 'sportsAutoAssigned[0]']);

  const g = await created(u, '/user_equipments', shoes(u));
  for (const [method, path] of [
    ['GET', `/user_equipments/${g.id}`],
    ['GET', `/user_equipments/${g.id}/sumups`],
    ['PUT', `/user_equipments/${g.id}`],
    ['DELETE', `/user_equipments/${g.id}`],
  ] as const)
    t.is(
      (await api.call(method, path, other, method === 'PUT' ? { body: { name: 'Mine now' } } : {})).status,
      404,
      `${method} ${path}`,
    );
  // Named in an activity of another user: 422, the gear untouched.
  const theirs = await api.call('POST', '/activities', other, {
    body: activity(other, { equipments: [gearIri(g.id)] }),
  });
  t.is(theirs.status, 422);
  t.deepEqual(paths(theirs.body), ['equipments[0]']);
  const run = await created(other, '/activities', activity(other, { startdate: '2024-06-01T08:00:00+02:00' }));
  const put = await api.call('PUT', `/activities/${run.id}`, other, { body: { equipments: [gearIri(g.id)] } });
  t.is(put.status, 422);
  t.deepEqual(paths(put.body), ['equipments[0]']);

  await db
    .insertInto('user_equipments')
    .values(
      Array.from({ length: MAX_EQUIPMENTS_PER_USER - 1 }, (_, i) => ({
        user_id: u.ldid,
        category: 'other',
        brand: 'Brand',
        name: `Item ${i}`,
      })),
    )
    .execute();
  const over = await api.call('POST', '/user_equipments', u, { body: shoes(u) });
  t.is(over.status, 409);
  t.regex(over.body['hydra:description'], new RegExp(`${MAX_EQUIPMENTS_PER_USER} gear items`));
});

test("activities: named gear, auto-assignment by sport (not retired, started by then), and the records workers' totals", async (t) => {
  const u = await api.user();
  const shoe = await created(u, '/user_equipments', shoes(u, { sportsAutoAssigned: [`/v2/sports/${RUNNING}`] }));
  const later = await created(
    u,
    '/user_equipments',
    shoes(u, { name: 'Later', sportsAutoAssigned: [`/v2/sports/${RUNNING}`], startDate: '2025-01-01T00:00:00Z' }),
  );
  await created(
    u,
    '/user_equipments',
    shoes(u, { name: 'Old', sportsAutoAssigned: [`/v2/sports/${RUNNING}`], retired: true }),
  );
  const bike = await created(u, '/user_equipments', { category: 'bike', brand: 'Triban', name: 'RC 520' });

  const summaries = { '5': 10000.5, '24': 3600, '18': 120, '30': 3500 };
  const auto = await created(u, '/activities', activity(u, { dataSummaries: summaries, duration: 3600 }));
  t.deepEqual(auto.equipments, [gearIri(shoe.id)], 'the retired and the later gear are not assigned');
  const none = await created(
    u,
    '/activities',
    activity(u, { startdate: '2024-05-02T08:30:00+02:00', equipments: [], dataSummaries: { '5': 5 } }),
  );
  t.deepEqual(none.equipments, []);
  const both = await created(
    u,
    '/activities',
    activity(u, {
      startdate: '2025-05-01T08:30:00+02:00',
      duration: 1800,
      dataSummaries: { '5': 4000, '24': 1800 },
    }),
  );
  t.deepEqual(both.equipments, [gearIri(shoe.id), gearIri(later.id)]);
  // Moving time: the summary 30 when sent, else the computed one (the duration, without streams).
  await totalsOf(u, shoe.id, totals(14000.5, 5400, 5300, 120, 2));
  await totalsOf(u, later.id, totals(4000, 1800, 1800, 0, 1));

  // PUT moves the activity to other gear, then changes its distance; DELETE takes it off.
  const moved = await api.call('PUT', `/activities/${auto.id}`, u, {
    body: { equipments: [gearIri(bike.id), gearIri(bike.id)] },
  });
  t.is(moved.status, 200, JSON.stringify(moved.body));
  t.deepEqual(moved.body.equipments, [gearIri(bike.id)]);
  await totalsOf(u, shoe.id, totals(4000, 1800, 1800, 0, 1));
  await totalsOf(u, bike.id, totals(10000.5, 3600, 3500, 120, 1));
  const longer = await api.call('PUT', `/activities/${auto.id}`, u, {
    body: { dataSummaries: { '5': 12000.25, '24': 3600, '18': 100 } },
  });
  t.is(longer.status, 200, JSON.stringify(longer.body));
  t.deepEqual(longer.body.dataSummaries, { '5': 12000.25, '18': 100, '24': 3600 });
  t.deepEqual(longer.body.availableDatatypes, [5, 18, 24]);
  await totalsOf(u, bike.id, totals(12000.25, 3600, 3600, 100, 1));
  const sumups = members((await api.call('GET', `/user_equipments/${bike.id}/sumups`, u)).body);
  t.deepEqual(
    sumups.map((s) => s.value),
    [12000.25, 3600, 3600, 100, 1],
  );
  t.is((await api.call('PUT', `/activities/${auto.id}`, u, { body: { dataSummaries: { '5': 'far' } } })).status, 422);
  const unknown = await api.call('PUT', `/activities/${auto.id}`, u, { body: { dataSummaries: { '99999': 1 } } });
  t.is(unknown.status, 422);
  t.deepEqual(paths(unknown.body), ['dataSummaries.99999']);
  t.is((await api.call('DELETE', `/activities/${auto.id}`, u)).status, 204);
  await totalsOf(u, bike.id, totals(0, 0, 0, 0, 0));

  // The list reads the totals from the rows: the same as each GET.
  const listed = members((await api.call('GET', '/user_equipments', u)).body).find((m) => m.id === shoe.id);
  t.deepEqual(listed?.totals, totals(4000, 1800, 1800, 0, 1));
  const bikeRow = await db
    .selectFrom('user_equipments')
    .select(['created_at', 'updated_at'])
    .where('id', '=', bike.id as string)
    .executeTakeFirstOrThrow();
  t.true(bikeRow.updated_at > bikeRow.created_at, 'the totals move updatedAt');

  // records:recompute's rebuild job (one per user) finds the same totals.
  await db.updateTable('user_equipments').set({ distance: '1', activities: 7 }).where('user_id', '=', u.ldid).execute();
  await enqueueSumupsRebuild(db, { userId: u.ldid }, compactTime(new Date()));
  await totalsOf(u, shoe.id, totals(4000, 1800, 1800, 0, 1));
  await totalsOf(u, bike.id, totals(0, 0, 0, 0, 0));
});

test('autocomplete: brands and names from the caller and everyone, without owners; one other user alone is not enough', async (t) => {
  const [u, a, b, c] = [await api.user(), await api.user(), await api.user(), await api.user()];
  const tag = Math.random().toString(36).slice(2, 8);
  await created(u, '/user_equipments', shoes(u, { brand: `Zq${tag} Mine` }));
  await created(a, '/user_equipments', shoes(a, { brand: `Zq${tag} Shared` }));
  await created(b, '/user_equipments', shoes(b, { brand: `Zq${tag} Shared` }));
  await created(c, '/user_equipments', shoes(c, { brand: `zq${tag} Anna's own` }));
  const res = await api.call('GET', `/user_equipments/autocomplete/brand/ZQ${tag}`, u);
  t.is(res.status, 200, JSON.stringify(res.body));
  t.deepEqual(
    members(res.body).map((m) => [m.brand, m.mine]),
    [
      [`Zq${tag} Mine`, true],
      [`Zq${tag} Shared`, false],
    ],
  );
  t.is(res.body['hydra:totalItems'], 2);
  const text = JSON.stringify(res.body);
  for (const someone of [a, b, c]) t.false(text.includes(someone.ldid));
  t.false(text.includes('/v2/user_equipments/') && !text.includes('/autocomplete/'));
  const names = await api.call('GET', '/user_equipments/autocomplete/name/kiprun', u);
  t.is(names.status, 200);
  t.true(members(names.body).some((m) => m.name === 'Kiprun KS900' && m.mine === true));
  // A parameter that is neither brand nor name names no collection.
  t.is((await api.call('GET', `/user_equipments/autocomplete/colour/${tag}`, u)).status, 404);
  t.is((await api.call('GET', `/user_equipments/autocomplete/brand/${tag}`, null)).status, 401);
});

test('equipment_alert: once when the distance reaches alertDistance, again only after a new alertDistance', async (t) => {
  const u = await api.user();
  const hook = await created(u, '/user_web_hooks', {
    user: me(u),
    url: `${receiver.url}/gear-${u.ldid}`,
    events: ['equipment_alert'],
  });
  const g = await created(u, '/user_equipments', shoes(u, { alertDistance: 1000 }));
  const run = (day: number, distance: number) =>
    created(
      u,
      '/activities',
      activity(u, {
        startdate: `2024-05-${String(day).padStart(2, '0')}T08:30:00+02:00`,
        dataSummaries: { '5': distance },
        equipments: [gearIri(g.id)],
      }),
    );
  await run(1, 600);
  await totalsOf(u, g.id, totals(600, 3, 3, 0, 1));
  await run(2, 400);
  const reached = await totalsOf(u, g.id, totals(1000, 6, 6, 0, 2));
  t.truthy(reached.alertedAt);
  await run(3, 500);
  await totalsOf(u, g.id, totals(1500, 9, 9, 0, 3));
  t.true(await receiver.until(() => receiver.at(`/gear-${u.ldid}`).length >= 1));
  const event = verified(hook.secret as string, receiver.at(`/gear-${u.ldid}`)[0] as never);
  t.like(event, { type: 'equipment_alert', resource: gearIri(g.id) });
  t.like(event.data, { '@type': 'UserEquipment', alertDistance: 1000, totals: totals(1000, 6, 6, 0, 2) });

  const again = await api.call('PUT', `/user_equipments/${g.id}`, u, { body: { alertDistance: 2000 } });
  t.is(again.body.alertedAt, null);
  await run(4, 499);
  await totalsOf(u, g.id, totals(1999, 12, 12, 0, 4));
  await run(5, 1);
  await totalsOf(u, g.id, totals(2000, 15, 15, 0, 5));
  t.true(await receiver.until(() => receiver.at(`/gear-${u.ldid}`).length >= 2));
  const second = verified(hook.secret as string, receiver.at(`/gear-${u.ldid}`)[1] as never);
  t.like(second.data, { alertDistance: 2000, totals: totals(2000, 15, 15, 0, 5) });
  t.is(receiver.at(`/gear-${u.ldid}`).length, 2);
});
