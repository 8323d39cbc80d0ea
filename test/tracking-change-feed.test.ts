import { rm } from 'node:fs/promises';
import test from 'ava';
import { Queue } from 'bullmq';
import { sql } from 'kysely';
import { createLogger } from '../shared/observability/logger.ts';
import { createRedis } from '../shared/queue/connection.ts';
import { NO_MARK } from '../shared/queue/outbox.ts';
import { runStartedDeletions, startAccountDeletion } from '../shared/services/account-deletion.ts';
import { activitiesQuery } from '../shared/tracking/activities/list.ts';
import { expiredTombstonesQuery, tombstonesQuery } from '../shared/tracking/activities/tombstones.ts';
import { userDevicesQuery } from '../shared/tracking/devices/store.ts';
import { measuresQuery } from '../shared/tracking/measures/store.ts';
import { recordsQuery } from '../shared/tracking/records/records-read.ts';
import { DEFAULT_RECORDS_SETTINGS } from '../shared/tracking/records/settings.ts';
import { updateActivityRecords } from '../shared/tracking/records/update-records.ts';
import { drawActivityThumbnail } from '../shared/tracking/thumbnail/activity-thumbnail.ts';
import { ensureTrackingUser } from '../shared/tracking/users/store.ts';
import type { TypedJob } from '../workers/processor.ts';
import {
  expireActivityTombstones,
  scheduleMaintenance,
  TOMBSTONES_EXPIRE_SCHEDULER_ID,
} from '../workers/processors/maintenance.ts';
import { startTrackingApi, type TrackingTestUser } from './helpers/tracking.ts';
import { activityCalls, type Body, ids, me } from './helpers/tracking-activities.ts';

// The change feed (docs/tracking-sync.md): updatedAt[...] and order[updatedAt] on the four user
// collections, the tombstones at /v2/deleted_activities, and the sync recipe the guide gives.

const api = await startTrackingApi();
test.after.always(async () => {
  await api.close();
  await rm(api.config.STORAGE_DIR, { recursive: true, force: true });
});

const { db } = api.database;
const { created: createdAt, deviceOf } = activityCalls(api);

/** Each activity of these tests starts at its own minute (the same start and duration is a duplicate). */
let starts = 0;
const nextStart = () => new Date(Date.UTC(2024, 4, 1, 8) + starts++ * 60_000).toISOString();
const created = (u: TrackingTestUser, fields: Body = {}) => createdAt(u, { startdate: nextStart(), ...fields });

/** Before T, the rows a test ages; after T, what it changes next (the test clock is later than 2025). */
const OLD = new Date('2024-01-01T00:00:00Z');
const T = '2025-01-01T00:00:00+00:00';
const q = (value: string) => encodeURIComponent(value);

type Table = 'activities' | 'user_measures' | 'user_devices' | 'user_records';

/** Moves the rows of `u` in `table` back to OLD, as if they had changed long ago. */
const age = (table: Table, u: TrackingTestUser) =>
  sql`update ${sql.table(table)} set updated_at = ${OLD} where user_id = ${u.ldid}`.execute(db);

/** The ids of `u`'s rows in `table` changed after T, as the database has them. */
const changedAfterT = async (table: Table, u: TrackingTestUser) =>
  (
    await sql<{
      id: string;
    }>`select id from ${sql.table(table)} where user_id = ${u.ldid} and updated_at > ${new Date(T)}`.execute(db)
  ).rows
    .map((r) => r.id)
    .sort();

