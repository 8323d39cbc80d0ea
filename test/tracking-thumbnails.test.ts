import { readdir } from 'node:fs/promises';
import path from 'node:path';
import test from 'ava';
import { sql } from 'kysely';
import sharp from 'sharp';
import { createLogger } from '../shared/observability/logger.ts';
import { NO_MARK } from '../shared/queue/outbox.ts';
import type { Track } from '../shared/tracking/activities/data.ts';
import { drawActivityThumbnail } from '../shared/tracking/thumbnail/activity-thumbnail.ts';
import { SPORT_FAMILIES, sportFamily } from '../shared/tracking/thumbnail/placeholder.ts';
import { projectTrack, unwrapLongitudes } from '../shared/tracking/thumbnail/projection.ts';
import {
  renderPlaceholder,
  renderTrackThumbnail,
  THUMBNAIL_HEIGHT,
  THUMBNAIL_MAX_BYTES,
  THUMBNAIL_WIDTH,
} from '../shared/tracking/thumbnail/render.ts';
import { simplifyPolyline } from '../shared/tracking/thumbnail/simplify.ts';
import { trackSvg } from '../shared/tracking/thumbnail/track-svg.ts';
import type { TypedJob } from '../workers/processor.ts';
import { trackingActivityThumbnail } from '../workers/processors/thumbnails.ts';
import { startWorkers } from '../workers/worker.ts';
import { startTrackingApi, type TrackingTestUser } from './helpers/tracking.ts';

// The job tests below use the whole API and a worker on their own database and queue prefix.
const api = await startTrackingApi({ env: { OUTBOX_POLL_MS: '50' } });
test.after.always(() => api.close());
const { db } = api.database;

/** A track of n points at 1 Hz from a point function. */
function track(n: number, point: (i: number) => [number, number]): Track {
  const latitude = new Float64Array(n);
  const longitude = new Float64Array(n);
  for (let i = 0; i < n; i++) [latitude[i], longitude[i]] = point(i);
  return {
    elapsed: Int32Array.from({ length: n }, (_, i) => i),
    latitude,
    longitude,
    elevation: new Float64Array(n).fill(Number.NaN),
  };
}

/** A repeatable pseudo-random sequence (the same tracks on every run). */
function random(seed: number): () => number {
  let s = seed;
  return () => {
    s = (s * 1103515245 + 12345) % 2147483648;
    return s / 2147483648;
  };
}

/** A day at 1 Hz: a wandering walk with GPS noise, 86,400 points. */
function dayLongWalk(): Track {
  const rnd = random(42);
  let lat = 45.19;
  let lon = 5.72;
  let heading = 0;
  return track(86_400, () => {
    heading += (rnd() - 0.5) * 0.6;
    lat += Math.cos(heading) * 0.00003 + (rnd() - 0.5) * 0.00002;
    lon += Math.sin(heading) * 0.00004 + (rnd() - 0.5) * 0.00002;
    return [lat, lon];
  });
}

const PATHOLOGICAL: Record<string, Track> = {
  'no point': track(0, () => [0, 0]),
  'a single point': track(1, () => [50.63, 3.06]),
  'every point equal': track(5000, () => [50.63, 3.06]),
  'crossing the antimeridian': track(2000, (i) => {
    const lon = 179.5 + i * 0.0005;
    return [-17.7 + i * 0.0002, lon > 180 ? lon - 360 : lon];
  }),
  'circling the north pole': track(3600, (i) => [89.99, ((i * 0.1) % 360) - 180]),
  'through the south pole': track(200, (i) => [-89.9 - Math.abs(i - 100) * 0.001, i < 100 ? 10 : -170]),
  'points that are not coordinates': track(100, (i) =>
    i % 3 === 0 ? [Number.NaN, 3] : i % 3 === 1 ? [95, Number.POSITIVE_INFINITY] : [50 + i * 0.001, 3 + i * 0.001],
  ),
  'noise over the whole area (86,400 points)': track(
    86_400,
    (() => {
      const rnd = random(7);
      return () => [45 + rnd(), 5 + rnd()] as [number, number];
    })(),
  ),
};

