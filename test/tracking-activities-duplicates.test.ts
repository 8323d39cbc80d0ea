import { createHash } from 'node:crypto';
import test, { type ExecutionContext } from 'ava';
import { sql } from 'kysely';
import * as m0057 from '../shared/db/migrations/0057_activity_duplicates.ts';
import { DATATYPE, emptyDatastream, emptyTrack } from '../shared/tracking/activities/data.ts';
import {
  DuplicateActivityError,
  duplicatesOf,
  fileSha256,
  findDuplicate,
} from '../shared/tracking/activities/duplicates.ts';
import { sameFamilySports } from '../shared/tracking/activities/sport-family.ts';
import { type ActivityInput, createActivity } from '../shared/tracking/activities/store.ts';
import { ensureTrackingUser } from '../shared/tracking/users/store.ts';
import { activityFileUploads, MEDIA } from './helpers/activity-file-uploads.ts';
import { fixture } from './helpers/activity-files.ts';
import { startTrackingApi, type TrackingTestUser } from './helpers/tracking.ts';
import { activity, activityCalls, type Body, violations } from './helpers/tracking-activities.ts';

const api = await startTrackingApi();
test.after.always(() => api.close());
const { db } = api.database;
const { post, list } = activityCalls(api);
const { postRaw, postForm } = activityFileUploads(api);

const GPX = 'devices/gpx/korita-zbevnica.gpx';
const FIT = 'devices/fit/3x250m.fit';

const postKeep = (u: TrackingTestUser, body: unknown) => api.call('POST', '/activities?duplicates=keep', u, { body });
const count = async (u: TrackingTestUser) => (await list(u)).body['hydra:totalItems'] as number;
const iriOf = (id: string) => `/v2/activities/${id}`;

/** A 409 in the Hydra format naming the stored activity `id` in its description and Location. */
function assertDuplicateOf(t: ExecutionContext, res: { status: number; body: Body; headers: Headers }, id: string) {
  t.is(res.status, 409, JSON.stringify(res.body));
  t.is(res.body['@type'], 'hydra:Error');
  t.is(res.body.status, 409);
  t.true(String(res.body['hydra:description']).includes(iriOf(id)), String(res.body['hydra:description']));
  t.true(String(res.body['hydra:description']).includes('duplicates=keep'));
  t.is(res.headers.get('location'), `${api.config.PUBLIC_URL}${iriOf(id)}`);
  t.regex(res.headers.get('content-type') ?? '', /^application\/ld\+json/);
}

/** The start and duration a file gives its activity, read from an import by a user of its own. */
async function startAndDurationOf(name: string): Promise<{ startdate: string; duration: number }> {
  const scratch = await api.user();
  const res = await postRaw(scratch, await fixture(name), 'application/octet-stream');
  if (res.status !== 201) throw new Error(`import of ${name}: ${res.status} ${JSON.stringify(res.body)}`);
  return { startdate: res.body.startdate, duration: res.body.duration };
}

test('the same JSON activity twice: 201, then 409 naming the first in hydra:description and Location; nothing more stored', async (t) => {
  const u = await api.user();
  const first = await post(u, activity(u));
  t.is(first.status, 201, JSON.stringify(first.body));
  const again = await post(u, activity(u, { name: 'Another name', dataSummaries: { '5': 99 } }));
  assertDuplicateOf(t, again, first.body.id);
  t.is(await count(u), 1);
  // No outbox job either: the refused statement wrote nothing.
  const jobs = await db
    .selectFrom('outbox')
    .select('id')
    .where(sql<string>`payload->>'userId'`, '=', u.ldid)
    .where('queue', '=', 'records')
    .execute();
  t.is(jobs.length, 1);
});

