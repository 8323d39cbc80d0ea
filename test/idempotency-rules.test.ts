import { createHash } from 'node:crypto';
import test from 'ava';
import { Queue } from 'bullmq';
import { sql } from 'kysely';
import { ConfigError, loadConfig } from '../shared/config.ts';
import { BodyDigest, digestBody } from '../shared/idempotency/body-digest.ts';
import {
  answerIsKept,
  keyScope,
  mediaTypeFingerprint,
  parseIdempotencyKey,
  requestDifference,
} from '../shared/idempotency/key.ts';
import { expireKeys } from '../shared/idempotency/store.ts';
import { createRedis } from '../shared/queue/connection.ts';
import { IDEMPOTENCY_EXPIRE_SCHEDULER_ID } from '../workers/processors/maintenance.ts';
import { startWorkers } from '../workers/worker.ts';
import { testConfig } from './helpers/app.ts';
import { createTestDatabase } from './helpers/db.ts';
import { createTestAccount } from './helpers/tokens.ts';

// The rules of Idempotency-Key without HTTP (shared/idempotency/) and the expiry job.

const database = await createTestDatabase();
const { db } = database;
test.after.always(() => database.drop());

test('a key is 1 to 255 visible ASCII characters, bare or as a quoted sf-string (the same key)', (t) => {
  t.deepEqual(parseIdempotencyKey('8e03978e-40d5-43e8-bc93-6894a57f9324'), {
    key: '8e03978e-40d5-43e8-bc93-6894a57f9324',
  });
  t.deepEqual(parseIdempotencyKey('"8e03978e-40d5"'), { key: '8e03978e-40d5' });
  t.deepEqual(parseIdempotencyKey(' "a \\"b\\" \\\\c" '), { key: 'a "b" \\c' });
  t.deepEqual(parseIdempotencyKey('x'.repeat(255)), { key: 'x'.repeat(255) });
  t.deepEqual(parseIdempotencyKey(`"${'x'.repeat(255)}"`), { key: 'x'.repeat(255) });
  for (const [value, problem] of [
    ['', /empty/],
    ['""', /empty/],
    ['x'.repeat(256), /256 characters/],
    ['a b', /visible ASCII/],
    ['clé', /visible ASCII/],
    ['"clé"', /quoted string/],
    ['"a', /quoted string/],
    ['"a"b', /quoted string/],
    ['"a\\n"', /quoted string/],
    ['"a", "b"', /quoted string/],
  ] as const) {
    const parsed = parseIdempotencyKey(value);
    t.true('problem' in parsed && problem.test(parsed.problem), `${value}: ${JSON.stringify(parsed)}`);
  }
});

test('keys belong to the account, else to the API client', (t) => {
  t.is(keyScope({ accountId: 'a1', clientId: 'c1' }), 'account:a1');
  t.is(keyScope({ clientId: 'c1' }), 'client:c1');
  t.is(keyScope({}), undefined);
});

test('the same request is the same method, path with query, media type and declared headers', (t) => {
  const first = { method: 'POST', path: '/v2/activities?sport=1', contentType: 'application/gpx+xml', headers: {} };
  t.is(requestDifference(first, { ...first }), undefined);
  t.regex(
    requestDifference(first, { ...first, path: '/v2/activities?sport=2' }) ?? '',
    /POST \/v2\/activities\?sport=1/,
  );
  t.regex(requestDifference(first, { ...first, contentType: 'application/json' }) ?? '', /application\/gpx\+xml/);
  t.regex(requestDifference(first, { ...first, headers: { 'accept-language': 'fr' } }) ?? '', /accept-language/);
  t.is(mediaTypeFingerprint('Multipart/Form-Data; boundary=----abc'), 'multipart/form-data');
  t.is(mediaTypeFingerprint('application/json; Charset=UTF-8'), 'application/json;charset=utf-8');
  t.is(mediaTypeFingerprint(''), '');
});

test('only a success is kept for the retries', (t) => {
  for (const status of [200, 201, 204]) t.true(answerIsKept(status), String(status));
  for (const status of [400, 404, 409, 422, 429, 500, 503]) t.false(answerIsKept(status), String(status));
});

const multipart = (boundary: string) =>
  Buffer.from(
    `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="a.gpx"\r\n\r\n<gpx/>\r\n` +
      `--${boundary}\r\nContent-Disposition: form-data; name="sport"\r\n\r\n168\r\n--${boundary}--\r\n`,
  );

test('the body digest is the SHA-256 of the bytes, whatever their chunks; a multipart boundary does not count', (t) => {
  const bytes = Buffer.from('{"value":72500}');
  const plain = digestBody('application/json', bytes);
  t.deepEqual(plain, { sha256: createHash('sha256').update(bytes).digest(), size: bytes.length });
  const a = digestBody('multipart/form-data; boundary=AaB03x', multipart('AaB03x'));
  const b = digestBody(
    'multipart/form-data; boundary="----WebKitFormBoundary7MA4YWxk"',
    multipart('----WebKitFormBoundary7MA4YWxk'),
  );
  t.deepEqual(a, b);
  t.notDeepEqual(digestBody('multipart/form-data; boundary=AaB03x', multipart('AaB03x').subarray(1)), a);
  // Split anywhere, a delimiter across two chunks included, the digest is the same.
  const whole = multipart('AaB03x');
  for (let at = 0; at <= whole.length; at++) {
    const digest = new BodyDigest('multipart/form-data; boundary=AaB03x');
    digest.update(whole.subarray(0, at));
    digest.update(whole.subarray(at));
    t.deepEqual(digest.digest(), a, `split at ${at}`);
  }
});