async function checkImage(
  t: import('ava').ExecutionContext,
  data: Buffer,
  format: 'png' | 'webp',
  label: string,
): Promise<void> {
  t.true(data.length < THUMBNAIL_MAX_BYTES, `${label}: ${data.length} bytes`);
  const meta = await sharp(data).metadata();
  t.is(meta.format, format, label);
  t.is(meta.width, THUMBNAIL_WIDTH, label);
  t.is(meta.height, THUMBNAIL_HEIGHT, label);
}

for (const format of ['png', 'webp'] as const) {
  test(`a 24-hour track (86,400 points) renders to a ${format} under 300 KB, the same bytes every time`, async (t) => {
    const walk = dayLongWalk();
    const first = await renderTrackThumbnail(walk, format);
    await checkImage(t, first.data, format, 'walk');
    t.is(first.contentType, `image/${format}`);
    const again = await renderTrackThumbnail(walk, format);
    t.true(first.data.equals(again.data), 'deterministic bytes');
  });

  test(`pathological tracks render to a ${format} under 300 KB`, async (t) => {
    for (const [label, tr] of Object.entries(PATHOLOGICAL)) {
      const image = await renderTrackThumbnail(tr, format);
      await checkImage(t, image.data, format, label);
    }
  });
}

test('the track is drawn: pixels of the track colour where the line runs, none on an empty track', async (t) => {
  const orange = async (tr: Track) => {
    const { data, info } = await sharp((await renderTrackThumbnail(tr, 'png')).data)
      .removeAlpha()
      .raw()
      .toBuffer({ resolveWithObject: true });
    let n = 0;
    for (let i = 0; i < data.length; i += info.channels) {
      const [r, g, b] = [data[i] as number, data[i + 1] as number, data[i + 2] as number];
      if (r > 190 && g > 50 && g < 100 && b < 50) n++;
    }
    return n;
  };
  t.true((await orange(dayLongWalk())) > 2000);
  t.is(await orange(PATHOLOGICAL['no point'] as Track), 0);
});

test('different tracks give different thumbnails', async (t) => {
  const a = await renderTrackThumbnail(PATHOLOGICAL['crossing the antimeridian'] as Track);
  const b = await renderTrackThumbnail(dayLongWalk());
  t.false(a.data.equals(b.data));
});

test('longitudes are unwrapped across the antimeridian, so the drawing stays in one piece', (t) => {
  t.deepEqual(
    Array.from(unwrapLongitudes(Float64Array.from([179.9, -179.9, -179.7, 179.8]))),
    [179.9, 180.1, 180.3, 179.8],
  );
  const crossing = PATHOLOGICAL['crossing the antimeridian'] as Track;
  const { x } = projectTrack(crossing, { width: 600, height: 400, padding: 30 });
  // One continuous line: consecutive points stay close (no jump across the whole width).
  let largestStep = 0;
  for (let i = 1; i < x.length; i++)
    largestStep = Math.max(largestStep, Math.abs((x[i] as number) - (x[i - 1] as number)));
  t.true(largestStep < 5, `largest step ${largestStep}px`);
});

test('every projected point lies inside the viewport, poles and single points included', (t) => {
  for (const [label, tr] of Object.entries(PATHOLOGICAL)) {
    const { x, y } = projectTrack(tr, { width: 600, height: 400, padding: 30 });
    for (let i = 0; i < x.length; i++) {
      t.true((x[i] as number) >= 30 - 1e-9 && (x[i] as number) <= 570 + 1e-9, `${label} x ${x[i]}`);
      t.true((y[i] as number) >= 30 - 1e-9 && (y[i] as number) <= 370 + 1e-9, `${label} y ${y[i]}`);
    }
  }
  const single = projectTrack(PATHOLOGICAL['a single point'] as Track, { width: 600, height: 400, padding: 30 });
  t.deepEqual([single.x[0], single.y[0]], [300, 200]);
  const skipped = projectTrack(PATHOLOGICAL['points that are not coordinates'] as Track, {
    width: 600,
    height: 400,
    padding: 30,
  });
  t.is(skipped.x.length, 33);
});

