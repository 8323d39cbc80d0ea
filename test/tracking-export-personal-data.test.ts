import { createHash } from 'node:crypto';
import { readdir, readFile, rm } from 'node:fs/promises';
import path from 'node:path';
import test from 'ava';
import { startWorkers } from '../workers/worker.ts';
import { png, populateUser } from './helpers/account-data.ts';
import { startTrackingApi, type TrackingTestUser } from './helpers/tracking.ts';
import { type Body, unzip, waitFor } from './helpers/tracking-exports.ts';

// PUBLIC_URL is the server's own URL, so the `url` an export answers can be fetched as is.
const api = await startTrackingApi({ publicUrl: true });
const { db } = api.database;
const storageDir = api.config.STORAGE_DIR;
const workers = await startWorkers({
  ...api.config,
  WORKER_QUEUES: ['records', 'thumbnails', 'exports'],
  OUTBOX_POLL_MS: 50,
});
test.after.always(async () => {
  await workers.close();
  await api.close();
  await rm(storageDir, { recursive: true, force: true });
});

/** Asks for the personal data export of `u`, waits until it is built, and reads its zip. */
async function personalData(u: TrackingTestUser) {
  const res = await api.call('POST', `/users/${u.ldid}/export_personal_data`, u);
  if (res.status !== 201) throw new Error(`export_personal_data answered ${res.status}: ${JSON.stringify(res.body)}`);
  const done = await waitFor(
    async () => (await api.call('GET', `/exports/${res.body.id}`, u)).body as Body,
    (e) => e.status === 'done' || e.status === 'failed',
  );
  if (done.status !== 'done') throw new Error(`export failed: ${JSON.stringify(done)}`);
  const got = await fetch(done.url as string);
  const data = Buffer.from(await got.arrayBuffer());
  return { done, entries: await unzip(data), size: data.length };
}

const json = (b: Buffer | undefined) => JSON.parse(b?.toString() ?? 'null');
const plain = { headers: { accept: 'application/json' } };
const sha256 = (b: Buffer) => createHash('sha256').update(b).digest('hex');

test('the personal data export holds every part of the user, and its manifest lists every file with its size and SHA-256', async (t) => {
  const u = await api.user(['user'], { first_name: 'Ada', last_name: 'Lovelace' });
  const other = await api.user();
  const [d, od] = await Promise.all([populateUser(api, u), populateUser(api, other)]);

  const { done, entries, size } = await personalData(u);
  t.like(done, { status: 'done', activityCount: 2, size });
  const names = [...entries.keys()];

  // Activities oldest start first, each as GPX, JSON and its drawn thumbnails; photos; manifest last.
  const [late, early] = d.activityIds as [string, string];
  const thumbs = async (id: string) =>
    (await readdir(path.join(storageDir, 'tracking/thumbnails', id))).sort().map((f) => `photos/thumbnails/${id}/${f}`);
  t.deepEqual(names, [
    'profile.json',
    `gpx/2024-05-01_063000_${early}.gpx`,
    `activities/2024-05-01_063000_${early}.json`,
    ...(await thumbs(early)),
    `gpx/2024-05-02_050005_${late}.gpx`,
    `activities/2024-05-02_050005_${late}.json`,
    ...(await thumbs(late)),
    'measures.json',
    'records.json',
    'devices.json',
    'shares.json',
    'share_users.json',
    'equipments.json',
    'measure_goals.json',
    'challenges.json',
    `photos/${d.uploadPath.replace(/^tracking\//, '')}`,
    'manifest.json',
  ]);
  for (const id of od.activityIds)
    t.false(
      names.some((n) => n.includes(id)),
      "no file of the other user's",
    );

  // The manifest: every other file, in order, with the size and digest of what the zip holds.
  const manifest = json(entries.get('manifest.json'));
  t.like(manifest, { format: 'personal-data', version: 1, user: u.ldid, export: done.id, missing: [] });
  t.deepEqual(
    manifest.files,
    names
      .filter((n) => n !== 'manifest.json')
      .map((n) => {
        const bytes = entries.get(n) as Buffer;
        return { path: n, bytes: bytes.length, sha256: sha256(bytes) };
      }),
  );

  // profile.json: the User as the API shows it, the account, the applications allowed.
  const profile = json(entries.get('profile.json'));
  t.deepEqual(profile.user, (await api.call('GET', '/me', u, plain)).body);
  t.like(profile.account, { id: u.id, email: u.email, firstName: 'Ada', lastName: 'Lovelace', roles: ['user'] });
  t.false('password_hash' in profile.account || 'passwordHash' in profile.account);
  t.deepEqual(
    profile.applications.map((a: Body) => a.clientId),
    [d.thirdPartyClient],
  );

  // Each activity as GET /v2/activities/{id} answers it (streams included) and as its GPX export.
  for (const [id, base] of [
    [early, `2024-05-01_063000_${early}`],
    [late, `2024-05-02_050005_${late}`],
  ]) {
    t.deepEqual(
      json(entries.get(`activities/${base}.json`)),
      (await api.call('GET', `/activities/${id}`, u, plain)).body,
    );
    const gpx = (await api.call('GET', `/activities/${id}.gpx`, u)).body as string;
    t.is(entries.get(`gpx/${base}.gpx`)?.toString(), gpx);
    t.is((gpx.match(/<trkpt /g) ?? []).length, 5);
  }
  t.deepEqual(json(entries.get(`activities/2024-05-02_050005_${late}.json`)).images, [d.uploadUrl]);

  // The lists, as the API answers them in plain JSON.
  for (const [file, route] of [
    ['measures.json', '/user_measures'],
    ['records.json', '/user_records'],
    ['devices.json', '/user_devices'],
    ['equipments.json', '/user_equipments'],
    ['measure_goals.json', '/user_measure_goals'],
    ['challenges.json', '/user_challenges'],
  ] as const) {
    const listed = (await api.call('GET', route, u, plain)).body as Body[];
    t.true(listed.length > 0, route);
    const inZip = json(entries.get(file)) as Body[];
    const byId = (rows: Body[]) => [...rows].sort((a, b) => String(a.id).localeCompare(String(b.id)));
    t.deepEqual(byId(inZip), byId(listed), file);
  }
  t.deepEqual(json(entries.get('shares.json')), [
    {
      id: d.shareToken,
      user: `/v2/users/${u.ldid}`,
      url: `${api.config.PUBLIC_URL}/v2/share_activities/${d.shareToken}/page`,
      activity: `/v2/activities/${late}`,
      createdAt: (json(entries.get('shares.json'))[0] as Body).createdAt,
      updatedAt: (json(entries.get('shares.json'))[0] as Body).createdAt,
    },
  ]);
  const listedShare = ((await api.call('GET', '/share_activities', u, plain)).body as Body[])[0] as Body;
  t.like(json(entries.get('shares.json'))[0], {
    id: listedShare.id,
    url: listedShare.url,
    createdAt: listedShare.createdAt,
  });

  // The photos, byte for byte as stored and served.
  const photo = entries.get(`photos/${d.uploadPath.replace(/^tracking\//, '')}`) as Buffer;
  t.deepEqual(photo, Buffer.from(await (await api.fetch(new URL(d.uploadUrl).pathname)).arrayBuffer()));
  for (const name of names.filter((n) => n.startsWith('photos/thumbnails/')))
    t.deepEqual(entries.get(name), await readFile(path.join(storageDir, 'tracking', name.slice('photos/'.length))));

  // The activities export (POST /v2/exports) is still the activities alone.
  t.is(
    (await db.selectFrom('tracking_exports').select('kind').where('id', '=', d.exportId).executeTakeFirst())?.kind,
    'activities',
  );
});

