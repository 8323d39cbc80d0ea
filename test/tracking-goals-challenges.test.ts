import test from 'ava';
import { MAX_CHALLENGES_PER_USER } from '../shared/tracking/challenges/store.ts';
import { MAX_GOALS_PER_USER } from '../shared/tracking/goals/store.ts';
import { startWorkers } from '../workers/worker.ts';
import { startTrackingApi, type TrackingTestUser } from './helpers/tracking.ts';
import { activity, me } from './helpers/tracking-activities.ts';
import { type Body, waitFor } from './helpers/tracking-exports.ts';
import { startReceiver, verified } from './helpers/webhook-receiver.ts';

// Measure goals and challenges (docs/tracking-gear-goals-challenges.md): goals' progress on read,
// challenges' result and achievedAt kept by the records workers (in the user's time zone), their
// validation, limits, filters and orders, and the `challenge_achieved` web hook event, once.

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

async function created(u: TrackingTestUser, path: string, body: Body): Promise<Body> {
  const res = await api.call('POST', path, u, { body });
  if (res.status !== 201) throw new Error(`POST ${path}: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body;
}

const measure = (u: TrackingTestUser, value: number, date: string) =>
  created(u, '/user_measures', { user: me(u), datatype: '/v2/datatypes/181', value, date });

test('goals: progress from the measures on every read; filters, orders, validation, 404 for another user, a limit', async (t) => {
  const u = await api.user();
  await measure(u, 81000, '2026-01-01T08:00:00+01:00');
  await measure(u, 79000, '2026-01-20T08:00:00+01:00');
  await measure(u, 77000, '2026-02-10T08:00:00+01:00');
  const res = await api.call('POST', '/user_measure_goals', u, {
    body: {
      user: me(u),
      datatype: '/v2/datatypes/181',
      initial: 80000,
      goal: 75000,
      startdate: '2026-01-10T00:00:00+01:00',
    },
  });
  t.is(res.status, 201, JSON.stringify(res.body));
  const goal = res.body as Body;
  t.is(typeof goal.id, 'number');
  t.is(res.headers.get('location'), `${api.config.PUBLIC_URL}/v2/user_measure_goals/${goal.id}`);
  t.like(goal, {
    '@type': 'UserMeasureGoal',
    user: me(u),
    datatype: '/v2/datatypes/181',
    initial: 80000,
    goal: 75000,
    startdate: '2026-01-09T23:00:00+00:00',
    progress: { start: 80000, share: 0.6, reached: false },
  });
  t.like((goal.progress as Body).latest, { value: 77000, date: '2026-02-10T07:00:00+00:00' });

  // Without `initial`: the latest measure at or before the start.
  const fromMeasures = await created(u, '/user_measure_goals', {
    user: me(u),
    datatype: '/v2/datatypes/181',
    goal: 75000,
    startdate: '2026-01-10T00:00:00+01:00',
  });
  t.like(fromMeasures.progress, { start: 81000, share: 0.6667, reached: false });
  await measure(u, 74500, '2026-03-01T08:00:00+01:00');
  t.like((await api.call('GET', `/user_measure_goals/${goal.id}`, u)).body.progress, { share: 1, reached: true });
  const height = await created(u, '/user_measure_goals', {
    user: me(u),
    datatype: '/v2/datatypes/22',
    goal: 180,
    startdate: '2025-01-10T00:00:00+01:00',
  });
  t.like(height.progress, { start: null, latest: null, share: null, reached: false });

  const ids = async (query: string) =>
    members((await api.call('GET', `/user_measure_goals${query}`, u)).body).map((m) => m.id);
  t.deepEqual(await ids(''), [height.id, goal.id, fromMeasures.id]);
  t.deepEqual(await ids('?datatype=181&order[id]=desc'), [fromMeasures.id, goal.id]);
  t.deepEqual(await ids('?order[startdate]=desc&order[id]=asc'), [goal.id, fromMeasures.id, height.id]);
  t.deepEqual(await ids(`?user=${me(await api.user())}`), []);

  const put = await api.call('PUT', `/user_measure_goals/${goal.id}`, u, { body: { goal: 70000, initial: null } });
  t.is(put.status, 200, JSON.stringify(put.body));
  t.like(put.body, { goal: 70000, initial: null, progress: { start: 81000, reached: false } });

  const other = await api.user();
  for (const [method, body] of [['GET'], ['PUT', { goal: 1 }], ['DELETE']] as const)
    t.is((await api.call(method, `/user_measure_goals/${goal.id}`, other, body ? { body } : {})).status, 404, method);
  t.is((await api.call('GET', '/user_measure_goals/not-a-number', u)).status, 404);
  const bad = await api.call('POST', '/user_measure_goals', u, {
    body: { user: me(other), datatype: '/v2/datatypes/181', goal: -5, initial: 'heavy', startdate: '2026-01-01' },
  });
  t.is(bad.status, 422);
  t.deepEqual(paths(bad.body).sort(), ['initial', 'startdate']);
  const rules = await api.call('POST', '/user_measure_goals', u, {
    body: { user: me(other), datatype: '/v2/datatypes/181', goal: -5, startdate: '2026-01-01T00:00:00Z' },
  });
  t.deepEqual(paths(rules.body), ['user', 'goal']);
  const unknown = await api.call('POST', '/user_measure_goals', u, {
    body: { user: me(u), datatype: '/v2/datatypes/999999', goal: 1, startdate: '2026-01-01T00:00:00Z' },
  });
  t.deepEqual(paths(unknown.body), ['datatype']);

  t.is((await api.call('DELETE', `/user_measure_goals/${height.id}`, u)).status, 204);
  await db
    .insertInto('user_measure_goals')
    .values(
      Array.from({ length: MAX_GOALS_PER_USER - 2 }, () => ({
        user_id: u.ldid,
        datatype_id: 181,
        goal: 70000,
        startdate: new Date(),
      })),
    )
    .execute();
  const over = await api.call('POST', '/user_measure_goals', u, {
    body: { user: me(u), datatype: '/v2/datatypes/181', goal: 1, startdate: '2026-01-01T00:00:00Z' },
  });
  t.is(over.status, 409);
});

/** The challenge once the workers have brought its result to `result`. */
async function challengeAt(
  u: TrackingTestUser,
  id: unknown,
  result: number,
  achievedAt?: string | null,
): Promise<Body> {
  const read = async () => (await api.call('GET', `/user_challenges/${id}`, u)).body as Body;
  const done = (c: Body) => c.result === result && (achievedAt === undefined || c.achievedAt === achievedAt);
  const c = await waitFor(read, done);
  if (!done(c)) throw new Error(`challenge ${JSON.stringify(c)}, expected ${result}, ${achievedAt}`);
  return c;
}

test("challenges: result and achievedAt from the records workers, in the user's time zone; challenge_achieved once", async (t) => {
  const u = await api.user();
  await api.call('PUT', `/users/${u.ldid}`, u, { body: { timezone: 'Europe/Paris' } });
  const hook = await created(u, '/user_web_hooks', {
    user: me(u),
    url: `${receiver.url}/challenge-${u.ldid}`,
    events: ['challenge_achieved'],
  });
  const run = (day: string, distance: number, fields: Body = {}) =>
    created(
      u,
      '/activities',
      activity(u, {
        startdate: `2024-05-${day}T08:00:00+02:00`,
        duration: 3600,
        dataSummaries: { '5': distance },
        ...fields,
      }),
    );
  // Stored before the challenge: its creation's job counts it.
  await run('03', 4000);
  const res = await api.call('POST', '/user_challenges', u, {
    body: {
      name: 'May 10 km',
      user: me(u),
      targetDatatype: '/v2/datatypes/5',
      target: 10000,
      startedAt: '2024-05-01T00:00:00+02:00',
      endedAt: '2024-05-31T23:59:59+02:00',
    },
  });
  t.is(res.status, 201, JSON.stringify(res.body));
  const ch = res.body as Body;
  t.like(ch, { '@type': 'UserChallenge', result: 0, achievedAt: null, target: 10000, sport: null });
  await challengeAt(u, ch.id, 4000, null);
  const second = await run('10', 5000);
  await run('20', 3000);
  // 4000 + 5000 + 3000: the run of the 20th (08:00 to 09:00 in Paris) crossed 10 km.
  await challengeAt(u, ch.id, 12000, '2024-05-20T09:00:00+02:00');
  // An older run stored late: 2000 + 4000 + 5000 now crosses it on the 10th.
  await run('02', 2000);
  const crossed = await challengeAt(u, ch.id, 14000, '2024-05-10T09:00:00+02:00');
  t.is(crossed.achievedBy, `/v2/activities/${second.id}`);
  // Below the target again, then a lower target: achieved again, announced once only.
  t.is((await api.call('DELETE', `/activities/${second.id}`, u)).status, 204);
  await challengeAt(u, ch.id, 9000, null);
  const lower = await api.call('PUT', `/user_challenges/${ch.id}`, u, {
    body: { ...ch, target: 8000, name: 'May 8 km' },
  });
  t.is(lower.status, 200, JSON.stringify(lower.body));
  t.is(lower.body.name, 'May 8 km');
  await challengeAt(u, ch.id, 9000, '2024-05-20T09:00:00+02:00');
  t.true(await receiver.until(() => receiver.at(`/challenge-${u.ldid}`).length >= 1));
  const event = verified(hook.secret as string, receiver.at(`/challenge-${u.ldid}`)[0] as never);
  t.like(event, { type: 'challenge_achieved', resource: `/v2/user_challenges/${ch.id}` });
  t.like(event.data, { '@type': 'UserChallenge', result: 12000, achievedAt: '2024-05-20T09:00:00+02:00' });
  t.is(receiver.at(`/challenge-${u.ldid}`).length, 1);

  // A sport's challenge counts that sport only; a count challenge counts activities.
  const rides = await created(u, '/user_challenges', {
    name: 'Rides',
    targetDatatype: '/v2/datatypes/98',
    target: 2,
    startedAt: '2024-05-02T00:00:00+02:00',
    endedAt: '2024-06-01T00:00:00+02:00',
    sport: `/v2/sports/${CYCLING}`,
  });
  await run('21', 30000, { sport: `/v2/sports/${CYCLING}` });
  await challengeAt(u, rides.id, 1, null);
  // The ride counts in the challenge of every sport too, after its crossing: achievedAt stays.
  await challengeAt(u, ch.id, 39000, '2024-05-20T09:00:00+02:00');
  const list = async (query: string) =>
    members((await api.call('GET', `/user_challenges${query}`, u)).body).map((m) => m.id);
  t.deepEqual(await list(''), [ch.id, rides.id]);
  t.deepEqual(await list(`?sport=${CYCLING}`), [rides.id]);
  t.deepEqual(await list('?targetDatatype[]=/v2/datatypes/5'), [ch.id]);
  t.deepEqual(await list('?order[target]=asc'), [rides.id, ch.id]);
  t.deepEqual(await list('?order[targetDatatype.id]=desc'), [rides.id, ch.id]);
});

test('challenges: bad input is a 422 naming the field, another user sees 404, more than the limit is a 409', async (t) => {
  const u = await api.user();
  const other = await api.user();
  const valid = {
    name: 'Climb',
    targetDatatype: '/v2/datatypes/18',
    target: 1000,
    startedAt: '2024-05-01T00:00:00Z',
    endedAt: '2024-06-01T00:00:00Z',
  };
  for (const [fields, field] of [
    [{ targetDatatype: '/v2/datatypes/1' }, 'targetDatatype'],
    [{ endedAt: '2024-04-01T00:00:00Z' }, 'endedAt'],
    [{ target: 0 }, 'target'],
    [{ target: -5 }, 'target'],
    [{ sport: '/v2/sports/999999' }, 'sport'],
    [{ user: me(other) }, 'user'],
    [{ name: '' }, 'name'],
  ] as const) {
    const res = await api.call('POST', '/user_challenges', u, { body: { ...valid, ...fields } });
    t.is(res.status, 422, JSON.stringify(fields));
    t.deepEqual(paths(res.body), [field], JSON.stringify(fields));
  }
  const ch = await created(u, '/user_challenges', { ...valid, target: null });
  t.is(ch.target, null);
  const put = await api.call('PUT', `/user_challenges/${ch.id}`, u, { body: { endedAt: '2024-04-30T00:00:00Z' } });
  t.deepEqual(paths(put.body), ['endedAt']);
  for (const [method, body] of [['GET'], ['PUT', { name: 'Mine' }], ['DELETE']] as const)
    t.is((await api.call(method, `/user_challenges/${ch.id}`, other, body ? { body } : {})).status, 404, method);
  t.is((await api.call('DELETE', `/user_challenges/${ch.id}`, u)).status, 204);
  await db
    .insertInto('user_challenges')
    .values(
      Array.from({ length: MAX_CHALLENGES_PER_USER }, () => ({
        user_id: u.ldid,
        name: 'Filler',
        target_datatype_id: 5,
        target: '1',
        started_at: new Date('2020-01-01T00:00:00Z'),
        ended_at: new Date('2020-02-01T00:00:00Z'),
        sport_id: RUNNING,
      })),
    )
    .execute();
  t.is((await api.call('POST', '/user_challenges', u, { body: valid })).status, 409);
});
