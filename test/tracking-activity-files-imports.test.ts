import { request } from 'node:http';
import { isMainThread, threadId } from 'node:worker_threads';
import test from 'ava';
import { activityImportPool } from '../api/tracking/activity-files.ts';
import { ImportError } from '../shared/tracking/formats/import-error.ts';
import { storageProblem } from '../shared/tracking/imports/activity-import.ts';
import { ActivityImportPool, ImportPoolBusyError } from '../shared/tracking/imports/pool.ts';
import { startWorkers } from '../workers/worker.ts';
import { activityFileUploads, type Body, MEDIA } from './helpers/activity-file-uploads.ts';
import { fixture } from './helpers/activity-files.ts';
import { testConfig } from './helpers/app.ts';
import { startTrackingApi } from './helpers/tracking.ts';

// Every test of the file runs at once: the queue must take them all (its limit has its own test).
const api = await startTrackingApi({ env: { IMPORT_QUEUE: '1000', IMPORT_THREADS: '2' } });
const { db } = api.database;
test.after.always(() => api.close());

const { postRaw, postForm } = activityFileUploads(api);

test('fields: sport, name, comment, userDevice and connector, from the query or the form; the records follow', async (t) => {
  const u = await api.user();
  const bytes = await fixture('apps/gpx10-logger.gpx');
  const bySport = await postRaw(u, bytes, MEDIA.gpx, '?sport=/v2/sports/168&name=Morning%20walk&comment=nice');
  t.is(bySport.status, 201, JSON.stringify(bySport.body));
  t.is(bySport.headers.get('import-sport-source'), 'caller');
  t.like(bySport.body as Body, { sport: '/v2/sports/168', name: 'Morning walk', comment: 'nice' });
  // The same file again (and below): stored again on purpose, with other fields.
  const fallback = await postRaw(u, bytes, MEDIA.gpx, '?duplicates=keep');
  t.is(fallback.headers.get('import-sport-source'), 'fallback');
  t.like(fallback.body as Body, { sport: '/v2/sports/402', name: 'Logger walk', comment: null });

  const device = await api.call('POST', '/user_devices', u, {
    body: {
      serial: 'watch-1',
      model: '/v2/device_models/1',
      firmware: '/v2/firmwares/2',
      user: `/v2/users/${u.ldid}`,
      ownership: 1,
      lastConnectedAt: '2024-01-01T00:00:00+00:00',
    },
  });
  t.is(device.status, 201, JSON.stringify(device.body));
  const deviceIri = (device.body as Body)['@id'] as string;
  const byDevice = await postForm(
    u,
    bytes,
    'walk.gpx',
    { userDevice: deviceIri, connector: '/v2/connectors/5', sport: '114' },
    '?duplicates=keep',
  );
  t.is(byDevice.status, 201, JSON.stringify(byDevice.body));
  t.like(byDevice.body as Body, {
    manual: false,
    userDevice: deviceIri,
    connector: '/v2/connectors/5',
    sport: '/v2/sports/114',
  });

  const other = await api.user();
  const violations = async (res: Promise<{ status: number; body: unknown }>) => {
    const r = await res;
    t.is(r.status, 422, JSON.stringify(r.body));
    return (r.body as { violations: { propertyPath: string }[] }).violations.map((v) => v.propertyPath);
  };
  t.deepEqual(await violations(postRaw(other, bytes, MEDIA.gpx, `?userDevice=${deviceIri}`)), ['userDevice']);
  t.deepEqual(await violations(postRaw(u, bytes, MEDIA.gpx, '?sport=999999')), ['sport']);
  t.deepEqual(await violations(postForm(u, bytes, 'w.gpx', { sport: '/v2/sports/999999' })), ['sport']);
  t.deepEqual(await violations(postRaw(u, bytes, MEDIA.gpx, '?sport=/v2/users/x')), ['sport']);
  t.deepEqual(await violations(postForm(u, bytes, 'w.gpx', { sprot: '121' })), ['sprot']);
  t.deepEqual(await violations(postForm(u, bytes, 'w.gpx', { name: 'x'.repeat(256) })), ['name']);
  const twice = api.call('POST', '/activities?sport=121', u, { raw: formWith(bytes, { sport: '121' }) });
  t.deepEqual(await violations(twice), ['sport']);
  const hostile = await postForm(u, bytes, 'w.gpx', { name: 'a\u0000b' });
  t.is(hostile.status, 400);
  t.is(await db.selectFrom('activities').where('user_id', '=', other.ldid).select('id').executeTakeFirst(), undefined);
});

