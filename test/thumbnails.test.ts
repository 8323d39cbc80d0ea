import { readFile } from 'node:fs/promises';
import path from 'node:path';
import test, { type ExecutionContext } from 'ava';
import { sql } from 'kysely';
import sharp from 'sharp';
import { renderThumbnail, THUMBNAIL_MAX_SIZE, thumbnailPathFor } from '../shared/media/thumbnail.ts';
import { createLogger } from '../shared/observability/logger.ts';
import type { ThumbnailJobPayload } from '../shared/queue/jobs.ts';
import { NO_MARK } from '../shared/queue/outbox.ts';
import type { TypedJob } from '../workers/processor.ts';
import { renderActivityThumbnail } from '../workers/processors/thumbnails.ts';
import { startWorkers } from '../workers/worker.ts';
import { startTestApi } from './helpers/app.ts';

const ctx = await startTestApi(null, { env: { OUTBOX_POLL_MS: '50' } });
test.after.always(ctx.close);

const SPORT = 121;
const auth: Record<string, string> = {};
test.before(async () => {
  auth.authorization = `Bearer ${(await ctx.account(['user'])).token}`;
});

async function placeWithActivity(): Promise<{ uuid: string; activityId: number }> {
  const n = Math.random().toString(36).slice(2, 8);
  const place = await ctx.database.db
    .insertInto('places')
    .values({
      slug: `pool-${n}`,
      name: `Pool ${n}`,
      geom: sql`ST_SetSRID(ST_MakePoint(-0.12, 51.5), 4326)`,
      country: 'GB',
      status: 'approved',
    })
    .returning(['id', 'uuid'])
    .executeTakeFirstOrThrow();
  const activity = await ctx.database.db
    .insertInto('place_activities')
    .values({ place_id: place.id, sport_id: SPORT })
    .returning('id')
    .executeTakeFirstOrThrow();
  return { uuid: place.uuid, activityId: activity.id };
}

async function uploadPicture(uuid: string, image: Buffer): Promise<{ url: string; thumbnail_url: string | null }> {
  const body = new FormData();
  body.append('file', new Blob([image]), 'picture.png');
  const res = await ctx.fetch(`/v1/places/${uuid}/activities/${SPORT}/images`, { method: 'POST', headers: auth, body });
  if (res.status !== 201) throw new Error(`upload answered ${res.status}: ${await res.text()}`);
  return ((await res.json()) as { image: { url: string; thumbnail_url: string | null } }).image;
}

const activityImage = (activityId: number) =>
  ctx.database.db
    .selectFrom('place_activities')
    .select(['image_path', 'thumbnail_path'])
    .where('id', '=', activityId)
    .executeTakeFirstOrThrow();

const fakeJob = (data: ThumbnailJobPayload) =>
  ({ name: 'activity-thumbnail', data }) as TypedJob<'thumbnails', 'activity-thumbnail'>;
const deps = () => ({
  config: ctx.config,
  db: ctx.database.db,
  logger: createLogger('silent', 'test'),
  markDone: NO_MARK,
});

test('renderThumbnail fits a large picture in 320 px, keeps small ones, and is deterministic', async (t) => {
  const big = await sharp({ create: { width: 4000, height: 1000, channels: 4, background: '#00ff0080' } })
    .png()
    .toBuffer();
  const a = await renderThumbnail(big);
  t.deepEqual([a.width, a.height], [THUMBNAIL_MAX_SIZE, 80]);
  t.true(a.data.length < 300 * 1024);
  t.deepEqual(a.data, (await renderThumbnail(big)).data);
  const small = await sharp({ create: { width: 100, height: 50, channels: 3, background: '#123456' } })
    .jpeg()
    .toBuffer();
  const b = await renderThumbnail(small);
  t.deepEqual([b.width, b.height], [100, 50]);
  t.is(thumbnailPathFor('places/u/121/abc.png'), 'places/u/121/abc.thumb.jpg');
});

// Serial: while the worker runs it would also take the jobs of the idempotency test.
test.serial(
  'the worker (WORKER_QUEUES=thumbnails) renders the thumbnail of an upload; it is served under /media',
  async (t) => {
    const workers = await startWorkers(
      { ...ctx.config, WORKER_QUEUES: ['thumbnails'], OUTBOX_POLL_MS: 50 },
      { logger: createLogger('silent', 'worker') },
    );
    try {
      await uploadAndWait(t, workers.queues);
    } finally {
      await workers.close();
    }
  },
);

async function uploadAndWait(t: ExecutionContext, queues: string[]): Promise<void> {
  t.deepEqual(queues, ['thumbnails']);

  const { uuid, activityId } = await placeWithActivity();
  const original = await sharp({ create: { width: 1200, height: 900, channels: 3, background: '#336699' } })
    .jpeg()
    .toBuffer();
  const image = await uploadPicture(uuid, original);
  t.is(image.thumbnail_url, null);

  const deadline = Date.now() + 120_000;
  let row = await activityImage(activityId);
  while (!row.thumbnail_path && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 50));
    row = await activityImage(activityId);
  }
  t.truthy(row.thumbnail_path, 'thumbnail_path set by the job');
  t.is(row.thumbnail_path, thumbnailPathFor(row.image_path as string));

  // The activity JSON now carries the thumbnail URL; both files are served.
  const res = await ctx.fetch(`/media/${row.thumbnail_path}`);
  t.is(res.status, 200);
  t.is(res.headers.get('content-type'), 'image/jpeg');
  const thumb = Buffer.from(await res.arrayBuffer());
  t.true(thumb.length < 300 * 1024);
  const meta = await sharp(thumb).metadata();
  t.deepEqual([meta.format, meta.width, meta.height], ['jpeg', 320, 240]);
}

test.serial(
  'processing the same job twice gives the same file and row; a job for a replaced picture is skipped',
  async (t) => {
    const { uuid, activityId } = await placeWithActivity();
    const picture = await sharp({ create: { width: 500, height: 700, channels: 3, background: '#aa3300' } })
      .png()
      .toBuffer();
    await uploadPicture(uuid, picture);
    const imagePath = (await activityImage(activityId)).image_path as string;
    const job = fakeJob({ activityId, imagePath });

    const first = await renderActivityThumbnail(job, deps());
    t.is(first.status, 'done');
    const afterFirst = await activityImage(activityId);
    const bytes = await readFile(path.join(ctx.config.STORAGE_DIR, afterFirst.thumbnail_path as string));
    const second = await renderActivityThumbnail(job, deps());
    t.deepEqual(second, first);
    t.deepEqual(await activityImage(activityId), afterFirst);
    t.deepEqual(await readFile(path.join(ctx.config.STORAGE_DIR, afterFirst.thumbnail_path as string)), bytes);
    t.deepEqual([(await sharp(bytes).metadata()).width, (await sharp(bytes).metadata()).height], [229, 320]);

    // A newer upload: the old job no longer applies and must not touch the row.
    await uploadPicture(uuid, picture);
    const replaced = await renderActivityThumbnail(job, deps());
    t.deepEqual(replaced, { status: 'skipped', reason: 'activity picture replaced' });
    const now = await activityImage(activityId);
    t.not(now.image_path, imagePath);
    t.is(now.thumbnail_path, null);

    const gone = await renderActivityThumbnail(fakeJob({ activityId: 999_999_999, imagePath }), deps());
    t.is(gone.status, 'skipped');
  },
);
