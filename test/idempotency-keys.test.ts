import test from 'ava';
import { sql } from 'kysely';
import { MEDIA } from './helpers/activity-file-uploads.ts';
import { fixture } from './helpers/activity-files.ts';
import { startTrackingApi, type TrackingTestUser } from './helpers/tracking.ts';
import { activity, activityCalls, HIKING } from './helpers/tracking-activities.ts';

// Idempotency-Key on the creating POSTs (docs/idempotency.md), through POST /v2/user_measures and
// POST /v2/activities; every other creating route: test/idempotency-routes.test.ts.

const api = await startTrackingApi();
test.after.always(() => api.close());
const { db } = api.database;

const measure = (u: TrackingTestUser, value = 72500) => ({
  user: `/v2/users/${u.ldid}`,
  datatype: '/v2/datatypes/181',
  value,
  date: '2024-05-01T08:30:00+02:00',
});
const withKey = (key: string, headers: Record<string, string> = {}) => ({ 'idempotency-key': key, ...headers });
const postMeasure = (u: TrackingTestUser, body: unknown, key?: string) =>
  api.call('POST', '/user_measures', u, { body, ...(key === undefined ? {} : { headers: withKey(key) }) });
const count = async (table: 'user_measures' | 'activities', u: TrackingTestUser) =>
  Number(
    (
      await db
        .selectFrom(table)
        .select((eb) => eb.fn.countAll().as('n'))
        .where('user_id', '=', u.ldid)
        .executeTakeFirstOrThrow()
    ).n,
  );
const keyRow = (key: string) => db.selectFrom('idempotency_keys').selectAll().where('key', '=', key).executeTakeFirst();
const violation = (body: { violations: { propertyPath: string; message: string }[] }) => body.violations[0];

test('a retry with the same key and body gets the same status and body, marked as a replay; one measure exists', async (t) => {
  const u = await api.user();
  const first = await postMeasure(u, measure(u), 'k-1');
  t.is(first.status, 201);
  t.is(first.headers.get('idempotent-replayed'), null);
  const again = await postMeasure(u, measure(u), 'k-1');
  t.is(again.status, 201);
  t.deepEqual(again.body, first.body);
  t.is(again.headers.get('idempotent-replayed'), 'true');
  t.is(again.headers.get('location'), first.headers.get('location'));
  t.is(again.headers.get('content-type'), first.headers.get('content-type'));
  t.is(await count('user_measures', u), 1);
  // The key is stored with the fingerprint and the answer, kept for IDEMPOTENCY_KEY_TTL_S (a day).
  const row = await keyRow('k-1');
  t.like(row, {
    scope: `account:${u.id}`,
    account_id: u.id,
    state: 'done',
    request_method: 'POST',
    request_path: '/v2/user_measures',
  });
  t.is(row?.response_status, 201);
  const kept = (row?.expires_at.getTime() ?? 0) - (row?.created_at.getTime() ?? 0);
  t.true(kept >= 86_400_000 && kept < 86_460_000, String(kept));
  // Without a key, the same body creates another measure.
  t.is((await postMeasure(u, measure(u))).status, 201);
  t.is(await count('user_measures', u), 2);
});

test('the same key with another body, path or content type is a 422 naming the header; nothing is created', async (t) => {
  const u = await api.user();
  t.is((await postMeasure(u, measure(u), 'k-2')).status, 201);
  const other = await postMeasure(u, measure(u, 70000), 'k-2');
  t.is(other.status, 422);
  t.is(other.body['@type'], 'ConstraintViolationList');
  t.like(violation(other.body), { propertyPath: 'headers.idempotency-key' });
  t.regex(violation(other.body)?.message ?? '', /its body was another/);
  const elsewhere = await api.call('POST', '/activities', u, { body: activity(u), headers: withKey('k-2') });
  t.is(elsewhere.status, 422);
  t.regex(violation(elsewhere.body)?.message ?? '', /first used for POST \/v2\/user_measures/);
  const asJson = await api.call('POST', '/user_measures', u, {
    body: measure(u),
    headers: withKey('k-2', { 'content-type': 'application/json' }),
  });
  t.is(asJson.status, 422);
  t.regex(violation(asJson.body)?.message ?? '', /Content-Type application\/ld\+json/);
  t.is(await count('user_measures', u), 1);
  t.is(await count('activities', u), 0);
});

