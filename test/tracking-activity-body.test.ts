import { isMainThread, threadId, Worker } from 'node:worker_threads';
import { brotliCompressSync, deflateSync, gzipSync } from 'node:zlib';
import test from 'ava';
import { activityImportPool } from '../api/tracking/activity-files.ts';
import { BodySyntaxError, DomainError } from '../shared/errors.ts';
import { parseActivityBody } from '../shared/tracking/body/parse.ts';
import { ImportError } from '../shared/tracking/formats/import-error.ts';
import { ActivityImportPool } from '../shared/tracking/imports/pool.ts';
import { startTrackingApi, type TrackingTestUser } from './helpers/tracking.ts';

// A body limit of 2 MB, so that a compressed body expanding past it is cheap to send.
const api = await startTrackingApi({ env: { ACTIVITY_BODY_LIMIT: '2mb' } });
test.after.always(() => api.close());

type Json = Record<string, unknown>;
const bytes = (text: string) => new TextEncoder().encode(text);
const activity = (u: TrackingTestUser, fields: Json = {}) => ({
  user: `/v2/users/${u.ldid}`,
  sport: '/v2/sports/121',
  startdate: '2024-05-01T06:00:00+00:00',
  duration: 3600,
  dataSummaries: { '5': 10230 },
  ...fields,
});
/** Three hours at 1 Hz of heart rate and distance, and the track: about 1.1 MB of JSON, parsed in a thread. */
function hours(): { datastream: Json; locations: Json } {
  const datastream: Json = {};
  const locations: Json = {};
  for (let s = 0; s < 3 * 3600; s++) {
    datastream[s] = { '1': 120 + (s % 40), '5': s * 2.8 };
    locations[s] = { latitude: 45 + s / 1e5, longitude: 6 + s / 1e5, elevation: s % 7 === 0 ? null : 200.5 };
  }
  return { datastream, locations };
}
const violations = (body: { violations: { propertyPath: string }[] }) => body.violations.map((v) => v.propertyPath);

// ---- the parser, without HTTP

test('parseActivityBody: the streams become columns and the rest of the body is handed on', (t) => {
  const parsed = parseActivityBody(
    bytes(
      JSON.stringify({
        name: 'run',
        datastream: { '0': { '1': 90 }, '2': { '1': 95, '5': 4.5 } },
        locations: { '1': { latitude: 45, longitude: 6, elevation: null } },
      }),
    ),
  );
  t.deepEqual(parsed.body, { name: 'run' });
  t.deepEqual([...parsed.datastream.elapsed], [0, 2]);
  t.deepEqual([...(parsed.datastream.channels.get(1) ?? [])], [90, 95]);
  t.deepEqual([...(parsed.datastream.channels.get(5) ?? [])], [Number.NaN, 4.5]);
  t.deepEqual([...parsed.track.elapsed], [1]);
  t.true(Number.isNaN(parsed.track.elevation[0]));
  // No streams, null streams, an empty body, an array (the route's schema refuses it).
  t.is(parseActivityBody(bytes('{"datastream":null}')).datastream.elapsed.length, 0);
  t.is(parseActivityBody(bytes('  ')).body, undefined);
  t.deepEqual(parseActivityBody(bytes('[1]')).body, [1]);
});

test('parseActivityBody: not JSON, a scalar or a __proto__ member is a BodySyntaxError; a bad stream is invalid, named', (t) => {
  for (const text of ['{"a":', '"text"', '12', 'null'])
    t.false(t.throws(() => parseActivityBody(bytes(text)), { instanceOf: BodySyntaxError })?.prototypeMember, text);
  t.true(
    t.throws(() => parseActivityBody(bytes('{"a":{"__proto__":{"x":1}}}')), { instanceOf: BodySyntaxError })
      ?.prototypeMember,
  );
  const invalid = t.throws(() => parseActivityBody(bytes('{"datastream":[1],"locations":{"x":{}}}')), {
    instanceOf: DomainError,
  });
  t.deepEqual(
    invalid?.errors.map((e) => e.path),
    ['body.datastream'],
  );
  const sample = t.throws(() => parseActivityBody(bytes('{"locations":{"7":{"latitude":95,"longitude":6}}}')), {
    instanceOf: DomainError,
  });
  t.deepEqual(
    sample?.errors.map((e) => e.path),
    ['body.locations.7.latitude'],
  );
});