function formWith(bytes: Uint8Array, fields: Record<string, string>): FormData {
  const form = new FormData();
  form.append('file', new Blob([bytes]), 'f.gpx');
  for (const [k, v] of Object.entries(fields)) form.append(k, v);
  return form;
}

/** A GPX run: `seconds` points, one a second, `speed` m/s due north. */
function gpxRun(seconds: number, speed: number, start = Date.UTC(2026, 2, 1, 7)): Buffer {
  const points: string[] = [];
  for (let i = 0; i <= seconds; i++) {
    const lat = 45 + (i * speed) / 111_195;
    points.push(
      `<trkpt lat="${lat.toFixed(7)}" lon="6"><time>${new Date(start + i * 1000).toISOString()}</time></trkpt>`,
    );
  }
  return Buffer.from(
    `<?xml version="1.0"?><gpx version="1.1" creator="t" xmlns="http://www.topografix.com/GPX/1/1"><trk><type>running</type><trkseg>${points.join('')}</trkseg></trk></gpx>`,
  );
}

test.serial('records follow an import (with a records worker running)', async (t) => {
  const workers = await startWorkers(
    testConfig({
      DATABASE_URL: api.database.url,
      QUEUE_PREFIX: api.config.QUEUE_PREFIX,
      WORKER_QUEUES: 'records',
      OUTBOX_POLL_MS: '20',
    }),
  );
  t.teardown(() => workers.close());
  const u = await api.user();
  const res = await postRaw(u, gpxRun(1200, 4), 'application/octet-stream');
  t.is(res.status, 201, JSON.stringify(res.body));
  t.is((res.body as Body).sport, '/v2/sports/121');
  const record = async () =>
    db
      .selectFrom('user_records')
      .selectAll()
      .where('user_id', '=', u.ldid)
      .where('type', '=', 'distance.1000m')
      .executeTakeFirst();
  const end = Date.now() + 120_000;
  while (!(await record()) && Date.now() < end) await new Promise((r) => setTimeout(r, 25));
  const found = await record();
  t.is(found?.activity_id, (res.body as Body).id as string);
  t.true(Math.abs((found?.value ?? 0) - 250) < 0.01, `1000 m in ${found?.value} s`);
});

test('hostile files are refused: entity expansion, external entity, truncated FIT, a FIT announcing 1 GB', async (t) => {
  const u = await api.user();
  const unsafe = async (bytes: Uint8Array, type: string, message: RegExp) => {
    const res = await postRaw(u, bytes, type);
    t.is(res.status, 422, JSON.stringify(res.body));
    t.regex((res.body as { violations: { message: string }[] }).violations[0]?.message ?? '', message);
  };
  await unsafe(await fixture('hostile/billion-laughs.gpx'), MEDIA.gpx, /DOCTYPE|ENTITY/);
  await unsafe(await fixture('hostile/external-entity.tcx'), MEDIA.tcx, /DOCTYPE|ENTITY/);
  const fit = await fixture('devices/fit/davidfit.fit');
  await unsafe(fit.subarray(0, fit.length / 2), MEDIA.fit, /truncated/);
  const huge = Buffer.from(await fixture('devices/fit/3x250m.fit'));
  huge.writeUInt32LE(1024 * 1024 * 1024, 4);
  await unsafe(huge, MEDIA.fit, /announces 1073741824 bytes/);
  const cut = (await fixture('apps/strava-like-run.gpx')).subarray(0, 1500);
  await unsafe(cut, MEDIA.gpx, /./);
  t.is(await db.selectFrom('activities').where('user_id', '=', u.ldid).select('id').executeTakeFirst(), undefined);
});