test('keys are per user: the same key of another user collides with nothing', async (t) => {
  const [a, b] = [await api.user(), await api.user()];
  const first = await postMeasure(a, measure(a), 'shared-key');
  const second = await postMeasure(b, measure(b), 'shared-key');
  t.is(first.status, 201);
  t.is(second.status, 201);
  t.is(second.headers.get('idempotent-replayed'), null);
  t.not(second.body.id, first.body.id);
  t.is(await count('user_measures', b), 1);
  const scopes = await db.selectFrom('idempotency_keys').select('scope').where('key', '=', 'shared-key').execute();
  t.deepEqual(scopes.map((r) => r.scope).sort(), [`account:${a.id}`, `account:${b.id}`].sort());
});

test('an invalid key is a 400 naming the header, in the service format; quoted and bare keys are the same key', async (t) => {
  const u = await api.user();
  for (const [key, message] of [
    ['', /is empty/],
    ['x'.repeat(256), /256 characters; at most 255/],
    ['two words', /visible ASCII/],
    ['"unterminated', /quoted string/],
    ['"a" "b"', /quoted string/],
  ] as const) {
    const res = await postMeasure(u, measure(u), key);
    t.is(res.status, 400, key);
    t.is(res.body['@type'], 'hydra:Error', key);
    t.regex(res.body['hydra:description'], /Idempotency-Key/, key);
    t.regex(JSON.stringify(res.body), message, key);
  }
  t.is(await count('user_measures', u), 0);
  const quoted = await postMeasure(u, measure(u), '"k-3 with a space"');
  t.is(quoted.status, 201);
  t.is((await keyRow('k-3 with a space'))?.state, 'done');
  t.is((await postMeasure(u, measure(u), 'x'.repeat(255))).status, 201);
});

test('an error keeps nothing: a 422 releases the key, and the same key then creates', async (t) => {
  const u = await api.user();
  const refused = await postMeasure(u, measure(u, -1), 'k-4');
  t.is(refused.status, 422);
  t.is(await keyRow('k-4'), undefined);
  const fixed = await postMeasure(u, measure(u), 'k-4');
  t.is(fixed.status, 201);
  t.is(fixed.headers.get('idempotent-replayed'), null);
  t.is(await count('user_measures', u), 1);
});

test.serial('a 5xx keeps nothing either: the key is released and the retry runs', async (t) => {
  const u = await api.user();
  // A failure the service does not expect (a constraint it does not know), for this user only.
  const refuse = sql.raw(`alter table user_measures add constraint idem_test check (user_id <> '${u.ldid}') not valid`);
  await refuse.execute(db);
  const failed = await postMeasure(u, measure(u), 'k-500');
  await sql`alter table user_measures drop constraint idem_test`.execute(db);
  t.is(failed.status, 500);
  t.is(await keyRow('k-500'), undefined);
  const retried = await postMeasure(u, measure(u), 'k-500');
  t.is(retried.status, 201);
  t.is(retried.headers.get('idempotent-replayed'), null);
  t.is(await count('user_measures', u), 1);
});

test('a request still in flight makes a second one with the same key a 409; the first then answers 201', async (t) => {
  const u = await api.user();
  const bytes = Buffer.from(JSON.stringify(measure(u)));
  // The first request's body is held half sent: the request has claimed its key and waits for the rest.
  let finish: () => void = () => {};
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      controller.enqueue(bytes.subarray(0, 20));
      finish = () => {
        controller.enqueue(bytes.subarray(20));
        controller.close();
      };
    },
  });
  const first = api.fetch('/v2/user_measures', {
    method: 'POST',
    headers: {
      'x-api-key': api.apiKey,
      authorization: `Bearer ${u.token}`,
      'content-type': 'application/ld+json',
      'idempotency-key': 'k-5',
    },
    body,
    duplex: 'half',
  } as RequestInit);
  while ((await keyRow('k-5'))?.state !== 'in_flight') await new Promise((r) => setTimeout(r, 20));
  const second = await postMeasure(u, measure(u), 'k-5');
  t.is(second.status, 409);
  t.is(second.headers.get('retry-after'), '1');
  t.regex(second.body['hydra:description'], /still in progress/);
  finish();
  const answered = await first;
  t.is(answered.status, 201);
  const third = await postMeasure(u, measure(u), 'k-5');
  t.is(third.status, 201);
  t.is(third.headers.get('idempotent-replayed'), 'true');
  t.deepEqual(third.body, await answered.json());
  t.is(await count('user_measures', u), 1);
});