test('the rule: same start to the second (whatever the offset or the fraction) and same duration; another second or duration is no duplicate', async (t) => {
  const u = await api.user();
  const first = await post(u, activity(u, { startdate: '2024-05-01T08:30:00.250+02:00', duration: 600 }));
  t.is(first.status, 201, JSON.stringify(first.body));
  for (const startdate of ['2024-05-01T06:30:00Z', '2024-05-01T08:30:00.999+02:00', '2024-05-01T07:30:00+01:00'])
    assertDuplicateOf(t, await post(u, activity(u, { startdate, duration: 600 })), first.body.id);
  const cases: [string, number][] = [
    ['2024-05-01T08:30:01+02:00', 600],
    ['2024-05-01T08:29:59.999+02:00', 600],
    ['2024-05-01T08:30:00+02:00', 601],
    ['2024-05-01T08:30:00+02:00', 0],
  ];
  for (const [startdate, duration] of cases) {
    const res = await post(u, activity(u, { startdate, duration }));
    t.is(res.status, 201, `${startdate} ${duration}: ${JSON.stringify(res.body)}`);
  }
  t.is(await count(u), 5);
});

test('the same file twice is a 409, however it is sent (raw, multipart, /file_import/activities) and whatever its fields', async (t) => {
  const u = await api.user();
  const bytes = await fixture(GPX);
  const first = await postRaw(u, bytes, MEDIA.gpx, '?sport=168');
  t.is(first.status, 201, JSON.stringify(first.body));
  assertDuplicateOf(t, await postRaw(u, bytes, MEDIA.gpx, '?sport=168&name=Again'), first.body.id);
  assertDuplicateOf(t, await postForm(u, bytes, 'again.gpx', { comment: 'once more' }), first.body.id);
  const twin = await api.call('POST', '/file_import/activities', u, {
    raw: bytes,
    headers: { 'content-type': 'application/octet-stream' },
  });
  assertDuplicateOf(t, twin, first.body.id);
  const fit = await fixture(FIT);
  const fitFirst = await postRaw(u, fit, MEDIA.fit);
  t.is(fitFirst.status, 201, JSON.stringify(fitFirst.body));
  assertDuplicateOf(t, await postRaw(u, fit, MEDIA.fit), fitFirst.body.id);
  t.is(await count(u), 2);
  const stored = await db
    .selectFrom('activities')
    .select(['id', 'file_sha256'])
    .where('user_id', '=', u.ldid)
    .orderBy('created_at')
    .execute();
  t.deepEqual(
    stored.map((r) => r.file_sha256?.toString('hex')),
    [Buffer.from(await fileSha256(bytes)).toString('hex'), Buffer.from(await fileSha256(fit)).toString('hex')],
  );
});

test('a file with the start and duration of a stored JSON activity is a 409 naming it, and a JSON like a stored file too', async (t) => {
  const { startdate, duration } = await startAndDurationOf(GPX);
  const u = await api.user();
  const json = await post(u, activity(u, { startdate, duration }));
  t.is(json.status, 201, JSON.stringify(json.body));
  assertDuplicateOf(t, await postRaw(u, await fixture(GPX), MEDIA.gpx), json.body.id);

  const v = await api.user();
  const file = await postRaw(v, await fixture(GPX), MEDIA.gpx);
  t.is(file.status, 201, JSON.stringify(file.body));
  assertDuplicateOf(t, await post(v, activity(v, { startdate, duration })), file.body.id);
});

test('duplicates=keep stores both, for JSON and files; without it, the next one is refused naming the oldest', async (t) => {
  const u = await api.user();
  const a = await postKeep(u, activity(u));
  const b = await postKeep(u, activity(u));
  t.is(a.status, 201, JSON.stringify(a.body));
  t.is(b.status, 201, JSON.stringify(b.body));
  assertDuplicateOf(t, await post(u, activity(u)), a.body.id);

  const bytes = await fixture(GPX);
  const f1 = await postRaw(u, bytes, MEDIA.gpx, '?duplicates=keep');
  t.is(f1.status, 201, JSON.stringify(f1.body));
  assertDuplicateOf(t, await postForm(u, bytes, 'again.gpx'), f1.body.id);
  const f2 = await api.call('POST', '/file_import/activities?duplicates=keep', u, {
    raw: bytes,
    headers: { 'content-type': MEDIA.gpx },
  });
  t.is(f2.status, 201, JSON.stringify(f2.body));
  t.is(await count(u), 4);

  // A kept duplicate is compared too: once the first is deleted, the kept one is the stored one.
  t.is((await api.call('DELETE', `/activities/${a.body.id}`, u)).status, 204);
  assertDuplicateOf(t, await post(u, activity(u)), b.body.id);
});