test('415: neither JSON nor an activity file; a compressed body; an empty file is a 422', async (t) => {
  const u = await api.user();
  const html = await postRaw(u, Buffer.from('<html><body>hi</body></html>'), 'text/html');
  t.is(html.status, 415);
  t.regex((html.body as Body).detail as string, /application\/gpx\+xml/);
  const sniffed = await postRaw(u, Buffer.from('<html><body>hi</body></html>'), 'application/gpx+xml');
  t.is(sniffed.status, 415);
  t.regex((sniffed.body as Body).detail as string, /is not a GPX, TCX or FIT file \(its XML root element is <html>\)/);
  const gzip = await api.call('POST', '/activities', u, {
    raw: await fixture('apps/latin1.gpx'),
    headers: { 'content-type': MEDIA.gpx, 'content-encoding': 'gzip' },
  });
  t.is(gzip.status, 415);
  const empty = await postRaw(u, Buffer.alloc(0), MEDIA.gpx);
  // An empty body is no body: the JSON route says what it lacks.
  t.is(empty.status, 422);
  const emptyPart = await postForm(u, Buffer.alloc(0), 'empty.gpx');
  t.is(emptyPart.status, 422);
  const noFile = new FormData();
  noFile.append('sport', '121');
  const missing = await api.call('POST', '/activities', u, { raw: noFile });
  t.is(missing.status, 422);
  t.is((missing.body as { violations: { propertyPath: string }[] }).violations[0]?.propertyPath, 'file');
  t.is((await postRaw(null, await fixture('apps/latin1.gpx'), MEDIA.gpx)).status, 401);
  const notAcceptable = await api.call('POST', '/activities', u, {
    raw: await fixture('apps/latin1.gpx'),
    headers: { 'content-type': MEDIA.gpx, accept: 'application/gpx+xml' },
  });
  t.is(notAcceptable.status, 406);
  const plain = await api.call('POST', '/activities', u, {
    raw: await fixture('apps/latin1.gpx'),
    headers: { 'content-type': MEDIA.gpx, accept: 'application/json' },
  });
  t.is(plain.status, 201);
  t.is((plain.body as Body)['@id'], undefined);
  t.is((plain.body as Body).name, 'Sortie à vélo');
});

test('the v2.26 path /v2/file_import/activities takes files only', async (t) => {
  const u = await api.user();
  const res = await api.call('POST', '/file_import/activities', u, {
    raw: await fixture('apps/latin1.gpx'),
    headers: { 'content-type': MEDIA.gpx },
  });
  t.is(res.status, 201);
  t.is((res.body as Body)['@type'], 'Activity');
  const json = await api.call('POST', '/file_import/activities', u, { body: { name: 'x' } });
  t.is(json.status, 415);
});

