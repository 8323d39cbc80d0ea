import { execFile } from 'node:child_process';
import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import test from 'ava';
import { DATATYPE } from '../shared/tracking/activities/data.ts';
import { FILE_IMPORT_CONNECTOR_ID } from '../shared/tracking/imports/activity-import.ts';
import { activityFileUploads, type Body, MEDIA } from './helpers/activity-file-uploads.ts';
import { FIXTURES, fixture } from './helpers/activity-files.ts';
import { startTrackingApi, type TrackingTestUser } from './helpers/tracking.ts';

const SCHEMAS = {
  gpx: path.join(FIXTURES, 'schemas/gpx-1.1.xsd'),
  tcx: path.join(FIXTURES, 'schemas/TrainingCenterDatabasev2.xsd'),
};
const run = promisify(execFile);

// Every test of the file runs at once: the queue must take them all (its limit has its own test).
const api = await startTrackingApi({ env: { IMPORT_QUEUE: '1000', IMPORT_THREADS: '2' } });
const { db } = api.database;
let tmp: string;
test.before(async () => {
  tmp = await mkdtemp(path.join(tmpdir(), 'tracking-activity-files-'));
});
test.after.always(async () => {
  await api.close();
  await rm(tmp, { recursive: true, force: true });
});

let written = 0;
/** xmllint against the official schema; the error carries xmllint's message. */
async function assertValid(format: 'gpx' | 'tcx', document: string): Promise<void> {
  const file = path.join(tmp, `${written++}.${format}`);
  await writeFile(file, document);
  try {
    await run('xmllint', ['--noout', '--schema', SCHEMAS[format], file]);
  } catch (err) {
    throw new Error(`the ${format} export does not validate: ${(err as { stderr?: string }).stderr}`);
  }
}

const formatOf = (file: string) => path.extname(file).slice(1) as 'gpx' | 'tcx' | 'fit';

const { postRaw, postForm } = activityFileUploads(api);