test('another user may store the same activity and the same file (duplicates are per user); a deleted activity frees its slot', async (t) => {
  const u = await api.user();
  const v = await api.user();
  const bytes = await fixture(GPX);
  for (const who of [u, v]) {
    t.is((await post(who, activity(who))).status, 201);
    t.is((await postRaw(who, bytes, MEDIA.gpx)).status, 201);
  }
  const stored = await post(u, activity(u, { startdate: '2023-01-01T10:00:00Z' }));
  t.is((await api.call('DELETE', `/activities/${stored.body.id}`, u)).status, 204);
  t.is((await post(u, activity(u, { startdate: '2023-01-01T10:00:00Z' }))).status, 201);
});

test('identical creates sent at once: exactly one 201, every other a 409 naming it (JSON and files)', async (t) => {
  const u = await api.user();
  const body = activity(u, { startdate: '2022-02-02T02:02:02Z', duration: 1234 });
  const answers = await Promise.all(Array.from({ length: 8 }, () => post(u, body)));
  const created = answers.filter((r) => r.status === 201);
  t.is(created.length, 1, JSON.stringify(answers.map((r) => r.status)));
  for (const r of answers.filter((a) => a.status !== 201)) assertDuplicateOf(t, r, created[0]?.body.id);

  const bytes = await fixture(FIT);
  const files = await Promise.all(Array.from({ length: 4 }, () => postRaw(u, bytes, MEDIA.fit)));
  const imported = files.filter((r) => r.status === 201);
  t.is(imported.length, 1, JSON.stringify(files.map((r) => [r.status, r.body])));
  for (const r of files.filter((a) => a.status !== 201)) assertDuplicateOf(t, r, imported[0]?.body.id);
  t.is(await count(u), 2);
});

test('a PUT cannot make a duplicate (start and duration are fixed); a bad duplicates value is a 422 naming it', async (t) => {
  const u = await api.user();
  const a = await post(u, activity(u));
  const b = await post(u, activity(u, { startdate: '2024-05-02T08:30:00+02:00' }));
  const put = await api.call('PUT', `/activities/${b.body.id}`, u, {
    body: { startdate: a.body.startdate, duration: a.body.duration, name: 'moved?' },
  });
  t.is(put.status, 200, JSON.stringify(put.body));
  t.is(put.body.startdate, b.body.startdate);
  for (const query of ['?duplicates=maybe', '?duplicates=KEEP', '?duplicates='])
    for (const res of [
      await api.call('POST', `/activities${query}`, u, { body: activity(u) }),
      await postRaw(u, await fixture(GPX), MEDIA.gpx, query),
    ]) {
      t.is(res.status, 422, `${query}: ${JSON.stringify(res.body)}`);
      t.deepEqual(violations(res.body), ['duplicates']);
    }
  // A file import field in the query beside JSON is still refused, duplicates=keep is not one.
  const misplaced = await api.call('POST', '/activities?duplicates=keep&sport=121', u, { body: activity(u) });
  t.is(misplaced.status, 422);
  t.deepEqual(violations(misplaced.body), ['sport']);
});

// ------------------------------------------------------------------ without HTTP

/** An activity without streams, as the store takes it. */
function storeInput(userId: string, fields: Partial<ActivityInput> = {}): ActivityInput {
  return {
    userId,
    userDeviceId: null,
    connectorId: null,
    comment: null,
    userSession: null,
    images: [],
    tags: null,
    location: null,
    content: {
      sportId: 121,
      name: null,
      startdate: new Date('2021-03-04T05:06:07.800Z'),
      duration: 60,
      summaries: new Map([[DATATYPE.DURATION, 60]]),
      datastream: emptyDatastream(),
      track: emptyTrack(),
    },
    ...fields,
  };
}

