import test from 'ava';
import pg from 'pg';
import { type RunningApi, startApi } from '../api/server.ts';
import { PostgresReplica } from '../scripts/cluster/postgres-replica.ts';
import { PrivatePostgres } from '../scripts/cluster/postgres-server.ts';
import { issueApiKey } from '../shared/accounts/api-keys.ts';
import { createDb, createReadDb, READ_POOL_NAME } from '../shared/db/database.ts';
import { ReadRouter } from '../shared/db/read-router.ts';
import { searchParams, searchQuery } from '../shared/places/search-query.ts';
import { compileSearchQuery } from '../shared/places/search-sql.ts';
import { testConfig } from './helpers/app.ts';
import { placeBody } from './helpers/places.ts';
import { createTestAccount, mintToken, testClientId } from './helpers/tokens.ts';
import { activity, me } from './helpers/tracking-activities.ts';

// Issue 26 §2: the API on a private primary with a streaming replica (pg_basebackup -R) on
// another loopback port, DATABASE_READ_URL naming it. The steps share the servers: serial.

const primary = await PrivatePostgres.create();
const replica = await PostgresReplica.of(primary);
// A paused replay must not make the replica "too far behind" during the API's steps: a large
// bound keeps it in use; the last step checks the bound itself with a router of its own.
const config = testConfig({
  DATABASE_URL: primary.url,
  DATABASE_READ_URL: replica.url,
  DATABASE_READ_MAX_LAG_MS: '60000',
  RATE_LIMIT_ENABLED: 'false',
});
const api: RunningApi = await startApi(config);
const setup = createDb(primary.url, 2);
const staff = await createTestAccount(setup.db, ['staff']);
const staffToken = await mintToken(setup.db, config, staff);
const runner = await createTestAccount(setup.db, ['user']);
const runnerUser = { ...runner, token: await mintToken(setup.db, config, runner) };
const { api_key: apiKey } = await issueApiKey(setup.db, await testClientId(setup.db), 'tests');

test.after.always(async () => {
  await api.close();
  await setup.db.destroy();
  await replica.destroy();
  await primary.destroy();
});

const ORIGIN = '3.06,50.63';
const searchPath = `/api/v1/places?origin=${ORIGIN}&radius=10&limit=100`;
/** The SQL the API runs for that search (its last query on a replica backend shows it was served there). */
const searchSql = compileSearchQuery(
  searchParams(searchQuery.parse({ origin: ORIGIN, radius: '10', limit: '100' })),
).sql;

// biome-ignore lint/suspicious/noExplicitAny: answers are checked field by field
async function json(path: string, init: RequestInit = {}): Promise<{ status: number; body: any }> {
  const res = await fetch(`${api.url}${path}`, init);
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined };
}

const search = () => json(searchPath);
const uuidsOf = (body: { data: { features: { properties: { uuid: string } }[] } }) =>
  body.data.features.map((f) => f.properties.uuid);