test('a user with nothing gets a profile, empty lists and a manifest; a photo the storage lost is listed as missing', async (t) => {
  const empty = await api.user();
  const { entries } = await personalData(empty);
  t.deepEqual(
    [...entries.keys()],
    [
      'profile.json',
      'measures.json',
      'records.json',
      'devices.json',
      'shares.json',
      'share_users.json',
      'equipments.json',
      'measure_goals.json',
      'challenges.json',
      'manifest.json',
    ],
  );
  for (const file of [
    'measures.json',
    'records.json',
    'devices.json',
    'shares.json',
    'share_users.json',
    'equipments.json',
    'measure_goals.json',
    'challenges.json',
  ])
    t.deepEqual(json(entries.get(file)), [], file);
  t.is(json(entries.get('manifest.json')).files.length, 9);

  const u = await api.user();
  const form = new FormData();
  form.append('file', new Blob([await png()], { type: 'image/png' }), 'a.png');
  const url = (await api.call('POST', '/upload', u, { raw: form })).body.url as string;
  const stored = `tracking/${new URL(url).pathname.replace(/^\/v2\/media\//, '')}`;
  await rm(path.join(storageDir, stored));
  const lost = await personalData(u);
  const manifest = json(lost.entries.get('manifest.json'));
  t.deepEqual(manifest.missing, [
    { path: `photos/${stored.replace(/^tracking\//, '')}`, reason: 'not in the storage' },
  ]);
  t.false([...lost.entries.keys()].some((n) => n.startsWith('photos/')));
});

test("another user's id is a 404; the request needs credentials", async (t) => {
  const u = await api.user();
  const other = await api.user();
  await api.call('GET', '/me', other);
  const res = await api.call('POST', `/users/${other.ldid}/export_personal_data`, u);
  t.is(res.status, 404);
  t.is(res.body['@type'], 'hydra:Error');
  t.is((await api.call('POST', `/users/${u.ldid}/export_personal_data`, null)).status, 401);
  const bad = await api.call('POST', `/users/${u.ldid}/export_personal_data`, u, { body: { format: 'fit' } });
  t.is(bad.status, 422);
  t.is(bad.body['@type'], 'ConstraintViolationList');
});