test('createActivity throws DuplicateActivityError (a conflict) with the stored id and the rule; keep stores it', async (t) => {
  const u = await api.user();
  await ensureTrackingUser(db, { accountId: u.id, ldid: u.ldid, claims: {} });
  const digest = await fileSha256(Buffer.from('a file'));
  const first = await createActivity(db, u.ldid, storeInput(u.ldid, { fileSha256: digest }));
  const byStart = await t.throwsAsync(createActivity(db, u.ldid, storeInput(u.ldid)), {
    instanceOf: DuplicateActivityError,
  });
  t.like(byStart, { kind: 'conflict', existingId: first.id, rule: 'start-duration' });
  const other = storeInput(u.ldid, { fileSha256: digest });
  other.content = { ...other.content, startdate: new Date('2021-01-01T00:00:00Z') };
  const byFile = await t.throwsAsync(createActivity(db, u.ldid, other), { instanceOf: DuplicateActivityError });
  t.like(byFile, { existingId: first.id, rule: 'file' });
  const kept = await createActivity(db, u.ldid, { ...other, duplicates: 'keep' });
  t.is(kept.kept_duplicate, true);
  t.is(first.kept_duplicate, false);
  t.deepEqual(
    await findDuplicate(db, u.ldid, { ...other.content, fileSha256: digest, sportIds: null, trackBox: null }),
    {
      id: first.id,
      rule: 'file',
    },
  );
});

test('the duplicate lookups are index scans of the unique indexes of migration 0057', async (t) => {
  const u = await api.user();
  await ensureTrackingUser(db, { accountId: u.id, ldid: u.ldid, claims: {} });
  const rows = Array.from({ length: 3000 }, (_, i) => ({
    user_id: u.ldid,
    sport_id: 121,
    startdate: new Date(Date.UTC(2010, 0, 1) + i * 3_600_000),
    duration: 600,
    manual: true,
    data_summaries: '{}',
    location: 'null',
    file_sha256: createHash('sha256').update(String(i)).digest(),
  }));
  for (let i = 0; i < rows.length; i += 1000)
    await db
      .insertInto('activities')
      .values(rows.slice(i, i + 1000))
      .execute();
  await sql`analyze activities`.execute(db);
  const probe = {
    startdate: new Date(Date.UTC(2010, 0, 2)),
    duration: 600,
    fileSha256: new Uint8Array(32),
    sportIds: sameFamilySports(121),
    trackBox: [3, 50, 3.1, 50.1] as [number, number, number, number],
  };
  const { rows: plan } = await sql<{ 'QUERY PLAN': string }>`explain ${duplicatesOf(u.ldid, probe)}`.execute(db);
  const text = plan.map((r) => r['QUERY PLAN']).join('\n');
  t.regex(text, /Index (Only )?Scan using activities_user_start_duration_key/, text);
  t.regex(text, /Index (Only )?Scan using activities_user_startdate_idx/, text);
  t.regex(text, /Index (Only )?Scan using activities_user_file_sha256_key/, text);
  t.notRegex(text, /Seq Scan/, text);
});

test.serial(
  'migration 0057 keeps the duplicates stored before it: all but the first created of each group are marked kept',
  async (t) => {
    const u = await api.user();
    await ensureTrackingUser(db, { accountId: u.id, ldid: u.ldid, claims: {} });
    // Built in a transaction that is rolled back: the other tests of the file never see the schema without 0057.
    const marked = await db
      .transaction()
      .execute(async (trx) => {
        await m0057.down(trx as never);
        const row = (startdate: string, duration: number, created: string) =>
          sql`insert into activities (user_id, sport_id, startdate, duration, manual, data_summaries, location, created_at)
            values (${u.ldid}, 121, ${startdate}::timestamptz, ${duration}, true, '{}', 'null', ${created}::timestamptz)
            returning id`.execute(trx);
        const ids = [];
        for (const [start, duration, created] of [
          ['2020-01-01T10:00:00.100Z', 60, '2024-01-01T00:00:02Z'],
          ['2020-01-01T10:00:00.900Z', 60, '2024-01-01T00:00:01Z'],
          ['2020-01-01T12:00:00+02:00', 60, '2024-01-01T00:00:03Z'],
          ['2020-01-01T10:00:00Z', 61, '2024-01-01T00:00:04Z'],
        ] as const)
          ids.push(((await row(start, duration, created)).rows[0] as { id: string }).id);
        await m0057.up(trx as never);
        const kept = await trx
          .selectFrom('activities')
          .select(['id', 'kept_duplicate'])
          .where('user_id', '=', u.ldid)
          .execute();
        const byId = new Map(kept.map((r) => [r.id, r.kept_duplicate]));
        const result = ids.map((id) => byId.get(id));
        throw Object.assign(new Error('rollback'), { result });
      })
      .catch((e: { result?: unknown }) => e.result);
    // The second row was created first: it stays the one; the first and third (same second, same duration) are kept.
    t.deepEqual(marked, [true, false, true, false]);
  },
);