test('simplification keeps both ends, drops what moves the line less than the tolerance', (t) => {
  const n = 10_000;
  const straight = {
    x: Float64Array.from({ length: n }, (_, i) => i / 20),
    y: Float64Array.from({ length: n }, (_, i) => 100 + (i % 2 ? 0.2 : -0.2)),
  };
  const simplified = simplifyPolyline(straight, 0.5);
  t.true(simplified.x.length <= 3, `${simplified.x.length} points`);
  t.is(simplified.x[0], 0);
  t.is(simplified.x[simplified.x.length - 1], (n - 1) / 20);

  // A corner survives.
  const corner = { x: Float64Array.from([0, 50, 100, 100, 100]), y: Float64Array.from([0, 0, 0, 50, 100]) };
  t.deepEqual(Array.from(simplifyPolyline(corner, 0.5).x), [0, 100, 100]);
  t.deepEqual(Array.from(simplifyPolyline(corner, 0.5).y), [0, 0, 100]);
  t.is(simplifyPolyline({ x: new Float64Array(0), y: new Float64Array(0) }, 0.5).x.length, 0);
});

test('the SVG of a track is the same text every time, and its line holds a bounded number of vertices', (t) => {
  const walk = dayLongWalk();
  const a = trackSvg(walk, { width: 600, height: 400, maxVertices: 500 });
  t.is(a, trackSvg(walk, { width: 600, height: 400, maxVertices: 500 }));
  const d = /<path d="(M[^"]+)" fill="none"/.exec(a)?.[1] ?? '';
  t.true(d.split('L').length <= 500);
  t.regex(a, /^<svg xmlns="http:\/\/www.w3.org\/2000\/svg" width="600" height="400"/);
});

test('each sport family has its own placeholder, under 300 KB, deterministic', async (t) => {
  const seen = new Set<string>();
  for (const family of SPORT_FAMILIES) {
    const image = await renderPlaceholder(family, 'png');
    await checkImage(t, image.data, 'png', family);
    t.true(image.data.equals((await renderPlaceholder(family, 'png')).data), `${family} deterministic`);
    seen.add(image.data.toString('base64'));
    await checkImage(t, (await renderPlaceholder(family, 'webp')).data, 'webp', `${family} webp`);
  }
  t.is(seen.size, SPORT_FAMILIES.length);
});

test('sport families follow the universes of the referential; unknown ones are "other"', (t) => {
  t.is(sportFamily(4), 'fitness');
  t.is(sportFamily(11), 'wheel');
  t.is(sportFamily(8), 'water');
  t.is(sportFamily(null), 'other');
  t.is(sportFamily(999), 'other');
});

// ---- The job: activities get their thumbnail, drawn by the `thumbnails` worker ----

const deps = () => ({ config: api.config, db, logger: createLogger('silent', 'test'), markDone: NO_MARK });

/** A running activity of `u` (with a small loop as its track unless `locations` is given). */
async function activityOf(u: TrackingTestUser, fields: Record<string, unknown> = {}): Promise<string> {
  const locations: Record<string, { latitude: number; longitude: number; elevation: number }> = {};
  for (let i = 0; i < 120; i++)
    locations[String(i)] = {
      latitude: 50.63 + 0.002 * Math.sin(i / 19),
      longitude: 3.06 + 0.003 * Math.cos(i / 19),
      elevation: 20,
    };
  // Tests create the same activity several times for one user: kept, not refused as duplicates.
  const res = await api.call('POST', '/activities?duplicates=keep', u, {
    body: {
      name: 'Loop',
      user: `/v2/users/${u.ldid}`,
      sport: '/v2/sports/121',
      startdate: '2024-05-01T08:30:00+02:00',
      duration: 120,
      dataSummaries: { '24': 120 },
      locations,
      ...fields,
    },
  });
  if (res.status !== 201) throw new Error(`POST /activities answered ${res.status}: ${JSON.stringify(res.body)}`);
  return res.body.id;
}

