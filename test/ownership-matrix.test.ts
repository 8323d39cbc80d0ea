import { randomBytes } from 'node:crypto';
import test from 'ava';
import {
  MATRIX_PREFIXES,
  type MatrixCase,
  matrixOperations,
  OUTSIDE_SERVICES,
  operationsWithIds,
  runCases,
  serviceOf,
} from './helpers/ownership-matrix.ts';
import { startTrackingApi, type TrackingTestUser } from './helpers/tracking.ts';
import { activity, me } from './helpers/tracking-activities.ts';

// The ownership matrix of the tracking API, generated from its route table (/openapi.json): every
// operation on one object of a user (a path with an id) answers another user 404 and a caller
// without a token 401, in Hydra's error format, and changes nothing. A new route with an id must
// be given its object below, or named as public, or this test fails: it cannot be forgotten. The
// other services have theirs in test/ownership-matrix-*.test.ts; the last test here checks that
// every route with an id falls in one of them.

const api = await startTrackingApi();
test.after.always(() => api.close());

/** Objects everyone with credentials may read: the referentials, and what a share's token opens. */
const PUBLIC = new Set([
  'GET /v2/contexts/{type}',
  'GET /v2/media/{path}',
  ...['sports', 'datatypes', 'universes', 'device_models', 'firmwares', 'firmware', 'connectors'].map(
    (r) => `GET /v2/${r}/{id}`,
  ),
  'GET /v2/share_activities/{id}',
  'GET /v2/share_activities/{id}/page',
  // The download link is its own secret (a signed, expiring token), as the export guide says.
  'GET /v2/exports/{id}/download',
  // Brands and names without their owners or any gear's IRI (docs/tracking-gear-goals-challenges.md).
  'GET /v2/user_equipments/autocomplete/{parameter}/{query}',
]);

/** User A's objects, one per collection, made through the API. */
async function objectsOf(owner: TrackingTestUser): Promise<Record<string, string>> {
  const post = async (path: string, body?: unknown) => {
    const res = await api.call('POST', path, owner, body === undefined ? {} : { body });
    if (res.status !== 201 && res.status !== 202)
      throw new Error(`POST ${path}: ${res.status} ${JSON.stringify(res.body)}`);
    return res.body as { id: string };
  };
  const serial = `SN-${Date.now()}-${Math.random().toString(36).slice(2, 8)}`;
  const device = await post('/user_devices', { serial, model: '/v2/device_models/1', firmware: '/v2/firmwares/2' });
  const run = await post('/activities', activity(owner));
  const measure = await post('/user_measures', {
    user: me(owner),
    datatype: '/v2/datatypes/1',
    value: 72500,
    date: '2024-05-01T08:30:00+02:00',
  });
  const share = await post('/share_activities', { user: me(owner), activity: `/v2/activities/${run.id}` });
  const exported = await post('/exports');
  const hook = await post('/user_web_hooks', { user: me(owner), url: 'https://hooks.example.com/matrix' });
  const gear = await post('/user_equipments', { category: 'shoes', brand: 'Kalenji', name: 'Kiprun KS900' });
  const goal = await post('/user_measure_goals', {
    user: me(owner),
    datatype: '/v2/datatypes/181',
    goal: 70000,
    startdate: '2024-05-01T08:30:00+02:00',
  });
  const challenge = await post('/user_challenges', {
    name: 'May',
    targetDatatype: '/v2/datatypes/5',
    target: 1000,
    startedAt: '2024-05-01T00:00:00Z',
    endedAt: '2024-06-01T00:00:00Z',
  });
  const record = await api.database.db
    .insertInto('user_records')
    .values({
      user_id: owner.ldid,
      sport_id: 121,
      type: 'all',
      datatype_id: 5,
      activity_id: run.id,
      value: 10.5,
      date: new Date('2024-05-01T06:30:00Z'),
    })
    .returning('id')
    .executeTakeFirstOrThrow();
  const sumup = await api.database.db
    .insertInto('user_sumups')
    .values({
      user_id: owner.ldid,
      type: 'month',
      period: '2024-05-01',
      sport_id: null,
      datatype_id: 98,
      value: '1',
      activities: 1,
    })
    .returning('id')
    .executeTakeFirstOrThrow();
  // A share the owner gives (pending), and one given to them that they accepted.
  const third = await api.user();
  await api.call('GET', '/me', third);
  const given = await post('/share_users', { user: me(third) });
  const received = await api.call('POST', '/share_users', third, { body: { user: me(owner) } });
  await api.call('PUT', `/share_users/${received.body.id}`, owner, { body: { status: 'accepted' } });
  // A pending import job (as a 202 leaves it while no worker runs the imports queue).
  const importJob = await api.database.db
    .insertInto('jobs')
    .values({ id: randomBytes(16).toString('hex'), user_id: owner.ldid, type: 'activity_import' })
    .returning('id')
    .executeTakeFirstOrThrow();
  return {
    users: owner.ldid,
    user_devices: device.id,
    activities: run.id,
    user_measures: measure.id,
    share_activities: share.id,
    exports: exported.id,
    user_records: record.id,
    user_sumups: sumup.id,
    user_web_hooks: hook.id,
    user_equipments: gear.id,
    user_measure_goals: String(goal.id),
    user_challenges: challenge.id,
    jobs: importJob.id,
    share_users: given.id,
    share_users_stats: received.body.id as string,
    // Another user is no friend of the owner's, and the owner's activity is private.
    friends: owner.ldid,
    public_activities: run.id,
  };
}