test('one session from two devices (the FIT and the TCX of 3x250m: 1 s apart on start and duration) is a 409 naming the first; duplicates=keep stores it', async (t) => {
  const u = await api.user();
  const fit = await postRaw(u, await fixture(FIT), MEDIA.fit);
  t.is(fit.status, 201, JSON.stringify(fit.body));
  const tcxBytes = await fixture('devices/tcx/3x250m.tcx');
  const tcx = await postRaw(u, tcxBytes, MEDIA.tcx);
  // The two files disagree by a second on both, and name the sport differently (rowing, Other).
  const read = async (id: string) => (await api.call('GET', `/activities/${id}`, u)).body;
  t.not((await read(fit.body.id)).startdate, (await startAndDurationOf('devices/tcx/3x250m.tcx')).startdate);
  assertDuplicateOf(t, tcx, fit.body.id);
  t.regex(String(tcx.body['hydra:description']), /within 2 s/);
  t.is(await count(u), 1);
  const kept = await postRaw(u, tcxBytes, MEDIA.tcx, '?duplicates=keep');
  t.is(kept.status, 201, JSON.stringify(kept.body));
  t.is(await count(u), 2);
});

test('the near rule: files only, within 2 s on start and duration, same sport family, tracks that meet when both have one', async (t) => {
  const u = await api.user();
  await ensureTrackingUser(db, { accountId: u.id, ldid: u.ldid, claims: {} });
  let file = 0;
  const sha = () => createHash('sha256').update(`near-${file++}`).digest();
  const at = (lon: number, lat: number) => ({
    elapsed: Int32Array.from([0, 60]),
    latitude: Float64Array.from([lat, lat + 0.001]),
    longitude: Float64Array.from([lon, lon + 0.001]),
    elevation: Float64Array.from([Number.NaN, Number.NaN]),
  });
  const imported = (content: Partial<ActivityInput['content']>, fields: Partial<ActivityInput> = {}) => {
    const input = storeInput(u.ldid, { fileSha256: new Uint8Array(sha()), ...fields });
    return { ...input, content: { ...input.content, ...content } };
  };
  const start = new Date('2022-06-01T09:35:28Z');
  const first = await createActivity(
    db,
    u.ldid,
    imported({ startdate: start, duration: 488, sportId: 263, track: at(3, 50) }),
  );
  const plus = (s: number) => new Date(start.getTime() + s * 1000);
  const refused = async (content: Partial<ActivityInput['content']>) =>
    t.like(await t.throwsAsync(createActivity(db, u.ldid, imported(content)), { instanceOf: DuplicateActivityError }), {
      existingId: first.id,
      rule: 'near',
    });
  // Near: ±2 s on both, a sport of the family (the rowing machine), the catch-all, no track, a track nearby.
  await refused({ startdate: plus(2), duration: 486, sportId: 398 });
  await refused({ startdate: plus(-2), duration: 490, sportId: 402 });
  await refused({ startdate: plus(1), duration: 487, sportId: 263, track: at(3.0005, 50.0005) });
  // Not near: 3 s, another family, a track elsewhere, a JSON create (the exact rule only).
  for (const content of [
    { startdate: plus(3), duration: 488, sportId: 263 },
    { startdate: plus(1), duration: 491, sportId: 263 },
    { startdate: plus(1), duration: 487, sportId: 121 },
    { startdate: plus(1), duration: 487, sportId: 263, track: at(4, 51) },
  ]) {
    const row = await createActivity(db, u.ldid, imported(content));
    t.truthy(row.id);
    await db.deleteFrom('activities').where('id', '=', row.id).execute();
  }
  const json = await createActivity(
    db,
    u.ldid,
    imported({ startdate: plus(1), duration: 487, sportId: 263 }, { fileSha256: null }),
  );
  t.truthy(json.id);
});