test('413: over ACTIVITY_FILE_LIMIT (declared, streamed or in a part); a 1 GB Content-Length is refused unread; over 7 days is a 422', async (t) => {
  const u = await api.user();
  const limit = api.config.activityFileLimitBytes;
  const big = Buffer.alloc(limit + 1, 0x20);
  const declared = await postRaw(u, big, MEDIA.gpx);
  t.is(declared.status, 413);
  t.regex((declared.body as Body).detail as string, /ACTIVITY_FILE_LIMIT/);
  // Chunked, without a Content-Length: counted while read.
  const streamed = await api.fetch('/v2/activities', {
    method: 'POST',
    headers: { 'x-api-key': api.apiKey, authorization: `Bearer ${u.token}`, 'content-type': MEDIA.gpx },
    body: new ReadableStream({
      start(controller) {
        for (let i = 0; i < 17; i++) controller.enqueue(new Uint8Array(1024 * 1024).fill(0x20));
        controller.close();
      },
    }),
    duplex: 'half',
  } as RequestInit);
  t.is(streamed.status, 413);
  t.is((await postForm(u, big, 'big.gpx')).status, 413);

  // A claim of 1 GB with a few bytes sent: answered at once, the body never read.
  const answer = await new Promise<{ status: number; body: string }>((resolve, reject) => {
    const req = request(`${api.url}/v2/activities`, {
      method: 'POST',
      headers: {
        'x-api-key': api.apiKey,
        authorization: `Bearer ${u.token}`,
        'content-type': MEDIA.fit,
        'content-length': String(1024 * 1024 * 1024),
      },
    });
    req.on('response', (res) => {
      let body = '';
      res.on('data', (c) => {
        body += c;
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.write(Buffer.alloc(100));
  });
  t.is(answer.status, 413);
  t.is(JSON.parse(answer.body)['@type'], 'hydra:Error');

  const eightDays = Buffer.from(
    `<gpx version="1.1" creator="t" xmlns="http://www.topografix.com/GPX/1/1"><trk><trkseg><trkpt lat="45" lon="6"><time>2024-01-01T00:00:00Z</time></trkpt><trkpt lat="45.001" lon="6"><time>2024-01-09T00:00:00Z</time></trkpt></trkseg></trk></gpx>`,
  );
  const long = await postRaw(u, eightDays, MEDIA.gpx);
  t.is(long.status, 422);
  t.regex((long.body as Body).detail as string, /691200 s, more than the 604800 s/);
});

// Serial: no other import runs meanwhile, so the pool's counter moves by this one only.
test.serial('imports run in the pool, off the main thread', async (t) => {
  const u = await api.user();
  const pool = activityImportPool(api.api.context);
  const before = pool.stats().completed;
  t.is((await postRaw(u, await fixture('devices/fit/cottwich.fit'), MEDIA.fit)).status, 201);
  const stats = pool.stats();
  t.is(stats.completed, before + 1);
  t.true(isMainThread);
  t.true(stats.threadIds.length >= 1);
  t.false(stats.threadIds.includes(threadId), 'never the thread of the API');
  t.true(stats.threads <= api.config.IMPORT_THREADS);
});

test('the pool: a refusal comes back as the ImportError, a time limit ends the thread, a full queue refuses', async (t) => {
  const bytes = await fixture('devices/fit/davidfit.fit');
  const pool = new ActivityImportPool({ threads: 1, timeoutMs: 60_000, maxQueue: 0, maxMemoryMb: 512 });
  t.teardown(() => pool.close());
  const first = pool.import(new Uint8Array(bytes), {});
  // The only thread is taken and nothing may wait.
  await t.throwsAsync(pool.import(new Uint8Array(bytes), {}), { instanceOf: ImportPoolBusyError });
  const done = await first;
  t.not(done.threadId, threadId);
  t.is(done.imported.content.sportId, 401);
  t.is(done.imported.content.track.latitude.length, 4609);
  const refused = await t.throwsAsync(pool.import(Buffer.from('<html/>'), { contentType: 'text/html' }), {
    instanceOf: ImportError,
  });
  t.is(refused?.code, 'unsupported-format');
  t.like(pool.stats(), { completed: 1, refused: 1, busy: 0, queued: 0 });

  const slow = new ActivityImportPool({ threads: 1, timeoutMs: 1, maxQueue: 4, maxMemoryMb: 512 });
  t.teardown(() => slow.close());
  const timedOut = await t.throwsAsync(slow.import(new Uint8Array(bytes), {}), { instanceOf: ImportError });
  t.is(timedOut?.code, 'too-large');
  t.regex(timedOut?.message ?? '', /longer than the 0\.001 s/);
  t.is(slow.stats().timedOut, 1);
});

test('storageProblem: what the importers read but an activity cannot hold', (t) => {
  const content = {
    sportId: 121,
    name: null,
    startdate: new Date(),
    duration: 10,
    summaries: new Map(),
    datastream: { elapsed: Int32Array.of(0, 10), channels: new Map() },
    track: {
      elapsed: new Int32Array(0),
      latitude: new Float64Array(0),
      longitude: new Float64Array(0),
      elevation: new Float64Array(0),
    },
  };
  t.is(storageProblem(content), undefined);
  t.is(storageProblem({ ...content, duration: 7 * 24 * 3600 + 1 })?.code, 'over-limit');
  const cells = {
    elapsed: new Int32Array(100_000),
    channels: new Map(Array.from({ length: 40 }, (_, i) => [i + 1, new Float64Array(100_000)])),
  };
  t.regex(storageProblem({ ...content, datastream: cells })?.message ?? '', /100000 samples × 40 datatypes/);
  const samples = { elapsed: new Int32Array(1_000_000), channels: new Map() };
  t.regex(
    storageProblem({ ...content, datastream: samples })?.message ?? '',
    /has 1,000,000 samples; an activity holds at most 172,800/,
  );
});

test('a small ACTIVITY_FILE_LIMIT is a 413; with IMPORT_QUEUE=0, imports beyond the busy thread answer 503', async (t) => {
  const small = await startTrackingApi({
    env: { ACTIVITY_FILE_LIMIT: '100kb', IMPORT_THREADS: '1', IMPORT_QUEUE: '0' },
  });
  t.teardown(() => small.close());
  const u = await small.user();
  const post = (bytes: Uint8Array, type: string) =>
    small.call('POST', '/activities', u, { raw: bytes, headers: { 'content-type': type } });
  const over = await post(await fixture('devices/fit/davidfit.fit'), MEDIA.fit);
  t.is(over.status, 413);
  t.regex((over.body as Body).detail as string, /102400 bytes/);
  // Sent at once: the first takes the only thread (its start alone takes longer than the others' arrival).
  const bytes = await fixture('devices/fit/cottwich.fit');
  const answers = await Promise.all(Array.from({ length: 8 }, () => post(bytes, MEDIA.fit)));
  const statuses = answers.map((a) => a.status);
  t.true(statuses.includes(201), statuses.join());
  const busy = answers.find((a) => a.status === 503);
  t.truthy(busy, statuses.join());
  t.is(busy?.headers.get('retry-after'), '5');
  t.is((busy?.body as Body | undefined)?.['@type'], 'hydra:Error');
  t.is(statuses.filter((s) => s !== 201 && s !== 503).length, 0);
});