test('the pool parses a body in its thread: the same columns, and the same errors as on the main thread', async (t) => {
  const pool = new ActivityImportPool({ threads: 1, timeoutMs: 60_000, maxQueue: 4, maxMemoryMb: 512 });
  t.teardown(() => pool.close());
  const text = JSON.stringify({ name: 'x', ...hours() });
  const inThread = await pool.parseBody(bytes(text));
  const here = parseActivityBody(bytes(text));
  t.deepEqual(inThread.body, here.body);
  t.deepEqual(inThread.datastream, here.datastream);
  t.deepEqual(inThread.track, here.track);
  t.true(
    (await t.throwsAsync(pool.parseBody(bytes('{"__proto__":1}')), { instanceOf: BodySyntaxError }))?.prototypeMember,
  );
  const invalid = await t.throwsAsync(pool.parseBody(bytes('{"datastream":{"-1":{}}}')), { instanceOf: DomainError });
  t.deepEqual(
    invalid?.errors.map((e) => e.path),
    ['body.datastream.-1'],
  );
  t.like(pool.stats(), { completed: 1, refused: 2, crashed: 0 });
});

// ---- over HTTP

// Serial: no other body is parsed in the pool meanwhile, so its counter moves by this one only.
test.serial('POST /v2/activities: a body over 1 MB is parsed in an import thread, and stored as sent', async (t) => {
  const u = await api.user();
  const pool = activityImportPool(api.api.context);
  const before = pool.stats().completed;
  const streams = hours();
  const created = await api.call('POST', '/activities', u, { body: activity(u, streams) });
  t.is(created.status, 201);
  t.is(pool.stats().completed, before + 1);
  t.true(isMainThread);
  t.false(pool.stats().threadIds.includes(threadId));
  const read = await api.call('GET', `/activities/${created.body.id}`, u);
  t.deepEqual(read.body.datastream, streams.datastream);
  t.deepEqual(read.body.locations, streams.locations);
  // A small one is parsed on the event loop: the pool does not move.
  const small = activity(u, { startdate: '2024-05-02T08:30:00+02:00' });
  t.is((await api.call('POST', '/activities', u, { body: small })).status, 201);
  t.is(pool.stats().completed, before + 1);
});

test('POST /v2/activities: gzip, deflate or br bodies are accepted; another encoding is a 415, a corrupt one a 400', async (t) => {
  const u = await api.user();
  const text = JSON.stringify(activity(u, hours()));
  // The same activity each time, in another encoding: stored again on purpose.
  const post = (raw: Buffer | string, encoding: string) =>
    api.call('POST', '/activities?duplicates=keep', u, {
      raw: raw as RequestInit['body'],
      headers: { 'content-type': 'application/ld+json', 'content-encoding': encoding },
    });
  t.is((await post(gzipSync(text), 'gzip')).status, 201);
  t.is((await post(brotliCompressSync(text), 'br')).status, 201);
  t.is((await post(deflateSync(text), 'deflate')).status, 201);
  const unknown = await post(text, 'compress');
  t.is(unknown.status, 415);
  t.like(unknown.body, { '@type': 'hydra:Error' });
  for (const encoding of ['gzip', 'deflate', 'br']) {
    const corrupt = await post(Buffer.from('not compressed at all'), encoding);
    t.is(corrupt.status, 400, encoding);
    t.like(corrupt.body, { '@type': 'hydra:Error', 'hydra:description': `The body is not valid ${encoding}` });
  }
});

test('POST /v2/activities: a small compressed body that expands past ACTIVITY_BODY_LIMIT is a 413', async (t) => {
  const u = await api.user();
  const bomb = gzipSync(JSON.stringify(activity(u, { comment: ' '.repeat(5 * 1024 * 1024) })));
  t.true(bomb.length < 64 * 1024);
  const res = await api.call('POST', '/activities', u, {
    raw: bomb,
    headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' },
  });
  t.is(res.status, 413);
  t.like(res.body, { '@type': 'hydra:Error' });
});