test('IDEMPOTENCY_KEY_TTL_S: one day by default, 60 s to 30 days; IDEMPOTENCY_LEASE_S: 60 s, 3 s to an hour', (t) => {
  t.is(loadConfig({}).IDEMPOTENCY_KEY_TTL_S, 86_400);
  t.is(loadConfig({ IDEMPOTENCY_KEY_TTL_S: '60' }).IDEMPOTENCY_KEY_TTL_S, 60);
  t.is(loadConfig({}).IDEMPOTENCY_LEASE_S, 60);
  for (const [name, bad] of [
    ['IDEMPOTENCY_KEY_TTL_S', '59'],
    ['IDEMPOTENCY_KEY_TTL_S', '2592001'],
    ['IDEMPOTENCY_KEY_TTL_S', 'a day'],
    ['IDEMPOTENCY_LEASE_S', '2'],
    ['IDEMPOTENCY_LEASE_S', '3601'],
  ] as const)
    t.throws(() => loadConfig({ [name]: bad }), { instanceOf: ConfigError, message: new RegExp(name) });
});

/** Keys of `scope` expiring `offset` from now (an SQL interval), done or in flight. */
const insertKeys = (scope: string, keys: { key: string; offset: string; done?: boolean }[], accountId?: string) =>
  db
    .insertInto('idempotency_keys')
    .values(
      keys.map(({ key, offset, done }) => ({
        scope,
        key,
        account_id: accountId ?? null,
        owner: '00000000-0000-4000-8000-000000000001',
        request_method: 'POST',
        request_path: '/v2/user_measures',
        request_type: 'application/json',
        request_headers: '{}',
        lease_until: sql<Date>`now()`,
        expires_at: sql<Date>`now() + ${offset}::interval`,
        ...(done
          ? {
              state: 'done' as const,
              body_sha256: Buffer.alloc(32),
              body_size: 0,
              response_status: 201,
              response_headers: '{}',
              response_body: Buffer.from('{}'),
            }
          : {}),
      })),
    )
    .execute();
const keysOf = async (scope: string) =>
  (await db.selectFrom('idempotency_keys').select('key').where('scope', '=', scope).orderBy('key').execute()).map(
    (r) => r.key,
  );

test.serial('expireKeys deletes the expired keys, answered or abandoned, and only those', async (t) => {
  await insertKeys('account:expire', [
    { key: 'old-done', offset: '-1 second', done: true },
    { key: 'old-in-flight', offset: '-1 hour' },
    { key: 'fresh-done', offset: '1 hour', done: true },
    { key: 'fresh-in-flight', offset: '1 hour' },
  ]);
  t.is(await expireKeys(db), 2);
  t.deepEqual(await keysOf('account:expire'), ['fresh-done', 'fresh-in-flight']);
  t.is(await expireKeys(db), 0);
});

test.serial(
  'the maintenance workers schedule the expiry, whose first run is at once, and delete expired keys',
  async (t) => {
    await insertKeys('account:scheduled', [
      { key: 'expired', offset: '-1 minute', done: true },
      { key: 'kept', offset: '1 day', done: true },
    ]);
    const config = testConfig({
      DATABASE_URL: database.url,
      WORKER_QUEUES: 'maintenance',
      IDEMPOTENCY_KEY_TTL_S: '600',
    });
    const redis = createRedis(config.REDIS_URL, 'producer');
    const queue = new Queue('maintenance', { connection: redis, prefix: config.QUEUE_PREFIX });
    const workers = await startWorkers(config);
    t.teardown(async () => {
      await workers.close();
      await queue.obliterate({ force: true }).catch(() => {});
      await queue.close();
      redis.disconnect();
    });
    t.deepEqual(workers.queues, ['maintenance']);
    const scheduler = await queue.getJobScheduler(IDEMPOTENCY_EXPIRE_SCHEDULER_ID);
    t.is(scheduler?.every, 600_000, 'every IDEMPOTENCY_KEY_TTL_S when shorter than an hour');
    t.is(scheduler?.name, 'idempotency-expire');
    while ((await keysOf('account:scheduled')).length > 1) await new Promise((r) => setTimeout(r, 50));
    t.deepEqual(await keysOf('account:scheduled'), ['kept']);
  },
);

test('deleting an account deletes its keys and their answers', async (t) => {
  const account = await createTestAccount(db);
  await insertKeys(`account:${account.id}`, [{ key: 'gone', offset: '1 day', done: true }], account.id);
  t.deepEqual(await keysOf(`account:${account.id}`), ['gone']);
  await db.deleteFrom('accounts').where('id', '=', account.id).execute();
  t.deepEqual(await keysOf(`account:${account.id}`), []);
});
