import { execFile } from 'node:child_process';
import { mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import test from 'ava';
import { ConfigError, loadConfig } from '../shared/config.ts';
import { exportStoragePath, MAX_EXPORTS_PER_USER } from '../shared/tracking/exports/store.ts';
import { ensureTrackingUser } from '../shared/tracking/users/store.ts';
import { startWorkers } from '../workers/worker.ts';
import { startTrackingApi } from './helpers/tracking.ts';
import { type Body, exportCalls, me, unzip, waitFor } from './helpers/tracking-exports.ts';

const run = promisify(execFile);
const GPX_XSD = 'test/fixtures/tracking/schemas/gpx-1.1.xsd';

// PUBLIC_URL is the server's own URL, so the `url` an export answers can be fetched as is.
const api = await startTrackingApi({ publicUrl: true, env: { EXPORT_TTL_S: '3600' } });
const { db } = api.database;
const workers = await startWorkers({ ...api.config, WORKER_QUEUES: ['exports'], OUTBOX_POLL_MS: 50 });
test.after.always(async () => {
  await workers.close();
  await api.close();
  await rm(api.config.STORAGE_DIR, { recursive: true, force: true });
});

const { activityOf, exportWithoutJob, exportDone } = exportCalls(api);

async function download(url: string) {
  const res = await fetch(url);
  return { res, data: Buffer.from(await res.arrayBuffer()) };
}

/** xmllint against the official GPX 1.1 schema; rejects naming the line on an invalid file. */
async function validateGpx(t: { true: (v: boolean, m?: string) => void }, name: string, gpx: Buffer) {
  const dir = await mkdtemp(path.join(tmpdir(), 'export-gpx-'));
  try {
    const file = path.join(dir, 'a.gpx');
    await writeFile(file, gpx);
    const { stderr } = await run('xmllint', ['--noout', '--schema', GPX_XSD, file]);
    t.true(/validates/.test(stderr), `${name}: ${stderr}`);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

const violations = (body: { violations: { propertyPath: string }[] }) => body.violations.map((v) => v.propertyPath);

test('EXPORT_TTL_S: one day by default, 60 s to 30 days', (t) => {
  t.is(loadConfig({}).EXPORT_TTL_S, 86_400);
  t.is(loadConfig({ EXPORT_TTL_S: '60' }).EXPORT_TTL_S, 60);
  for (const bad of ['59', '2592001', 'daily', '1.5'])
    t.throws(() => loadConfig({ EXPORT_TTL_S: bad }), { instanceOf: ConfigError, message: /EXPORT_TTL_S/ });
});

test('an export end to end: requested, built by the worker, downloaded without credentials; a schema-valid GPX per activity and activities.json', async (t) => {
  const u = await api.user();
  const a = await activityOf(u, '2024-05-02T07:00:05+02:00', { track: true, name: 'Track & <field>' });
  const b = await activityOf(u, '2024-05-01T06:30:00+00:00');
  const c = await activityOf(u, '2024-05-03T18:00:00-03:00', { track: true });

  const res = await api.call('POST', '/exports', u);
  t.is(res.status, 201, JSON.stringify(res.body));
  t.regex(res.headers.get('content-type') ?? '', /^application\/ld\+json/);
  const e = res.body as Body & { id: string };
  t.regex(e.id, /^[0-9a-f]{32}$/);
  t.is(res.headers.get('location'), `${api.config.PUBLIC_URL}/v2/exports/${e.id}`);
  t.like(e, {
    '@context': '/v2/contexts/Export',
    '@id': `/v2/exports/${e.id}`,
    '@type': 'Export',
    user: me(u),
    format: 'gpx',
    status: 'pending',
    progress: 0,
    activityCount: null,
    size: null,
    url: null,
    error: null,
    startedAt: null,
    finishedAt: null,
    expiresAt: null,
  });

  const done = await waitFor(
    async () => (await api.call('GET', `/exports/${e.id}`, u)).body as Body,
    (x) => x.status === 'done',
  );
  t.like(done, { status: 'done', progress: 1, activityCount: 3, error: null });
  t.true((done.size as number) > 0);
  const finished = Date.parse(done.finishedAt as string);
  t.is(Date.parse(done.expiresAt as string) - finished, 3600 * 1000, 'expires EXPORT_TTL_S after it finished');
  t.true(Date.parse(done.startedAt as string) <= finished);
  const url = done.url as string;
  t.regex(url, new RegExp(`^${api.config.PUBLIC_URL}/v2/exports/${e.id}/download\\?token=[A-Za-z0-9_-]{43}$`));

  const { res: got, data } = await download(url);
  t.is(got.status, 200);
  t.is(got.headers.get('content-type'), 'application/zip');
  t.is(Number(got.headers.get('content-length')), done.size as number);
  t.is(data.length, done.size as number);
  t.regex(
    got.headers.get('content-disposition') ?? '',
    /^attachment; filename="activities-\d{4}-\d{2}-\d{2}-[0-9a-f]{8}\.zip"$/,
  );
  t.is(got.headers.get('cache-control'), 'private, no-store');

  const entries = await unzip(data);
  // Oldest start first, named by the start in UTC and the id; activities.json last.
  t.deepEqual(
    [...entries.keys()],
    [
      `gpx/2024-05-01_063000_${b.id}.gpx`,
      `gpx/2024-05-02_050005_${a.id}.gpx`,
      `gpx/2024-05-03_210000_${c.id}.gpx`,
      'activities.json',
    ],
  );
  for (const [name, content] of entries) if (name.endsWith('.gpx')) await validateGpx(t, name, content);
  const gpxA = entries.get(`gpx/2024-05-02_050005_${a.id}.gpx`)?.toString() ?? '';
  t.is((gpxA.match(/<trkpt /g) ?? []).length, 5);
  t.regex(gpxA, /<name>Track &amp; &lt;field&gt;<\/name>/);
  t.regex(gpxA, /<gpxtpx:hr>124<\/gpxtpx:hr>/);

  // activities.json: each activity as the API answers it in plain JSON, without its streams.
  const summaries = JSON.parse(entries.get('activities.json')?.toString() ?? '') as Body[];
  const expected = [];
  for (const activity of [b, a, c]) {
    const one = await api.call('GET', `/activities/${activity.id}`, u, { headers: { accept: 'application/json' } });
    const { datastream: _d, locations: _l, ...fields } = one.body as Body;
    expected.push(fields);
  }
  t.deepEqual(summaries, expected);

  // The list shows it; the BullMQ job's progress ended at every activity handled.
  const list = await api.call('GET', '/exports', u);
  t.is(list.status, 200);
  t.deepEqual(
    (list.body['hydra:member'] as Body[]).map((x) => x.id),
    [e.id],
  );
  t.is(list.body['hydra:totalItems'], 1);
});

test('a user without activities gets a valid zip holding an empty activities.json array', async (t) => {
  const u = await api.user();
  const done = await exportDone(u);
  t.like(done, { status: 'done', progress: 1, activityCount: 0 });
  const { res, data } = await download(done.url as string);
  t.is(res.status, 200);
  const entries = await unzip(data);
  t.deepEqual([...entries.keys()], ['activities.json']);
  t.deepEqual(JSON.parse(entries.get('activities.json')?.toString() ?? ''), []);
});

test("another user's export answers 404 everywhere; the link needs its exact token; no credentials is a 401", async (t) => {
  const owner = await api.user();
  const other = await api.user();
  await activityOf(owner, '2024-06-01T08:00:00+00:00');
  const done = await exportDone(owner);
  const id = done.id as string;

  for (const [method, p] of [
    ['GET', `/exports/${id}`],
    ['DELETE', `/exports/${id}`],
  ] as const) {
    const res = await api.call(method, p, other);
    t.is(res.status, 404, `${method} ${p}`);
    t.is(res.body['@type'], 'hydra:Error');
  }
  t.deepEqual((await api.call('GET', '/exports', other)).body['hydra:member'], []);
  t.is((await api.call('POST', `/users/${owner.ldid}/export_personal_data`, other)).status, 404);
  for (const p of ['/exports', `/exports/${id}`]) t.is((await api.call('GET', p, null)).status, 401);
  t.is((await api.call('POST', '/exports', null)).status, 401);
  t.is((await api.call('GET', '/exports/not-an-id', owner)).status, 404);

  const url = new URL(done.url as string);
  const token = url.searchParams.get('token') as string;
  const at = (q: string) => fetch(`${api.config.PUBLIC_URL}/v2/exports/${id}/download${q}`);
  const wrong = `${token.slice(0, -1)}${token.endsWith('A') ? 'B' : 'A'}`;
  for (const q of [`?token=${wrong}`, `?token=${token}x`, '?token=short']) {
    const res = await at(q);
    t.is(res.status, 404, q);
    t.is(((await res.json()) as Body)['@type'], 'hydra:Error');
  }
  const missing = await at('');
  t.is(missing.status, 422);
  t.deepEqual(violations((await missing.json()) as never), ['token']);
  // Another export's id with this token: the token belongs to one export only.
  const second = await exportDone(other);
  t.is((await fetch(`${api.config.PUBLIC_URL}/v2/exports/${second.id}/download?token=${token}`)).status, 404);
  t.is((await at(`?token=${token}`)).status, 200);
});

test('one export at a time, at most MAX_EXPORTS_PER_USER held (409); DELETE removes the row and the file', async (t) => {
  const u = await api.user();
  await ensureTrackingUser(db, { accountId: u.id, ldid: u.ldid, claims: {} });
  // A pending export (written directly: the worker would finish it too quickly to be seen).
  const pending = await exportWithoutJob(u);
  const busy = await api.call('POST', '/exports', u);
  t.is(busy.status, 409);
  t.regex(busy.body.detail as string, new RegExp(`already in progress: /v2/exports/${pending.id}`));
  await db.deleteFrom('tracking_exports').where('id', '=', pending.id).execute();

  const ids: string[] = [];
  for (let i = 0; i < MAX_EXPORTS_PER_USER; i++) ids.push((await exportDone(u)).id as string);
  const full = await api.call('POST', '/exports', u);
  t.is(full.status, 409);
  t.regex(full.body.detail as string, /delete one/);

  const first = ids[0] as string;
  const file = path.join(api.config.STORAGE_DIR, exportStoragePath(first));
  t.true((await stat(file)).isFile());
  const { url } = (await api.call('GET', `/exports/${first}`, u)).body as { url: string };
  t.is((await api.call('DELETE', `/exports/${first}`, u)).status, 204);
  await t.throwsAsync(() => stat(file), { code: 'ENOENT' });
  t.is((await api.call('GET', `/exports/${first}`, u)).status, 404);
  t.is((await fetch(url)).status, 404);
  t.is((await api.call('POST', '/exports', u)).status, 201, 'room for one more');
});

test('the request body is optional; format gpx is the only one; unknown members are refused', async (t) => {
  const u = await api.user();
  const bad = await api.call('POST', '/exports', u, { body: { format: 'tcx', activities: [] } });
  t.is(bad.status, 422);
  t.deepEqual(violations(bad.body as never).sort(), ['activities', 'format']);
  const ok = await api.call('POST', '/exports', u, { body: { format: 'gpx', status: 'done', '@type': 'Export' } });
  t.is(ok.status, 201, JSON.stringify(ok.body));
  t.like(ok.body, { format: 'gpx', status: 'pending' });
});

test('the v2.26 path POST /v2/users/{id}/export_personal_data starts an export of the caller', async (t) => {
  const u = await api.user();
  await activityOf(u, '2024-07-01T08:00:00+00:00');
  const res = await api.call('POST', `/users/${u.ldid}/export_personal_data`, u);
  t.is(res.status, 201, JSON.stringify(res.body));
  t.like(res.body, { '@type': 'Export', '@context': '/v2/contexts/Export', status: 'pending', user: me(u) });
  t.is(res.headers.get('location'), `${api.config.PUBLIC_URL}/v2/exports/${res.body.id}`);
  const done = await waitFor(
    async () => (await api.call('GET', `/exports/${res.body.id}`, u)).body as Body,
    (x) => x.status === 'done',
  );
  t.is(done.activityCount, 1);
});

test('paging of the list: newest first, limit at most 100', async (t) => {
  const u = await api.user();
  const a = await exportDone(u);
  const b = await exportDone(u);
  const page1 = await api.call('GET', '/exports?limit=1', u);
  t.deepEqual(
    (page1.body['hydra:member'] as Body[]).map((x) => x.id),
    [b.id],
  );
  t.is(page1.body['hydra:totalItems'], 2);
  const page2 = await api.call('GET', '/exports?limit=1&page=2', u);
  t.deepEqual(
    (page2.body['hydra:member'] as Body[]).map((x) => x.id),
    [a.id],
  );
  const bad = await api.call('GET', '/exports?limit=101', u);
  t.is(bad.status, 422);
  t.deepEqual(violations(bad.body as never), ['limit']);
});

test('two requests at the same moment start one export; the other is a 409', async (t) => {
  const u = await api.user();
  await api.call('GET', '/me/', u); // the tracking user exists before the race
  const answers = await Promise.all([1, 2, 3].map(() => api.call('POST', '/exports', u)));
  t.deepEqual(answers.map((a) => a.status).sort(), [201, 409, 409]);
  const rows = await db.selectFrom('tracking_exports').select('id').where('user_id', '=', u.ldid).execute();
  t.is(rows.length, 1);
});