/**
 * A valid write for each collection (a write that fails its validation is a 422 whoever owns the
 * object, which tells nothing of it; the matrix checks what a valid write does).
 */
const WRITES: Record<string, unknown> = {
  users: { language: 'fr' },
  user_devices: { firmware: '/v2/firmwares/2' },
  activities: { name: 'changed' },
  user_measures: { value: 1 },
  user_web_hooks: { events: ['activity_create'] },
  user_equipments: { name: 'Renamed' },
  user_measure_goals: { goal: 1 },
  user_challenges: { name: 'Renamed' },
  jobs: { state: 'cancelled' },
  share_users: { status: 'accepted' },
};

test("another user's objects answer 404 to every operation on them, a caller without a token 401, and nothing changes", async (t) => {
  const operations = await matrixOperations(api, 'tracking');
  const owner = await api.user();
  const other = await api.user();
  const objects = await objectsOf(owner);
  const before = new Map<string, string>();
  for (const [collection, id] of Object.entries(objects))
    before.set(collection, JSON.stringify((await api.call('GET', `/${collection}/${id}`, owner)).body));
  const failures: string[] = [];
  const cases: MatrixCase[] = [];
  const headers = { 'x-api-key': api.apiKey };
  for (const op of operations) {
    if (PUBLIC.has(op.name)) continue;
    const collection = /^\/v2\/([a-z_]+)\/\{/.exec(op.path)?.[1] ?? '';
    const id = objects[collection];
    if (!id) {
      failures.push(`${op.name}: no object of this collection in the matrix (add it, or name the route as public)`);
      continue;
    }
    // A friend's activity: the friend, then their activity.
    const path = op.path.replace(/\{[^}]+\}/, id).replace('{id}', objects.activities ?? '');
    const body = op.method === 'PUT' || op.method === 'PATCH' ? WRITES[collection] : undefined;
    const auth = `Bearer ${other.token}`;
    cases.push({ op, path, headers, body, who: 'as another user', authorization: auth, expected: 404 });
    cases.push({ op, path, headers, body, who: 'without a token', expected: 401 });
  }
  t.true(cases.length >= 30, String(cases.length));
  failures.push(...(await runCases(api, cases)));
  t.deepEqual(failures, []);
  // Nothing of the owner's changed.
  for (const [collection, seen] of before) {
    const now = await api.call('GET', `/${collection}/${objects[collection] ?? ''}`, owner);
    t.is(JSON.stringify(now.body), seen, collection);
  }
});

test("every operation with an id, in every service, falls in one service's matrix", async (t) => {
  const operations = await operationsWithIds(api);
  const stray = operations
    .filter((op) => !serviceOf(op.path) && !(op.name in OUTSIDE_SERVICES))
    .map((op) => `${op.name}: in no matrix (add its prefix to MATRIX_PREFIXES and its object to that matrix)`);
  t.deepEqual(stray, []);
  for (const service of Object.keys(MATRIX_PREFIXES))
    t.true(
      operations.some((op) => serviceOf(op.path) === service),
      service,
    );
});