const exportOf = async (u: TrackingTestUser, id: string, format: 'gpx' | 'tcx') => {
  const res = await api.call('GET', `/activities/${id}.${format}`, u);
  if (res.status !== 200) throw new Error(`GET ${id}.${format}: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body as string;
};

/** The activity as a GET answers it, without what differs between two stored copies. */
async function stored(u: TrackingTestUser, id: string) {
  const res = await api.call('GET', `/activities/${id}`, u, { headers: { accept: 'application/json' } });
  const { id: _id, createdAt: _c, updatedAt: _u, ...rest } = res.body as Body;
  return rest;
}

/** What each real or app-shaped file gives through the API: created, or refused with its status. */
const FILES: Record<string, { refused: number; because: RegExp } | { sport: number; trackPoints: boolean }> = {
  'devices/gpx/Mojstrovka.gpx': { refused: 422, because: /184 points all carry the same time/ },
  'devices/gpx/route.gpx': { refused: 422, because: /no point with a <time>/ },
  'devices/gpx/cerknicko-jezero.gpx': { sport: 402, trackPoints: true },
  'devices/gpx/korita-zbevnica.gpx': { sport: 402, trackPoints: true },
  'devices/gpx/gpx1.1_with_all_fields.gpx': { sport: 402, trackPoints: true },
  'devices/gpx/gpx_with_garmin_extension.gpx': { sport: 402, trackPoints: true },
  'devices/gpx/track-with-empty-segment.gpx': { sport: 402, trackPoints: true },
  'devices/gpx/unicode_with_bom.gpx': { sport: 402, trackPoints: true },
  'devices/tcx/2x2km.tcx': { sport: 402, trackPoints: true },
  'devices/tcx/3x250m.tcx': { sport: 402, trackPoints: true },
  'devices/tcx/strava_export.tcx': { sport: 402, trackPoints: true },
  'devices/fit/3x250m.fit': { sport: 402, trackPoints: true },
  'devices/fit/cottwich.fit': { sport: 263, trackPoints: true },
  'devices/fit/davidfit.fit': { sport: 401, trackPoints: true },
  'devices/fit/workout.fit': { sport: 263, trackPoints: false },
  'apps/garmin-bike-laps.tcx': { sport: 381, trackPoints: true },
  'apps/garmin-ride-tpx2.gpx': { sport: 381, trackPoints: true },
  'apps/gpx10-logger.gpx': { sport: 402, trackPoints: true },
  'apps/lap-restart-distances.tcx': { sport: 402, trackPoints: true },
  'apps/latin1.gpx': { sport: 402, trackPoints: true },
  'apps/strava-like-run.gpx': { sport: 121, trackPoints: true },
  'apps/treadmill-laps-only.tcx': { sport: 121, trackPoints: false },
};

test('every activity file of the fixtures is listed here, so none escapes the checks below', async (t) => {
  const listed = await Promise.all(
    ['devices/gpx', 'devices/tcx', 'devices/fit', 'apps'].map(async (dir) =>
      (await readdir(path.join(FIXTURES, dir))).map((f) => `${dir}/${f}`),
    ),
  );
  t.deepEqual(listed.flat().sort(), Object.keys(FILES).sort());
});

for (const [file, expected] of Object.entries(FILES)) {
  const title =
    'refused' in expected
      ? `refused with ${expected.refused}, raw and multipart`
      : 'imports raw and multipart alike; exports validate; export -> import -> export is identical';
  test(`${file}: ${title}`, async (t) => {
    const u = await api.user();
    const bytes = await fixture(file);
    const raw = await postRaw(u, bytes, MEDIA[formatOf(file)]);
    // The same file again: stored again on purpose, to compare the two inputs.
    const form = await postForm(u, bytes, path.basename(file), {}, '?duplicates=keep');
    if ('refused' in expected) {
      for (const [res, where] of [
        [raw, ''],
        [form, 'file'],
      ] as const) {
        t.is(res.status, expected.refused);
        const body = res.body as { '@type': string; violations: { propertyPath: string; message: string }[] };
        t.is(body['@type'], 'ConstraintViolationList');
        t.is(body.violations[0]?.propertyPath, where);
        t.regex(body.violations[0]?.message ?? '', expected.because);
      }
      t.is(await db.selectFrom('activities').where('user_id', '=', u.ldid).select('id').executeTakeFirst(), undefined);
      return;
    }
    t.is(raw.status, 201, JSON.stringify(raw.body));
    t.is(form.status, 201, JSON.stringify(form.body));
    const created = raw.body as Body;
    t.is(created['@type'], 'Activity');
    t.is(created.user, `/v2/users/${u.ldid}`);
    t.is(created.sport, `/v2/sports/${expected.sport}`);
    t.is(created.connector, `/v2/connectors/${FILE_IMPORT_CONNECTOR_ID}`);
    t.is(created.manual, true);
    t.is(created.trackFlag, expected.trackPoints);
    t.is(raw.headers.get('location'), `${api.config.PUBLIC_URL}/v2/activities/${created.id}`);
    t.is(raw.headers.get('import-format'), formatOf(file));
    t.true(Array.isArray(JSON.parse(raw.headers.get('import-warnings') ?? 'null')));
    const rawId = created.id as string;
    const formId = (form.body as Body).id as string;
    t.deepEqual(await stored(u, formId), await stored(u, rawId), 'raw and multipart store the same activity');

    for (const format of ['gpx', 'tcx'] as const) {
      const first = await exportOf(u, rawId, format);
      await assertValid(format, first);
      // GPX keeps located seconds only: without a track it is an empty segment, not importable.
      if (format === 'gpx' && !expected.trackPoints) continue;
      const again = await postRaw(u, Buffer.from(first), MEDIA[format], '?duplicates=keep');
      t.is(again.status, 201, JSON.stringify(again.body));
      t.is(await exportOf(u, (again.body as Body).id as string, format), first, `${format} round trip`);
    }
  });
}

test('the streams and summaries of an imported file are the ones a GET answers, and its export carries them', async (t) => {
  const u = await api.user();
  const res = await postRaw(u, await fixture('apps/strava-like-run.gpx'), 'application/gpx+xml');
  t.is(res.status, 201);
  t.is(res.headers.get('import-sport-source'), 'file');
  t.deepEqual(JSON.parse(res.headers.get('import-warnings') ?? ''), ['1 point(s) without a time were skipped']);
  const id = (res.body as Body).id as string;
  const got = await api.call('GET', `/activities/${id}`, u);
  const body = got.body as { datastream: Record<string, Body>; locations: Record<string, Body>; name: string };
  t.is(body.name, 'Run & café ☕');
  t.deepEqual(Object.keys(body.datastream), ['0', '1', '2', '302', '600']);
  t.is(body.datastream['0']?.[DATATYPE.HR_CURRENT], 120);
  t.is(body.locations['1']?.latitude, 45.1001);
  t.like((res.body as { dataSummaries: Body }).dataSummaries, { 24: 600, 3: 140 });
  const gpx = await exportOf(u, id, 'gpx');
  t.regex(
    gpx,
    /<gpxtpx:hr>120<\/gpxtpx:hr><gpxtpx:cad>80<\/gpxtpx:cad><\/gpxtpx:TrackPointExtension><gpxpx:PowerInWatts>250</,
  );
  t.regex(gpx, /<type>running<\/type>/);

  // TCX: laps, distance, speed, power of a Garmin-like ride.
  const ride = await postRaw(u, await fixture('apps/garmin-bike-laps.tcx'), 'application/vnd.garmin.tcx+xml');
  const tcx = await exportOf(u, (ride.body as Body).id as string, 'tcx');
  t.is(tcx.match(/<Lap StartTime=/g)?.length, 3);
  t.regex(tcx, /<ns3:Watts>230<\/ns3:Watts>/);
  t.regex(tcx, /<DistanceMeters>110<\/DistanceMeters>/);
});

test('GET by Accept or by suffix: streamed downloads, the suffix wins, 406 for another type, 404 for another user', async (t) => {
  const [u, other] = [await api.user(), await api.user()];
  const id = ((await postRaw(u, await fixture('apps/garmin-ride-tpx2.gpx'), MEDIA.gpx)).body as Body).id as string;
  const byAccept = await api.call('GET', `/activities/${id}`, u, { headers: { accept: 'application/gpx+xml' } });
  t.is(byAccept.status, 200);
  t.is(byAccept.headers.get('content-type'), 'application/gpx+xml');
  t.is(byAccept.headers.get('content-disposition'), `attachment; filename="activity-${id}.gpx"`);
  t.is(byAccept.headers.get('transfer-encoding'), 'chunked', 'streamed');
  t.is(byAccept.body, await exportOf(u, id, 'gpx'));
  const tcx = await api.call('GET', `/activities/${id}`, u, { headers: { accept: 'application/tcx+xml' } });
  t.is(tcx.headers.get('content-type'), 'application/tcx+xml');
  t.regex(tcx.body as string, /^<\?xml[^>]*>\n<TrainingCenterDatabase/);
  const suffix = await api.call('GET', `/activities/${id}.tcx`, u, { headers: { accept: 'application/gpx+xml' } });
  t.is(suffix.headers.get('content-type'), 'application/tcx+xml');
  t.is(suffix.headers.get('content-disposition'), `attachment; filename="activity-${id}.tcx"`);
  t.is(suffix.body, tcx.body);

  const refused = await api.call('GET', `/activities/${id}`, u, { headers: { accept: 'application/xml' } });
  t.is(refused.status, 406);
  t.regex((refused.body as Body).detail as string, /application\/gpx\+xml.*application\/tcx\+xml/);

  for (const request of [
    api.call('GET', `/activities/${id}.gpx`, other),
    api.call('GET', `/activities/${id}`, other, { headers: { accept: 'application/tcx+xml' } }),
    api.call('GET', '/activities/nope.gpx', u),
    api.call('GET', '/activities/bad%20id.tcx', u),
  ]) {
    const res = await request;
    t.is(res.status, 404);
    t.is((res.body as Body)['@type'], 'hydra:Error');
  }
  t.is((await api.call('GET', `/activities/${id}.gpx`, null)).status, 401);
  // The JSON path is untouched.
  t.is((await api.call('GET', `/activities/${id}`, u)).headers.get('content-type'), 'application/ld+json');
});

test('a shared activity exports as GPX or TCX with the API key only', async (t) => {
  const u = await api.user();
  const id = ((await postRaw(u, await fixture('apps/strava-like-run.gpx'), MEDIA.gpx)).body as Body).id as string;
  const share = await api.call('POST', '/share_activities', u, {
    body: { user: `/v2/users/${u.ldid}`, activity: `/v2/activities/${id}` },
  });
  t.is(share.status, 201);
  const token = (share.body as Body).id as string;
  for (const format of ['gpx', 'tcx'] as const) {
    const res = await api.call('GET', `/share_activities/${token}`, null, { headers: { accept: MEDIA[format] } });
    t.is(res.status, 200);
    t.is(res.headers.get('content-type'), MEDIA[format]);
    t.is(res.body, await exportOf(u, id, format));
  }
});

test('the OpenAPI document shows the file bodies of POST /v2/activities and the export routes', async (t) => {
  const doc = (await (await api.fetch('/openapi.json')).json()) as {
    paths: Record<string, Record<string, { requestBody?: { content: Record<string, unknown> }; responses: Body }>>;
  };
  const post = doc.paths['/v2/activities']?.post;
  // The JSON create's own entry (application/json) stays; the file types join it.
  t.deepEqual(Object.keys(post?.requestBody?.content ?? {}).sort(), [
    'application/fit',
    'application/gpx+xml',
    'application/json',
    'application/octet-stream',
    'application/tcx+xml',
    'application/vnd.ant.fit',
    'application/vnd.garmin.tcx+xml',
    'application/x-fit',
    'application/x-zip-compressed',
    'application/xml',
    'application/zip',
    'multipart/form-data',
    'text/xml',
  ]);
  t.truthy(post?.responses['415']);
  t.truthy(doc.paths['/v2/activities/{id}.gpx']?.get);
  t.truthy(doc.paths['/v2/activities/{id}.tcx']?.get);
  t.truthy(doc.paths['/v2/file_import/activities']?.post);
});