const thumbnailOf = async (id: string) =>
  (await db.selectFrom('activities').select('thumbnail').where('id', '=', id).executeTakeFirstOrThrow()).thumbnail;

const thumbnailJobs = (id: string) =>
  db
    .selectFrom('outbox')
    .select(['job_id', 'payload'])
    .where('queue', '=', 'thumbnails')
    .where(sql<string>`payload->>'activityId'`, '=', id)
    .orderBy('id')
    .execute();

/** The file a thumbnail URL points to, fetched from the API (`/v2/media/...`). */
async function fetchThumbnail(url: string): Promise<{ status: number; type: string | null; data: Buffer }> {
  const res = await api.fetch(new URL(url).pathname);
  return { status: res.status, type: res.headers.get('content-type'), data: Buffer.from(await res.arrayBuffer()) };
}

const fakeJob = (activityId: string, version = 1) =>
  ({ name: 'activity-track-thumbnail', data: { activityId, version } }) as TypedJob<
    'thumbnails',
    'activity-track-thumbnail'
  >;

// Serial: while the worker runs it takes every job of this file's queues.
test.serial(
  'the worker draws a created activity’s track thumbnail (under 300 KB) and its sport’s placeholder',
  async (t) => {
    const workers = await startWorkers(
      { ...api.config, WORKER_QUEUES: ['thumbnails'], OUTBOX_POLL_MS: 50 },
      { logger: createLogger('silent', 'worker') },
    );
    try {
      const u = await api.user();
      const withTrack = await activityOf(u);
      const withoutTrack = await activityOf(u, { locations: {}, sport: '/v2/sports/381' });
      t.deepEqual(
        (await thumbnailJobs(withTrack)).map((j) => j.job_id),
        [`track-thumb-${withTrack}-v1`],
        'the creation wrote the job in its transaction',
      );
      const deadline = Date.now() + 120_000;
      while ((!(await thumbnailOf(withTrack)) || !(await thumbnailOf(withoutTrack))) && Date.now() < deadline)
        await new Promise((r) => setTimeout(r, 50));

      const url = (await thumbnailOf(withTrack)) ?? '';
      t.regex(url, new RegExp(`^${api.config.PUBLIC_URL}/v2/media/thumbnails/${withTrack}/track-[0-9a-f]{16}\\.png$`));
      const file = await fetchThumbnail(url);
      t.is(file.status, 200);
      t.is(file.type, 'image/png');
      t.true(file.data.length < THUMBNAIL_MAX_BYTES, `${file.data.length} bytes`);
      const meta = await sharp(file.data).metadata();
      t.deepEqual([meta.format, meta.width, meta.height], ['png', THUMBNAIL_WIDTH, THUMBNAIL_HEIGHT]);
      // The activity as the API answers it points to the file.
      t.is((await api.call('GET', `/activities/${withTrack}`, u)).body.thumbnail, url);

      const placeholder = (await thumbnailOf(withoutTrack)) ?? '';
      t.regex(
        placeholder,
        /\/v2\/media\/placeholders\/wheel-[0-9a-f]{16}\.png$/,
        'bicycle: the wheel sports placeholder',
      );
      const placeholderFile = await fetchThumbnail(placeholder);
      t.is(placeholderFile.status, 200);
      t.true(placeholderFile.data.equals((await renderPlaceholder('wheel', 'png')).data));
    } finally {
      await workers.close();
    }
  },
);

test.serial(
  'a changed track is drawn again: new file, new URL, the old file removed; the same job twice changes nothing',
  async (t) => {
    const u = await api.user();
    const id = await activityOf(u);
    const first = await trackingActivityThumbnail(fakeJob(id), deps());
    if (first.status !== 'done') return t.fail(JSON.stringify(first));
    t.false(first.placeholder);
    const again = await trackingActivityThumbnail(fakeJob(id), deps());
    t.deepEqual(again, first, 'idempotent');
    const before = await fetchThumbnail((await thumbnailOf(id)) ?? '');

    // The track changes (as an import replacing the streams would), with the version bump of any write.
    await sql`
    update activity_tracks
    set track = ST_GeomFromText('LINESTRING ZM(3.06 50.63 0 0, 3.08 50.63 0 60, 3.08 50.61 0 120)', 4326), points = 3
    where activity_id = ${id}`.execute(db);
    await db.updateTable('activities').set({ version: sql`version + 1` }).where('id', '=', id).execute();
    const second = await trackingActivityThumbnail(fakeJob(id, 2), deps());
    t.is(second.status, 'done');
    const url = (await thumbnailOf(id)) ?? '';
    t.not(url, first.url);
    const after = await fetchThumbnail(url);
    t.is(after.status, 200);
    t.false(after.data.equals(before.data), 'a different picture');
    t.is((await fetchThumbnail(first.url)).status, 404, 'the old drawing is removed');
  },
);