async function createPlace(): Promise<string> {
  const res = await json('/api/v1/places', {
    method: 'POST',
    headers: { authorization: `Bearer ${staffToken}`, 'content-type': 'application/json' },
    body: JSON.stringify(placeBody()),
  });
  if (res.status !== 201) throw new Error(`create: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.properties.uuid;
}

const tracking = (method: string, path: string, body?: unknown) =>
  json(`/v2${path}`, {
    method,
    headers: {
      'x-api-key': apiKey,
      authorization: `Bearer ${runnerUser.token}`,
      ...(body ? { 'content-type': 'application/ld+json' } : {}),
    },
    ...(body ? { body: JSON.stringify(body) } : {}),
  });

/** One query on a server, by its own connection. */
async function on<T extends pg.QueryResultRow>(url: string, text: string): Promise<T[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query<T>(text)).rows;
  } finally {
    await client.end();
  }
}

/** Whether a backend of the API's replica pool on `url` last ran the places search. */
async function searchRanOn(url: string): Promise<boolean> {
  const rows = await on<{ query: string }>(
    url,
    `select query from pg_stat_activity where application_name = '${READ_POOL_NAME}' and query <> ''`,
  );
  return rows.some((r) => searchSql.startsWith(r.query));
}

/** Whether a backend of the API's replica pool on the replica started a statement matching `pattern` after `since`. */
async function ranOnReplica(pattern: RegExp, since: Date): Promise<boolean> {
  const rows = await on<{ query: string; query_start: Date | null }>(
    replica.url,
    `select query, query_start from pg_stat_activity where application_name = '${READ_POOL_NAME}'`,
  );
  return rows.some((r) => pattern.test(r.query) && r.query_start !== null && r.query_start >= since);
}

/** A gauge of the API's /metrics without labels (NaN is a value), or undefined when it is not exported. */
async function gauge(name: string): Promise<number | undefined> {
  const text = await (await fetch(`${api.url}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  return line === undefined ? undefined : Number(line.slice(name.length + 1));
}

/** Waits for the router's verdict on the replica (it checks once a second); fails the test after 30 s. */
async function replicaUsed(used: boolean, router: ReadRouter = api.context.reads): Promise<void> {
  const deadline = Date.now() + 120_000;
  while (router.state.used !== used) {
    if (Date.now() > deadline) throw new Error(`replica used stayed ${!used}: ${router.state.reason}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

test.serial('searches are served by the replica: its backends ran them, the primary has no replica pool', async (t) => {
  const place = await createPlace();
  await replica.caughtUp();
  await replicaUsed(true);
  const res = await search();
  t.is(res.status, 200);
  t.true(uuidsOf(res.body).includes(place));
  t.true(await searchRanOn(replica.url), 'a backend of the replica ran the search');
  t.false(await searchRanOn(primary.url), 'the primary has no backend of the replica pool');
  // Operators see it: in use, and its delay at the last check.
  t.is(await gauge('read_replica_in_use'), 1);
  const lag = await gauge('read_replica_lag_seconds');
  t.true(lag !== undefined && lag >= 0 && lag <= config.DATABASE_READ_MAX_LAG_MS / 1000, `lag ${lag}`);
  // The catalogue and partners searches go there too, and the recommendations.
  t.is((await json('/sports?q=run')).status, 200);
  t.is((await json('/api/v1/partners')).status, 200);
  for (const path of ['/sports/121/recommendations', '/sports/121/recommendations/FR']) {
    const since = new Date();
    t.is((await json(path)).status, 200, path);
    t.true(
      await ranOnReplica(/sport_popularity|sport_copractice|country_sport_density/, since),
      `${path}: read on the replica`,
    );
  }
});

test.serial(
  'a writer reads their own writes at once (primary); searches and other callers see the replica',
  async (t) => {
    await replica.caughtUp();
    // Replay stops: whatever is written now is on the primary only, until resumed.
    await on(replica.url, 'select pg_wal_replay_pause()');
    try {
      const place = await createPlace();
      // The creator reads the place at once: an item read is the primary's.
      const item = await json(`/api/v1/places/${place}`, { headers: { authorization: `Bearer ${staffToken}` } });
      t.is(item.status, 200);
      t.is(item.body.properties.uuid, place);
      // The public search is the paused replica's: the place is not there yet.
      const stale = await search();
      t.is(stale.status, 200);
      t.false(uuidsOf(stale.body).includes(place));
      t.true(api.context.reads.state.used);

      // The tracking lists of a caller who just wrote are the primary's: their new objects are in them.
      const posted = await tracking('POST', '/activities', activity(runnerUser, { name: 'after the pause' }));
      t.is(posted.status, 201);
      const created = {
        '/activities': posted,
        '/user_devices': await tracking('POST', '/user_devices', {
          serial: `SN-replica-${Date.now()}`,
          model: '/v2/device_models/1',
          firmware: '/v2/firmwares/2',
        }),
        '/share_activities': await tracking('POST', '/share_activities', {
          user: me(runnerUser),
          activity: `/v2/activities/${posted.body.id}`,
        }),
        '/exports': await tracking('POST', '/exports'),
        '/user_web_hooks': await tracking('POST', '/user_web_hooks', {
          user: me(runnerUser),
          url: 'https://hooks.example.com/replica',
        }),
      };
      const listed = async (path: keyof typeof created) => {
        const res = await tracking('GET', path);
        t.is(res.status, 200, path);
        return res.body['hydra:member'].some((m: { id: string }) => m.id === created[path].body.id);
      };
      for (const [path, res] of Object.entries(created)) t.true([201, 202].includes(res.status), path);
      for (const path of Object.keys(created) as (keyof typeof created)[])
        t.true(await listed(path), `${path}: the writer's list is the primary's`);
      // Without the write marker (as once it expires) the same lists are the replica's: not there yet.
      const markers = api.context.redis;
      await markers.del(`${config.QUEUE_PREFIX}:rw:${runner.id}`);
      for (const path of Object.keys(created) as (keyof typeof created)[])
        t.false(await listed(path), `${path}: without the marker, the list is the paused replica's`);
    } finally {
      await on(replica.url, 'select pg_wal_replay_resume()');
    }
    await replica.caughtUp();
    t.is((await search()).status, 200);
  },
);

test.serial(
  "a friend's activities and the feed come from the replica; whether the friend may see them, from the primary at once",
  async (t) => {
    const account = await createTestAccount(setup.db, ['user']);
    const friend = { ...account, token: await mintToken(setup.db, config, account) };
    const asFriend = (method: string, path: string, body?: unknown) =>
      json(`/v2${path}`, {
        method,
        headers: {
          'x-api-key': apiKey,
          authorization: `Bearer ${friend.token}`,
          ...(body ? { 'content-type': 'application/ld+json' } : {}),
        },
        ...(body ? { body: JSON.stringify(body) } : {}),
      });
    t.is((await asFriend('GET', '/me')).status, 200);
    const shared = await tracking(
      'POST',
      '/activities',
      activity(runnerUser, { name: 'for friends', visibility: 'followers', startdate: '2030-01-01T08:00:00Z' }),
    );
    t.is(shared.status, 201);
    const share = await tracking('POST', '/share_users', { user: me(friend) });
    t.is(share.status, 201);
    t.is((await asFriend('PUT', `/share_users/${share.body.id}`, { status: 'accepted' })).status, 200);
    await replica.caughtUp();
    await replicaUsed(true);
    // The friend's write marker (their answer) would send their reads to the primary: as once it expires.
    await api.context.redis.del(`${config.QUEUE_PREFIX}:rw:${friend.id}`);

    const since = new Date();
    const list = await asFriend('GET', `/friends/${runner.ldid}/activities`);
    t.is(list.status, 200);
    t.deepEqual(
      list.body['hydra:member'].map((m: { id: string }) => m.id),
      [shared.body.id],
    );
    t.true(await ranOnReplica(/from "activities" where "user_id" = \$1/, since), "the friend's list: the replica's");
    const feed = await asFriend('GET', '/feed');
    t.deepEqual(
      feed.body['hydra:member'].map((m: { id: string }) => m.id),
      [shared.body.id],
    );
    t.true(await ranOnReplica(/cross join lateral/, since), 'the feed: the replica');

    // Replay stops; the owner deletes the share: the paused replica still holds it, the friend sees nothing.
    await on(replica.url, 'select pg_wal_replay_pause()');
    try {
      t.is((await tracking('DELETE', `/share_users/${share.body.id}`)).status, 204);
      t.is((await asFriend('GET', `/friends/${runner.ldid}/activities`)).status, 404);
      t.is((await asFriend('GET', `/friends/${runner.ldid}/activities/${shared.body.id}`)).status, 404);
      t.deepEqual((await asFriend('GET', '/feed')).body['hydra:member'], []);
    } finally {
      await on(replica.url, 'select pg_wal_replay_resume()');
    }
    await replica.caughtUp();
  },
);

test.serial('replica stopped: reads answer 200 from the primary; back: used again', async (t) => {
  const place = await createPlace();
  await replica.caughtUp();
  await replicaUsed(true);
  await replica.stop();
  // At once (the router may not have noticed: a failed replica read runs again on the primary)...
  const statuses: number[] = [];
  for (let i = 0; i < 5; i++) {
    const res = await search();
    statuses.push(res.status);
    if (res.status === 200) t.true(uuidsOf(res.body).includes(place));
  }
  statuses.push((await tracking('GET', '/activities')).status, (await json('/sports?q=run')).status);
  t.deepEqual(new Set(statuses), new Set([200]));
  // ...and once it has.
  await replicaUsed(false);
  t.regex(api.context.reads.state.reason, /unreachable|failed/);
  t.is(await gauge('read_replica_in_use'), 0);
  t.true(Number.isNaN(await gauge('read_replica_lag_seconds')), 'the lag is unknown');
  const res = await search();
  t.is(res.status, 200);
  t.true(uuidsOf(res.body).includes(place));

  await replica.start();
  await replica.caughtUp();
  await replicaUsed(true);
  t.false(await searchRanOn(replica.url), 'a fresh replica: no search ran on it yet');
  t.is((await search()).status, 200);
  t.true(await searchRanOn(replica.url), 'the replica serves the searches again');
});

test.serial(
  'a replica further behind than DATABASE_READ_MAX_LAG_MS is skipped, and used again once it catches up',
  async (t) => {
    const replicaHandle = createReadDb(replica.url, 1);
    const router = new ReadRouter(
      setup,
      { handle: replicaHandle, url: replica.url },
      {
        markers: api.context.redis,
        keyPrefix: config.QUEUE_PREFIX,
        maxLagMs: 500,
        pollMs: 200,
        isUnavailable: () => true,
      },
    );
    t.teardown(() => router.stop());
    await replica.caughtUp();
    await router.start();
    await replicaUsed(true, router);
    t.is(await router.read(undefined, async (h) => h), replicaHandle);
    await on(replica.url, 'select pg_wal_replay_pause()');
    try {
      await createPlace();
      await replicaUsed(false, router);
      t.regex(router.state.reason, /behind/);
      t.is(await router.read(undefined, async (h) => h), router.primary);
    } finally {
      await on(replica.url, 'select pg_wal_replay_resume()');
    }
    await replicaUsed(true, router);
    t.is(await router.read(undefined, async (h) => h), replicaHandle);
  },
);