test('a key held by a request whose process died is taken over once its lease lapsed', async (t) => {
  const u = await api.user();
  const held = {
    scope: `account:${u.id}`,
    owner: '00000000-0000-4000-8000-000000000000',
    request_method: 'POST',
    request_path: '/v2/user_measures',
    request_type: 'application/ld+json',
    request_headers: '{}',
    expires_at: sql<Date>`now() + interval '1 day'`,
  };
  await db
    .insertInto('idempotency_keys')
    .values([
      { ...held, key: 'k-live', lease_until: sql<Date>`now() + interval '1 minute'` },
      { ...held, key: 'k-dead', lease_until: sql<Date>`now() - interval '1 second'` },
    ])
    .execute();
  t.is((await postMeasure(u, measure(u), 'k-live')).status, 409);
  const taken = await postMeasure(u, measure(u), 'k-dead');
  t.is(taken.status, 201);
  t.is(taken.headers.get('idempotent-replayed'), null);
  t.like(await keyRow('k-dead'), { state: 'done', response_status: 201 });
  // An expired answer is not replayed either (the expiry job has not run yet): the key runs again.
  await db.updateTable('idempotency_keys').set({ expires_at: sql<Date>`now()` }).where('key', '=', 'k-dead').execute();
  const anew = await postMeasure(u, measure(u), 'k-dead');
  t.is(anew.status, 201);
  t.is(anew.headers.get('idempotent-replayed'), null);
  t.is(await count('user_measures', u), 2);
});

test('JSON activities: a retry answers the same activity; one activity and one records job exist', async (t) => {
  const u = await api.user();
  const post = () => api.call('POST', '/activities', u, { body: activity(u), headers: withKey('act-json') });
  const first = await post();
  t.is(first.status, 201);
  const again = await post();
  t.is(again.status, 201);
  t.is(again.headers.get('idempotent-replayed'), 'true');
  t.deepEqual(again.body, first.body);
  t.is(await count('activities', u), 1);
  t.is((await activityCalls(api).outboxOf(first.body.id)).length, 1);
});

test('file imports: a GPX body and a multipart form with a new boundary each time are replayed', async (t) => {
  const u = await api.user();
  const gpx = await fixture('devices/gpx/korita-zbevnica.gpx');
  const raw = () =>
    api.call('POST', `/activities?sport=${HIKING}`, u, {
      raw: gpx,
      headers: withKey('act-gpx', { 'content-type': MEDIA.gpx }),
    });
  const first = await raw();
  t.is(first.status, 201, JSON.stringify(first.body));
  const again = await raw();
  t.is(again.headers.get('idempotent-replayed'), 'true');
  t.deepEqual(again.body, first.body);
  t.is(again.headers.get('import-format'), first.headers.get('import-format'));
  // Another query is another request.
  const otherSport = await api.call('POST', '/activities?sport=121', u, {
    raw: gpx,
    headers: withKey('act-gpx', { 'content-type': MEDIA.gpx }),
  });
  t.is(otherSport.status, 422);
  // FormData draws a new boundary for each request: the digest ignores it. (Another user: the same
  // file twice for one user is a duplicate import.)
  const v = await api.user();
  const form = () => {
    const data = new FormData();
    data.append('file', new Blob([gpx], { type: 'application/octet-stream' }), 'hike.gpx');
    data.append('sport', String(HIKING));
    return api.call('POST', '/file_import/activities', v, { raw: data, headers: withKey('act-form') });
  };
  const uploaded = await form();
  t.is(uploaded.status, 201, JSON.stringify(uploaded.body));
  const retried = await form();
  t.is(retried.headers.get('idempotent-replayed'), 'true');
  t.deepEqual(retried.body, uploaded.body);
  t.is(await count('activities', u), 1);
  t.is(await count('activities', v), 1);
});