test.serial('a thumbnail the user set is kept; clearing it or changing the sport draws again', async (t) => {
  const u = await api.user();
  const id = await activityOf(u, { locations: {} });
  t.like(await trackingActivityThumbnail(fakeJob(id), deps()), { status: 'done', placeholder: true });
  t.regex((await thumbnailOf(id)) ?? '', /\/placeholders\/fitness-/);

  const own = 'https://cdn.example.test/my-run.png';
  t.is((await api.call('PUT', `/activities/${id}`, u, { body: { thumbnail: own } })).status, 200);
  t.like(await trackingActivityThumbnail(fakeJob(id, 2), deps()), { status: 'skipped' });
  t.is(await thumbnailOf(id), own);

  t.is((await api.call('PUT', `/activities/${id}`, u, { body: { thumbnail: null } })).status, 200);
  t.deepEqual(
    (await thumbnailJobs(id)).map((j) => j.job_id),
    [`track-thumb-${id}-v1`, `track-thumb-${id}-v3`],
    'clearing the thumbnail asks for a drawing',
  );
  t.like(await trackingActivityThumbnail(fakeJob(id, 3), deps()), { status: 'done' });
  t.regex((await thumbnailOf(id)) ?? '', /\/placeholders\/fitness-/);

  t.is((await api.call('PUT', `/activities/${id}`, u, { body: { sport: '/v2/sports/274' } })).status, 200);
  t.is((await thumbnailJobs(id)).length, 3, 'a new sport asks for a drawing');
  await trackingActivityThumbnail(fakeJob(id, 4), deps());
  t.regex((await thumbnailOf(id)) ?? '', /\/placeholders\/water-/, 'swimming: the water sports placeholder');

  // A name change does not touch the thumbnail.
  t.is((await api.call('PUT', `/activities/${id}`, u, { body: { name: 'Renamed' } })).status, 200);
  t.is((await thumbnailJobs(id)).length, 3);

  t.is((await api.call('DELETE', `/activities/${id}`, u)).status, 204);
  t.deepEqual(await trackingActivityThumbnail(fakeJob(id, 5), deps()), {
    status: 'skipped',
    reason: 'activity deleted',
  });
});

test.serial('a drawing whose activity is deleted while it is drawn is removed, not left behind', async (t) => {
  const u = await api.user();
  const id = await activityOf(u);
  const folder = path.join(api.config.STORAGE_DIR, 'tracking', 'thumbnails', id);
  const stored = () => readdir(folder).catch(() => [] as string[]);
  let drawing: ReturnType<typeof drawActivityThumbnail> | undefined;
  // The row is held while the drawing is made, and deleted once its file is written: the
  // transaction that would record it then finds no activity.
  await db.transaction().execute(async (trx) => {
    await trx.selectFrom('activities').select('id').where('id', '=', id).forUpdate().execute();
    drawing = drawActivityThumbnail(db, api.config, id);
    for (let i = 0; i < 4800 && (await stored()).length === 0; i++) await new Promise((r) => setTimeout(r, 25));
    t.is((await stored()).length, 1, 'the drawing was written');
    await trx.deleteFrom('activities').where('id', '=', id).execute();
  });
  t.deepEqual(await drawing, { status: 'skipped', reason: 'activity deleted' });
  t.deepEqual(await stored(), [], 'no drawing of the deleted activity is stored');
});