const get = async (u: TrackingTestUser, path: string) => {
  const res = await api.call('GET', path, u);
  if (res.status !== 200) throw new Error(`GET ${path}: ${res.status} ${JSON.stringify(res.body)}`);
  return res;
};
const members = async (u: TrackingTestUser, path: string): Promise<Body[]> => (await get(u, path)).body['hydra:member'];
const post = async (u: TrackingTestUser, path: string, body: unknown): Promise<Body & { id: string }> => {
  const res = await api.call('POST', path, u, { body });
  if (res.status !== 201) throw new Error(`POST ${path}: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body;
};
const put = async (u: TrackingTestUser, path: string, body: unknown) => {
  const res = await api.call('PUT', path, u, { body });
  if (res.status !== 200) throw new Error(`PUT ${path}: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body as Body;
};
const del = async (u: TrackingTestUser, path: string) => {
  const res = await api.call('DELETE', path, u);
  if (res.status !== 204) throw new Error(`DELETE ${path}: ${res.status} ${JSON.stringify(res.body)}`);
};

const measure = (u: TrackingTestUser, value = 72500) => ({
  user: me(u),
  datatype: '/v2/datatypes/181',
  value,
  date: '2024-05-01T08:30:00+02:00',
});
let serials = 0;
const device = () => ({ serial: `SN-FEED-${serials++}`, model: '/v2/device_models/1', firmware: '/v2/firmwares/2' });

/** How each collection with an API write is created and changed. */
const writable = {
  activities: {
    path: '/activities',
    create: async (u: TrackingTestUser) => (await created(u)).id,
    change: (u: TrackingTestUser, id: string) => put(u, `/activities/${id}`, { name: 'Changed' }),
  },
  user_measures: {
    path: '/user_measures',
    create: async (u: TrackingTestUser) => (await post(u, '/user_measures', measure(u))).id,
    change: (u: TrackingTestUser, id: string) => put(u, `/user_measures/${id}`, { value: 70000 }),
  },
  user_devices: {
    path: '/user_devices',
    create: async (u: TrackingTestUser) => (await post(u, '/user_devices', device())).id,
    change: (u: TrackingTestUser, id: string) => put(u, `/user_devices/${id}`, { ownership: 2 }),
  },
} as const;

for (const [table, c] of Object.entries(writable) as [
  keyof typeof writable,
  (typeof writable)[keyof typeof writable],
][])
  test(`${c.path}: updatedAt[strictly_after]=T lists exactly what was created or changed after T`, async (t) => {
    const u = await api.user();
    const other = await api.user();
    const [kept, changed] = [await c.create(u), await c.create(u)];
    const otherOne = await c.create(other);
    await age(table, u);
    await age(table, other);
    await c.change(u, changed);
    const fresh = await c.create(u);
    await c.change(other, otherOne);

    t.deepEqual(await changedAfterT(table, u), [changed, fresh].sort(), 'the database agrees');
    const after = await members(u, `${c.path}?updatedAt[strictly_after]=${q(T)}&order[updatedAt]=asc`);
    t.deepEqual(after.map((m) => m.id).sort(), [changed, fresh].sort());
    const stamps = after.map((m) => m.updatedAt as string);
    t.deepEqual(stamps, [...stamps].sort(), 'oldest change first');
    t.true(stamps.every((s) => s > T));
    t.deepEqual(
      (await members(u, `${c.path}?updatedAt[after]=${q(T)}`)).map((m) => m.id).sort(),
      [changed, fresh].sort(),
    );
    t.deepEqual(ids((await get(u, `${c.path}?updatedAt[before]=${q(T)}`)).body), [kept]);
    t.deepEqual(ids((await get(u, `${c.path}?updatedAt[strictly_before]=${q('2024-01-01T00:00:00Z')}`)).body), []);
    t.deepEqual(
      ids((await get(u, `${c.path}?updatedAt[after]=${q('2024-01-01T00:00:00Z')}&updatedAt[before]=${q(T)}`)).body),
      [kept],
    );
    t.deepEqual(
      ids((await get(u, `${c.path}?updatedAt[after]=${q(T)}&order[updatedAt]=desc`)).body),
      after.map((m) => m.id as string).reverse(),
    );
  });

test('/user_records: updatedAt[strictly_after]=T lists exactly the records the job wrote after T', async (t) => {
  const u = await api.user();
  const job = (activityId: string) =>
    updateActivityRecords(db, { activityId, userId: u.ldid, sports: [], force: false }, DEFAULT_RECORDS_SETTINGS);
  // A 10 km run in an hour, then a shorter and longer one: it takes the distance record only.
  const first = await created(u, { duration: 3600, dataSummaries: { '5': 10000, '24': 3600, '3': 150 } });
  await job(first.id);
  const before = await members(u, '/user_records');
  t.true(before.length > 0);
  await age('user_records', u);
  const second = await created(u, { duration: 3000, dataSummaries: { '5': 12000, '24': 3000, '3': 140 } });
  await job(second.id);

  const changed = await changedAfterT('user_records', u);
  t.true(changed.length > 0 && changed.length < before.length, 'some records changed holder, some did not');
  const after = await members(u, `/user_records?updatedAt[strictly_after]=${q(T)}&order[updatedAt]=asc`);
  t.deepEqual(after.map((m) => m.id).sort(), changed);
  t.true(after.every((m) => m.activity === `/v2/activities/${second.id}`));
  const unchanged = await members(u, `/user_records?updatedAt[before]=${q(T)}&limit=100`);
  t.true(
    unchanged.every((m) => m.activity === `/v2/activities/${first.id}`),
    'a record whose holder stays keeps its updatedAt',
  );
  t.is(unchanged.length + after.length, (await get(u, '/user_records')).body['hydra:totalItems']);
});

test('writes that change an activity without a PUT move its updatedAt: its device deleted, its thumbnail drawn', async (t) => {
  const u = await api.user();
  const deviceId = await deviceOf(u);
  const withDevice = await created(u, {
    userDevice: `/v2/user_devices/${deviceId}`,
    connector: '/v2/connectors/1',
    manual: false,
  });
  const without = await created(u);
  await age('activities', u);
  await del(u, `/user_devices/${deviceId}`);
  const changed = await members(u, `/activities?updatedAt[strictly_after]=${q(T)}`);
  t.deepEqual(
    changed.map((m) => m.id),
    [withDevice.id],
  );
  t.is(changed[0]?.userDevice, null);

  await age('activities', u);
  const drawn = await drawActivityThumbnail(db, api.config, without.id);
  t.is(drawn.status, 'done');
  const pictured = await members(u, `/activities?updatedAt[strictly_after]=${q(T)}`);
  t.deepEqual(
    pictured.map((m) => m.id),
    [without.id],
  );
  t.regex(String(pictured[0]?.thumbnail), /\/v2\/media\//);
});

test('bad updatedAt, deletedAt and order values are a 422 naming the parameter', async (t) => {
  const u = await api.user();
  const bad = [
    ['updatedAt[after]', 'yesterday'],
    ['updatedAt[before]', '2024-01-01T00:00:00'],
    ['updatedAt[strictly_after]', '2024-02-30T00:00:00Z'],
    ['updatedAt[strictly_before]', '1800-01-01T00:00:00Z'],
    ['order[updatedAt]', 'up'],
  ];
  for (const path of ['/activities', '/user_measures', '/user_devices', '/user_records'])
    for (const [name, value] of bad) {
      const res = await api.call('GET', `${path}?${name}=${q(value as string)}`, u);
      t.is(res.status, 422, `${path} ${name}`);
      t.like(res.body, { '@type': 'ConstraintViolationList' });
      t.deepEqual(
        res.body.violations.map((v: { propertyPath: string }) => v.propertyPath),
        [name],
        `${path} ${name}`,
      );
    }
  for (const [name, value] of [
    ['deletedAt[after]', 'now'],
    ['deletedAt[strictly_after]', '2024-01-01'],
    ['order[deletedAt]', 'sideways'],
    ['limit', '101'],
  ]) {
    const res = await api.call('GET', `/deleted_activities?${name}=${q(value as string)}`, u);
    t.is(res.status, 422, name);
    t.deepEqual(
      res.body.violations.map((v: { propertyPath: string }) => v.propertyPath),
      [name],
    );
  }
});

test('hydra:search and /openapi.json announce the filters', async (t) => {
  const u = await api.user();
  const doc = (await (await api.fetch('/openapi.json')).json()) as {
    paths: Record<string, { get?: { parameters?: { name: string }[] } }>;
  };
  const bounds = ['after', 'before', 'strictly_after', 'strictly_before'];
  for (const [path, prop, order] of [
    ['/activities', 'updatedAt', 'order[updatedAt]'],
    ['/user_measures', 'updatedAt', 'order[updatedAt]'],
    ['/user_devices', 'updatedAt', 'order[updatedAt]'],
    ['/user_records', 'updatedAt', 'order[updatedAt]'],
    ['/deleted_activities', 'deletedAt', 'order[deletedAt]'],
  ] as const) {
    const variables = (await get(u, path)).body['hydra:search']['hydra:mapping'].map(
      (m: { variable: string; property: string }) => m.variable,
    );
    const documented = (doc.paths[`/v2${path}`]?.get?.parameters ?? []).map((p) => p.name);
    for (const name of [...bounds.map((b) => `${prop}[${b}]`), order]) {
      t.true(variables.includes(name), `${path} hydra:search ${name}`);
      t.true(documented.includes(name), `${path} openapi ${name}`);
    }
  }
});

test('DELETE leaves a tombstone: the activity IRI, its id and deletedAt, for its owner only', async (t) => {
  const u = await api.user();
  const other = await api.user();
  const a = await created(u);
  const b = await created(u);
  t.deepEqual((await get(u, '/deleted_activities')).body['hydra:member'], []);
  t.is((await api.call('DELETE', `/activities/${a.id}`, other)).status, 404);
  t.is((await db.selectFrom('activity_tombstones').selectAll().where('activity_id', '=', a.id).execute()).length, 0);
  await del(u, `/activities/${a.id}`);

  const res = await get(u, '/deleted_activities');
  t.like(res.body, {
    '@context': '/v2/contexts/DeletedActivity',
    '@id': '/v2/deleted_activities',
    '@type': 'hydra:Collection',
    'hydra:totalItems': 1,
  });
  const [tomb] = res.body['hydra:member'];
  t.like(tomb, { '@id': `/v2/activities/${a.id}`, '@type': 'DeletedActivity', id: a.id });
  t.regex(tomb.deletedAt, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\+00:00$/);
  t.true(tomb.deletedAt > T);
  t.deepEqual(Object.keys(tomb).sort(), ['@id', '@type', 'deletedAt', 'id']);
  t.is((await api.call('GET', tomb['@id'].replace(/^\/v2/, ''), u)).status, 404, 'the IRI names nothing any more');
  t.deepEqual((await get(other, '/deleted_activities')).body['hydra:member'], [], "another user's are not listed");
  t.is((await api.call('GET', `/activities/${b.id}`, u)).status, 200);
  // Plain JSON, as for the other collections.
  const plain = await api.call('GET', '/deleted_activities', u, { headers: { accept: 'application/json' } });
  t.deepEqual(plain.body, [{ id: a.id, deletedAt: tomb.deletedAt }]);
  t.is((await api.call('GET', '/deleted_activities', null)).status, 401);
});

test('deletedAt[...] bounds the deletion time; order[deletedAt] and paging as the other collections', async (t) => {
  const u = await api.user();
  await ensureTrackingUser(db, { accountId: u.id, ldid: u.ldid, claims: {} });
  const at = (day: number) => new Date(Date.UTC(2024, 0, day));
  const rows = [3, 1, 2, 2].map((day, i) => ({
    activity_id: `tomb${i}${u.ldid}`,
    user_id: u.ldid,
    deleted_at: at(day),
  }));
  await db.insertInto('activity_tombstones').values(rows).execute();
  const list = async (query: string) =>
    (await members(u, `/deleted_activities${query}`)).map((m) => `${m.id}`.slice(0, 5));
  t.deepEqual(await list(''), ['tomb1', 'tomb2', 'tomb3', 'tomb0'], 'oldest first, ties by id');
  t.deepEqual(await list('?order[deletedAt]=desc'), ['tomb0', 'tomb3', 'tomb2', 'tomb1']);
  t.deepEqual(await list(`?deletedAt[after]=${q('2024-01-02T00:00:00Z')}`), ['tomb2', 'tomb3', 'tomb0']);
  t.deepEqual(await list(`?deletedAt[strictly_after]=${q('2024-01-02T00:00:00Z')}`), ['tomb0']);
  t.deepEqual(await list(`?deletedAt[before]=${q('2024-01-02T00:00:00Z')}`), ['tomb1', 'tomb2', 'tomb3']);
  t.deepEqual(await list(`?deletedAt[strictly_before]=${q('2024-01-02T01:00:00+01:00')}`), ['tomb1']);
  const page = (await get(u, '/deleted_activities?limit=3&page=2')).body;
  t.is(page['hydra:totalItems'], 4);
  t.is(page['hydra:member'].length, 1);
  t.is(page['hydra:view']['hydra:previous'], '/v2/deleted_activities?limit=3&page=1');
});

// Serial, so it runs before the other tests (AVA runs serial tests first): it expires every old tombstone.
test.serial(
  'the maintenance job deletes the tombstones older than TRACKING_TOMBSTONE_TTL_S, and only those',
  async (t) => {
    const u = await api.user();
    await ensureTrackingUser(db, { accountId: u.id, ldid: u.ldid, claims: {} });
    const ttl = api.config.TRACKING_TOMBSTONE_TTL_S;
    t.is(ttl, 30 * 86_400, 'default: 30 days');
    const ago = (seconds: number) => sql<Date>`now() - make_interval(secs => ${seconds})`;
    await db
      .insertInto('activity_tombstones')
      .values([
        { activity_id: `expired-${u.ldid}`, user_id: u.ldid, deleted_at: ago(ttl + 60) },
        { activity_id: `kept-${u.ldid}`, user_id: u.ldid, deleted_at: ago(ttl - 3600) },
      ])
      .execute();
    const job = { data: { requestedBy: 'test' } } as TypedJob<'maintenance', 'tombstones-expire'>;
    const deps = { config: api.config, db, logger: createLogger('silent', 'test'), markDone: NO_MARK };
    const result = await expireActivityTombstones(job, deps);
    t.true(result.deleted >= 1);
    t.deepEqual(
      (await members(u, '/deleted_activities')).map((m) => m.id),
      [`kept-${u.ldid}`],
    );
    t.deepEqual(await expireActivityTombstones(job, deps), { deleted: 0 }, 'a second run finds nothing');
  },
);

test('the maintenance workers schedule tombstones-expire hourly', async (t) => {
  const redis = createRedis(api.config.REDIS_URL, 'producer');
  const queue = new Queue('maintenance', { connection: redis, prefix: api.config.QUEUE_PREFIX });
  t.teardown(async () => {
    await queue.obliterate({ force: true }).catch(() => {});
    await queue.close();
    redis.disconnect();
  });
  await scheduleMaintenance(queue, api.config);
  const scheduler = await queue.getJobScheduler(TOMBSTONES_EXPIRE_SCHEDULER_ID);
  t.is(scheduler?.name, 'tombstones-expire');
  t.is(scheduler?.every, 3_600_000);
});

test('an account deletion writes no tombstones and deletes the ones the user had', async (t) => {
  const u = await api.user();
  const gone = await created(u);
  await created(u);
  await del(u, `/activities/${gone.id}`);
  const mine = () => db.selectFrom('activity_tombstones').select('activity_id').where('user_id', '=', u.ldid).execute();
  t.is((await mine()).length, 1);
  t.true(await startAccountDeletion(db, u.id));
  const result = await runStartedDeletions(db, { storageDir: api.config.STORAGE_DIR, accountIds: [u.id] });
  t.is(result.deleted.length, 1);
  t.like(result.deleted[0]?.deleted, { activities: 1, activity_tombstones: 1 });
  t.deepEqual(await mine(), []);
});

/**
 * The client of docs/tracking-sync.md, "The recipe": reads `path` changed since `cursor − W`
 * (everything without a cursor), oldest first, `limit` at a time, moving `from` to the last
 * member's time and turning pages only while a page holds a single second. Returns the members
 * and the earliest `from` at which it turned a page (or null).
 */
const W_MS = 5 * 60_000;
async function readSince(
  u: TrackingTestUser,
  path: string,
  prop: 'updatedAt' | 'deletedAt',
  cursor: Date | null,
  limit: number,
) {
  let from = cursor && new Date(cursor.getTime() - W_MS);
  let page = 1;
  let walked = null as Date | null;
  const read: Body[] = [];
  for (;;) {
    const filter = from ? `&${prop}[after]=${q(from.toISOString())}` : '';
    const got = await members(u, `${path}?order[${prop}]=asc&limit=${limit}&page=${page}${filter}`);
    read.push(...got);
    if (got.length < limit) return { read, walked };
    const last = new Date(got[got.length - 1]?.[prop] as string);
    if (!from || last > from) {
      from = last;
      page = 1;
    } else {
      walked = walked && walked < from ? walked : from;
      page++;
    }
  }
}

/** One sync of `u`'s activities, measures and devices into `local`; returns the next cursor. */
async function sync(u: TrackingTestUser, local: Map<string, Map<string, Body>>, cursor: Date | null, limit = 2) {
  // The server's time before any read of this sync.
  const first = await api.call('GET', '/deleted_activities?limit=1', u);
  const serverTime = new Date(first.headers.get('date') ?? '');
  let next = serverTime;
  const fetched = new Set<string>();
  for (const path of ['/activities', '/user_measures', '/user_devices']) {
    const items = local.get(path) ?? new Map<string, Body>();
    local.set(path, items);
    const { read, walked } = await readSince(u, path, 'updatedAt', cursor, limit);
    for (const m of read) items.set(m.id as string, m);
    for (const m of read) fetched.add(m['@id'] as string);
    if (walked && walked < next) next = walked;
  }
  if (cursor) {
    const { read, walked } = await readSince(u, '/deleted_activities', 'deletedAt', cursor, limit);
    for (const m of read) local.get('/activities')?.delete(m.id as string);
    if (walked && walked < next) next = walked;
  }
  return { cursor: next, fetched: fetched.size };
}

/** What the server holds for `u`, as a client would store it. */
async function everything(u: TrackingTestUser) {
  const all = new Map<string, Map<string, Body>>();
  for (const path of ['/activities', '/user_measures', '/user_devices'])
    all.set(path, new Map((await members(u, `${path}?limit=100`)).map((m) => [m.id as string, m])));
  return all;
}

const summary = (state: Map<string, Map<string, Body>>) =>
  Object.fromEntries(
    [...state].map(([path, items]) => [
      path,
      [...items.values()].map((m) => `${m.id} ${m.updatedAt} ${m.name ?? m.value ?? m.ownership}`).sort(),
    ]),
  );

test('a sync since T: changes and tombstones read since the last sync rebuild what the server holds', async (t) => {
  const u = await api.user();
  const [a1, a2, a3] = [await created(u), await created(u), await created(u)];
  const m1 = await post(u, '/user_measures', measure(u));
  const d1 = await post(u, '/user_devices', device());
  const local = new Map<string, Map<string, Body>>();
  const first = await sync(u, local, null);
  t.deepEqual(summary(local), summary(await everything(u)), 'the first sync reads everything');

  // Time passes: what the first sync read is now long before its cursor.
  for (const table of ['activities', 'user_measures', 'user_devices'] as const) await age(table, u);
  for (const m of local.values())
    for (const [id, item] of m) m.set(id, { ...item, updatedAt: '2024-01-01T00:00:00+00:00' });

  await put(u, `/activities/${a2.id}`, { name: 'Renamed' });
  await del(u, `/activities/${a3.id}`);
  const a4 = await created(u);
  const a5 = await created(u);
  await del(u, `/activities/${a5.id}`);
  await put(u, `/user_measures/${m1.id}`, { value: 71000 });
  const m2 = await post(u, '/user_measures', measure(u, 69000));
  await put(u, `/user_devices/${d1.id}`, { ownership: 3 });

  const second = await sync(u, local, first.cursor);
  t.deepEqual(summary(local), summary(await everything(u)), 'changes and tombstones rebuild the same set');
  t.deepEqual([...(local.get('/activities')?.keys() ?? [])].sort(), [a1.id, a2.id, a4.id].sort());
  t.is(local.get('/activities')?.get(a2.id)?.name, 'Renamed');
  t.is(local.get('/user_measures')?.get(m2.id)?.value, 69000);
  // Only what changed was read (some of it twice, at the edges of pages): a2, a4, m1, m2, d1, not a1.
  t.is(second.fetched, 5);
  t.true(second.cursor >= first.cursor);
});

test('the recipe reads a second holding more changes than a page without missing one', async (t) => {
  const u = await api.user();
  const made = [];
  for (let i = 0; i < 7; i++) made.push((await post(u, '/user_measures', measure(u, 60000 + i))).id);
  // All changed in one transaction (one now()): the same updatedAt, more than a page of them.
  await sql`update user_measures set updated_at = date_trunc('second', now()) where user_id = ${u.ldid}`.execute(db);
  const { read, walked } = await readSince(u, '/user_measures', 'updatedAt', new Date(), 2);
  t.deepEqual([...new Set(read.map((m) => m.id))].sort(), made.sort());
  t.truthy(walked, 'it had to turn pages at one time');
});

test('the feed queries read one index range per user', async (t) => {
  const users = [await api.user(), await api.user()];
  for (const u of users) await ensureTrackingUser(db, { accountId: u.id, ldid: u.ldid, claims: {} });
  const N = 2000;
  const stamp = (i: number) => new Date(Date.UTC(2020, 0, 1, 0, 0, i * 60));
  for (const u of users) {
    const holder = await created(u);
    for (let i = 0; i < N; i += 1000) {
      const slice = Array.from({ length: 1000 }, (_, k) => i + k);
      await db
        .insertInto('activities')
        .values(
          slice.map((n) => ({
            user_id: u.ldid,
            sport_id: 121,
            startdate: stamp(n),
            duration: n,
            manual: true,
            data_summaries: '{}',
            location: 'null',
            updated_at: stamp(n),
          })),
        )
        .execute();
      await db
        .insertInto('user_measures')
        .values(
          slice.map((n) => ({ user_id: u.ldid, datatype_id: 181, value: n, date: stamp(n), updated_at: stamp(n) })),
        )
        .execute();
      await db
        .insertInto('user_devices')
        .values(
          slice.map((n) => ({
            user_id: u.ldid,
            serial: `SN-PLAN-${n}`,
            model_id: 1,
            firmware_id: 2,
            last_connected_at: null,
            updated_at: stamp(n),
          })),
        )
        .execute();
      await db
        .insertInto('user_records')
        .values(
          slice.map((n) => ({
            user_id: u.ldid,
            sport_id: 121,
            type: `distance.${n}m`,
            datatype_id: 24,
            activity_id: holder.id,
            value: n,
            date: stamp(n),
            updated_at: stamp(n),
          })),
        )
        .execute();
      await db
        .insertInto('activity_tombstones')
        .values(slice.map((n) => ({ activity_id: `plan-${u.ldid}-${n}`, user_id: u.ldid, deleted_at: stamp(n) })))
        .execute();
    }
  }
  // Tombstones of many users, as on a live database: with two, a user's rows are half the table and
  // the expiry's index (deleted_at) looks as good as the user's.
  for (let k = 0; k < 18; k++) {
    const someone = await api.user();
    await ensureTrackingUser(db, { accountId: someone.id, ldid: someone.ldid, claims: {} });
    await db
      .insertInto('activity_tombstones')
      .values(
        Array.from({ length: 1000 }, (_, n) => ({
          activity_id: `plan-${someone.ldid}-${n}`,
          user_id: someone.ldid,
          deleted_at: stamp(2 * n),
        })),
      )
      .execute();
  }
  for (const table of ['activities', 'user_measures', 'user_devices', 'user_records', 'activity_tombstones'])
    await sql`analyze ${sql.table(table)}`.execute(db);
  const caller = (users[0] as TrackingTestUser).ldid;
  const asc = [{ prop: 'updatedAt' as const, direction: 'asc' as const }];
  type Explainable = { explain: () => Promise<Record<string, unknown>[]> };
  const feeds = (after: Date): [string, Explainable][] => [
    ['activities_user_updated_idx', activitiesQuery(db, caller, { updatedAt: { after }, order: asc }).limit(100)],
    ['user_measures_user_updated_idx', measuresQuery(db, caller, { updatedAt: { after }, order: asc }).limit(100)],
    [
      'user_devices_user_updated_idx',
      userDevicesQuery(db, { id: caller }, { updatedAt: { after }, order: asc }).limit(100),
    ],
    ['user_records_user_updated_idx', recordsQuery(db, caller, { updatedAt: { after }, order: asc }).limit(100)],
    ['activity_tombstones_user_idx', tombstonesQuery(db, caller, { deletedAt: { after } }).limit(100)],
  ];
  const planOf = async (query: Explainable) => (await query.explain()).map((r) => String(r['QUERY PLAN'])).join('\n');
  // A first sync (everything, oldest first): the index gives the rows in order, a page at a time.
  for (const [index, query] of feeds(stamp(0))) {
    const plan = await planOf(query);
    t.regex(plan, new RegExp(`Index (Only )?Scan using ${index}`), plan);
    t.notRegex(plan, /Seq Scan|Sort/, plan);
  }
  // A later sync (the last few changes): one range of the same index, sorted or not.
  for (const [index, query] of feeds(stamp(N - 50))) {
    const plan = await planOf(query);
    t.regex(plan, new RegExp(`(Index (Only )?Scan using|Bitmap Index Scan on) ${index}`), plan);
    t.notRegex(plan, /Seq Scan/, plan);
  }
  // The expiry, with a TTL that expires the 50 oldest of each user: few rows, as on a live database.
  const plan = await planOf(expiredTombstonesQuery(db, Math.floor((Date.now() - stamp(50).getTime()) / 1000)));
  t.regex(plan, /(Index (Only )?Scan using|Bitmap Index Scan on) activity_tombstones_expiry_idx/, plan);
  t.notRegex(plan, /Seq Scan/, plan);
});
