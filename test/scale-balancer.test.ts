import { createHash, randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import test from 'ava';
import pg from 'pg';
import { type BalancedApi, PgBouncer, startBalancedApi } from '../scripts/cluster/balancer.ts';
import { createAccount } from '../shared/accounts/accounts.ts';
import { issueApiKey } from '../shared/accounts/api-keys.ts';
import type { Config } from '../shared/config.ts';
import { createDb } from '../shared/db/database.ts';
import { parseSearchQuery } from '../shared/places/search-query.ts';
import { compileSearchQuery } from '../shared/places/search-sql.ts';
import { testConfig, uniquePrefix } from './helpers/app.ts';
import { createTestDatabase, type TestDatabase } from './helpers/db.ts';
import { authorizationCode, createTestAccount, mintToken, testClientId } from './helpers/tokens.ts';

// Issue 26 §3: two API processes behind HAProxy, PgBouncer (pool_mode=transaction) before
// PostgreSQL, every request through the balancer. The tests run in order (serial): the last one
// checks that both processes served and that nothing answered 5xx.

let balanced: BalancedApi;
let database: TestDatabase;
let config: Config;
let staffToken: string;
const storage = `/tmp/${uniquePrefix()}`;
const servedBy = new Map<string, number>();
const serverErrors: string[] = [];

test.before(async () => {
  database = await createTestDatabase();
  balanced = await startBalancedApi({
    apis: 2,
    databaseUrl: database.url,
    migrate: false,
    // Few server connections for the two pools of 10: statements of both APIs meet on each.
    serverPoolSize: 3,
    env: {
      NODE_ENV: 'test',
      LOG_LEVEL: 'warn',
      QUEUE_PREFIX: uniquePrefix(),
      STORAGE_DIR: storage,
      RATE_LIMIT_POINTS: '10000',
      IMPORT_THREADS: '1',
    },
  });
  config = testConfig({ DATABASE_URL: database.url, PUBLIC_URL: balanced.url });
  const staff = await createTestAccount(database.db, ['staff']);
  staffToken = await mintToken(database.db, config, staff);
});

test.after.always(async () => {
  await balanced?.close();
  await database?.drop();
  rmSync(storage, { recursive: true, force: true });
});

/** A request through HAProxy; tallies which API answered and any 5xx. */
async function via(path: string, init: RequestInit = {}): Promise<Response> {
  const res = await fetch(`${balanced.url}${path}`, { redirect: 'manual', ...init });
  const server = res.headers.get('x-served-by') ?? 'none';
  servedBy.set(server, (servedBy.get(server) ?? 0) + 1);
  if (res.status >= 500) serverErrors.push(`${init.method ?? 'GET'} ${path}: ${res.status} (${server})`);
  return res;
}

// biome-ignore lint/suspicious/noExplicitAny: answers are checked field by field
async function json(path: string, init: RequestInit = {}): Promise<{ status: number; server: string; body: any }> {
  const res = await via(path, init);
  const text = await res.text();
  return {
    status: res.status,
    server: res.headers.get('x-served-by') ?? '',
    body: text ? JSON.parse(text) : undefined,
  };
}

/** The APIs that answered, each once, sorted: round robin may start with either. */
const servers = (answers: { server: string }[]) => [...new Set(answers.map((a) => a.server))].sort();

const post = (body: unknown, headers: Record<string, string>): RequestInit => ({
  method: 'POST',
  headers: { 'content-type': 'application/json', ...headers },
  body: JSON.stringify(body),
});

test.serial('named prepared statements break behind the transaction pooler; unnamed ones do not', async (t) => {
  // One server connection for every client: two API processes preparing the same search name meet there.
  const bouncer = await PgBouncer.start({ upstream: database.url, serverPoolSize: 1 });
  const parsed = parseSearchQuery({ origin: '3.06,50.63', radius: '10' });
  if (!parsed.params) throw new Error('invalid query');
  const search = compileSearchQuery(parsed.params);
  t.truthy(search.name, 'the fast path names the search statement');
  const named = { name: search.name, text: search.sql, values: search.parameters };
  const pools = [1, 2].map(() => new pg.Pool({ connectionString: bouncer.url(database.name), max: 1 }));
  try {
    await pools[0]?.query(named);
    const error = await t.throwsAsync(() => pools[1]?.query(named) as Promise<unknown>);
    t.is((error as { code?: string }).code, '42P05', 'the second process finds the name taken');
    // DATABASE_PREPARED_STATEMENTS=false: the same statement object runs unnamed, from any client.
    const unnamed = [1, 2].map(() => createDb(bouncer.url(database.name), 1, { preparedStatements: false }));
    try {
      for (let i = 0; i < 3; i++)
        for (const { pool } of unnamed) t.is((await pool.query(named)).rowCount, 1, 'one search row');
    } finally {
      for (const { db } of unnamed) await db.destroy();
    }
  } finally {
    for (const pool of pools) await pool.end();
    await bouncer.stop();
  }
});

test.serial('HAProxy appends the client address to X-Forwarded-For; the APIs trust that one hop only', async (t) => {
  // Both processes share one rate limit per client address (Redis): 127.0.0.1, whatever the client wrote.
  const remaining = async (res: Response) => {
    await res.arrayBuffer();
    return { left: Number(res.headers.get('ratelimit-remaining')), server: res.headers.get('x-served-by') };
  };
  const forged = (address: string) => ({ headers: { 'x-forwarded-for': address } });
  const first = await remaining(await via('/api/v1/sports', forged('198.51.100.1')));
  const second = await remaining(await via('/api/v1/sports', forged('198.51.100.2')));
  t.not(first.server, second.server, 'round robin: the two requests went to both APIs');
  t.is(second.left, first.left - 1, 'one budget: the forged addresses were not believed');
  // Straight to an API (no HAProxy), the one trusted hop is the forged entry: a fresh budget.
  const direct = await remaining(await fetch(`${balanced.apis[0]?.url}/api/v1/sports`, forged('198.51.100.3')));
  t.is(direct.left, 10_000 - 1);
});

test.serial('a place created through the balancer is read back by both APIs', async (t) => {
  const auth = { authorization: `Bearer ${staffToken}` };
  const created = await json(
    '/api/v1/places',
    post(
      {
        geometry: { type: 'Point', coordinates: [3.0573, 50.6292] },
        name: 'Parc de la Citadelle',
        country: 'FR',
        activities: [{ sport_id: 121, tags: ['outdoor'], distance: 5000 }],
      },
      auth,
    ),
  );
  t.is(created.status, 201, JSON.stringify(created.body));
  const reads = await Promise.all([1, 2, 3, 4].map(() => json(`/api/v1/places/${created.body.properties.uuid}`)));
  t.deepEqual(new Set(reads.map((r) => r.status)), new Set([200]));
  t.deepEqual(servers(reads), ['api1', 'api2']);
  for (const read of reads) t.deepEqual(read.body, reads[0]?.body);
});

test.serial('every shape of places search answers the same through both APIs', async (t) => {
  const auth = { authorization: `Bearer ${staffToken}` };
  const places = [
    { at: [3.06, 50.64], activities: [{ sport_id: 121, tags: ['outdoor'], distance: 8000 }] },
    { at: [3.07, 50.62], activities: [{ sport_id: 357, tags: ['floodlight'], surface: 'clay', courts: 4 }] },
    { at: [3.1, 50.65], activities: [{ sport_id: 121, tags: ['outdoor'], distance: 20000 }] },
    { at: [3.02, 50.61], activities: [{ sport_id: 357, tags: ['floodlight'], surface: 'clay', courts: 2 }] },
  ];
  for (const [i, p] of places.entries()) {
    const res = await json(
      '/api/v1/places',
      post(
        {
          geometry: { type: 'Point', coordinates: p.at },
          name: `Search ${i}`,
          country: 'FR',
          activities: p.activities,
        },
        auth,
      ),
    );
    t.is(res.status, 201, JSON.stringify(res.body));
  }
  const searches = [
    'sw=2.95,50.55&ne=3.2,50.7',
    'origin=3.06,50.63&radius=10',
    'origin=3.06,50.63&radius=20&sports=121&tags=outdoor&max_distance=15000',
    'origin=3.06,50.63&radius=20&surface=clay',
    'origin=3.06,50.63&radius=20&created_at=desc',
    'sw=2.95,50.55&ne=3.2,50.7&user_origin=3.0,50.6',
    'origin=3.06,50.63&radius=20&days=7&featured=false',
    'origin=3.06,50.63&radius=20&limit=2&page=2',
  ];
  for (const query of searches) {
    const answers = await Promise.all([1, 2, 3, 4].map(() => json(`/api/v1/places?${query}`)));
    t.deepEqual(
      answers.map((a) => a.status),
      [200, 200, 200, 200],
      `${query}: ${JSON.stringify(answers.map((a) => a.body)).slice(0, 300)}`,
    );
    t.deepEqual(servers(answers), ['api1', 'api2'], query);
    for (const a of answers) t.deepEqual(a.body, answers[0]?.body, query);
    t.true((answers[0]?.body.count ?? 0) > 0, `${query} finds places`);
  }
  // Keyset paging (`after` in links.next) across both processes: every place once.
  const seen: string[] = [];
  let next: string | null = '/api/v1/places?origin=3.06,50.63&radius=20&limit=2';
  while (next) {
    const page = await json(next.replace(balanced.url, ''));
    t.is(page.status, 200);
    seen.push(...page.body.data.features.map((f: { properties: { uuid: string } }) => f.properties.uuid));
    next = page.body.links.next;
  }
  t.is(seen.length, new Set(seen).size);
  t.true(seen.length >= places.length);
});

test.serial('the catalogue and partner searches (named statements) answer through the pooler', async (t) => {
  for (const path of [
    '/sports?q=run',
    '/sports',
    '/api/v1/partners?nearby[]=50.63,3.06&sport=121',
    '/api/v1/partners',
  ]) {
    const answers = await Promise.all([1, 2, 3, 4].map(() => json(path)));
    t.deepEqual(
      answers.map((a) => a.status),
      [200, 200, 200, 200],
      path,
    );
    for (const a of answers) t.deepEqual(a.body, answers[0]?.body, path);
  }
});

test.serial('a tracking activity with streams is posted through one API and read through both', async (t) => {
  const account = await createTestAccount(database.db);
  const token = await mintToken(database.db, config, account);
  const { api_key } = await issueApiKey(database.db, await testClientId(database.db), 'tests');
  const headers = { authorization: `Bearer ${token}`, 'x-api-key': api_key };
  const datastream: Record<string, Record<string, number>> = {};
  const locations: Record<string, { latitude: number; longitude: number; elevation: number }> = {};
  for (let s = 0; s < 600; s++) {
    datastream[s] = { '1': 120 + (s % 40), '5': s * 3 };
    locations[s] = { latitude: 50.63 + s * 1e-5, longitude: 3.06 + s * 1e-5, elevation: 20 + (s % 7) };
  }
  const created = await json(
    '/v2/activities',
    post(
      {
        name: 'Balanced run',
        user: `/v2/users/${account.ldid}`,
        sport: '/v2/sports/121',
        startdate: '2026-11-26T08:30:00+01:00',
        duration: 600,
        dataSummaries: { '5': 1800 },
        datastream,
        locations,
      },
      { ...headers, 'content-type': 'application/ld+json' },
    ),
  );
  t.is(created.status, 201, JSON.stringify(created.body).slice(0, 500));
  // The streams are read with a binary COPY (shared/db/copy-binary.ts): through the pooler too.
  const reads = await Promise.all([1, 2].map(() => json(`/v2/activities/${created.body.id}`, { headers })));
  t.deepEqual(servers(reads), ['api1', 'api2']);
  for (const read of reads) {
    t.is(read.status, 200);
    t.deepEqual(read.body.datastream, datastream);
    t.deepEqual(read.body.locations, locations);
  }
  const list = await json('/v2/activities', { headers });
  t.is(list.status, 200);
  t.deepEqual(
    list.body['hydra:member'].map((m: { id: string }) => m.id),
    [created.body.id],
  );
});

test.serial('a login (authorization code with PKCE) hops between the APIs; its token works on both', async (t) => {
  const redirectUri = 'https://app.example.test/cb';
  const registered = await json(
    '/api/v1/clients',
    post({ client_name: 'Balanced app', redirect_uris: [redirectUri] }, {}),
  );
  t.is(registered.status, 201);
  const client = registered.body as { client_id: string; client_secret: string };
  const password = 'correct horse battery';
  const email = `balanced-${randomBytes(4).toString('hex')}@example.test`;
  await createAccount(database.db, { email, password });
  const verifier = randomBytes(32).toString('base64url');
  // Sign-in page, form post, consent and redirect: round robin sends them to both processes.
  const code = await authorizationCode(balanced.url, {
    clientId: client.client_id,
    redirectUri,
    email,
    password,
    codeChallenge: createHash('sha256').update(verifier).digest('base64url'),
  });
  const basic = `Basic ${Buffer.from(`${client.client_id}:${client.client_secret}`).toString('base64')}`;
  const token = await json('/token', {
    method: 'POST',
    headers: { authorization: basic, 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({
      grant_type: 'authorization_code',
      code,
      redirect_uri: redirectUri,
      code_verifier: verifier,
    }),
  });
  t.is(token.status, 200, JSON.stringify(token.body));
  const me = await Promise.all(
    [1, 2].map(() => json('/api/me', { headers: { authorization: `Bearer ${token.body.access_token}` } })),
  );
  t.deepEqual(servers(me), ['api1', 'api2']);
  for (const answer of me) t.is(answer.status, 200, JSON.stringify(answer.body));
});

test.serial('both APIs served, nothing answered 5xx, and the database traffic went through PgBouncer', async (t) => {
  t.deepEqual(serverErrors, []);
  t.true((servedBy.get('api1') ?? 0) > 10 && (servedBy.get('api2') ?? 0) > 10, JSON.stringify([...servedBy]));
  t.is(servedBy.get('none'), undefined, 'every answer came through HAProxy from an API');
  const admin = new pg.Client({ connectionString: balanced.bouncer.url('pgbouncer') });
  await admin.connect();
  try {
    const stats = (await admin.query<{ database: string; total_xact_count: string }>('show stats')).rows;
    const ours = stats.find((s) => s.database === database.name);
    t.true(Number(ours?.total_xact_count) > 50, JSON.stringify(ours));
  } finally {
    await admin.end();
  }
});