test('POST /v2/activities: a large body that is not JSON is a 400, one with a __proto__ member a 400 naming it, a bad sample a 422 naming it', async (t) => {
  const u = await api.user();
  const text = JSON.stringify(activity(u, hours()));
  const post = (raw: string) =>
    api.call('POST', '/activities', u, { raw, headers: { 'content-type': 'application/json' } });
  const broken = await post(text.slice(0, -1));
  t.is(broken.status, 400);
  t.like(broken.body, { '@type': 'hydra:Error', 'hydra:description': 'The request body is not valid JSON' });
  const proto = await post(`${text.slice(0, -1)},"location":{"__proto__":{"admin":true}}}`);
  t.is(proto.status, 400);
  t.regex(proto.body['hydra:description'], /__proto__/);
  const sample = await post(text.replace('"1800":{"1":', '"1800":{"1":"fast","x":'));
  t.is(sample.status, 422);
  t.deepEqual(violations(sample.body), ['datastream.1800.1', 'datastream.1800.x']);
  const notAnObject = await post(text.replace(/"locations":\{.*\}\}$/, '"locations":[1,2,3]}'));
  t.is(notAnObject.status, 422);
  t.deepEqual(violations(notAnObject.body), ['locations']);
});

test('the pool: a body that takes longer than the time limit is refused as too large, naming the body', async (t) => {
  // The limit starts when the thread takes the body; starting the thread alone takes longer than 1 ms.
  const pool = new ActivityImportPool({ threads: 1, timeoutMs: 1, maxQueue: 1, maxMemoryMb: 512 });
  t.teardown(() => pool.close());
  const error = await t.throwsAsync(pool.parseBody(bytes(JSON.stringify(hours()))), { instanceOf: ImportError });
  t.is(error?.code, 'too-large');
  t.regex(error?.message ?? '', /reading the body took longer than/);
});

/**
 * Holds the next task posted to a worker thread until release(): the pool counts its thread busy
 * for as long as the test needs, whatever the machine's speed. Serial tests only: it catches the
 * next post of any pool of this process.
 */
function holdNextThreadTask(): { taken: Promise<void>; release: () => void } {
  const post = Worker.prototype.postMessage;
  let release = () => {};
  const released = new Promise<void>((resolve) => {
    release = resolve;
  });
  const taken = new Promise<void>((resolve) => {
    Worker.prototype.postMessage = function (this: Worker, ...args: Parameters<Worker['postMessage']>) {
      Worker.prototype.postMessage = post;
      resolve();
      void released.then(() => post.apply(this, args));
    };
  });
  return {
    taken,
    release: () => {
      Worker.prototype.postMessage = post;
      release();
    },
  };
}

// Serial: the held task must be this test's.
test.serial(
  'POST /v2/activities: with IMPORT_QUEUE=0, large bodies beyond the busy import thread answer 503 with Retry-After',
  async (t) => {
    // A time limit no held task reaches.
    const busyApi = await startTrackingApi({
      env: { IMPORT_THREADS: '1', IMPORT_QUEUE: '0', IMPORT_TIMEOUT_S: '3600' },
    });
    t.teardown(() => busyApi.close());
    const u = await busyApi.user();
    const text = JSON.stringify(activity(u, hours()));
    const post = () =>
      busyApi.call('POST', '/activities', u, { raw: text, headers: { 'content-type': 'application/json' } });
    // The first body holds the only thread until the others are answered.
    const hold = holdNextThreadTask();
    t.teardown(hold.release);
    const first = post();
    await hold.taken;
    const others = await Promise.all(Array.from({ length: 5 }, post));
    hold.release();
    t.is((await first).status, 201);
    t.deepEqual(
      others.map((a) => a.status),
      [503, 503, 503, 503, 503],
    );
    for (const busy of others) {
      t.is(busy.headers.get('retry-after'), '5');
      t.like(busy.body, { '@type': 'hydra:Error' });
    }
  },
);
