import { access, copyFile, mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import test from 'ava';
import { sql } from 'kysely';
import sharp from 'sharp';
import { createDb, type Db } from '../shared/db/database.ts';
import { writeStorageFile } from '../shared/media/storage.ts';
import { activityImagePath, setActivityImage } from '../shared/places/images.ts';
import { DATATYPE } from '../shared/tracking/activities/data.ts';
import { generatedThumbnailPath } from '../shared/tracking/thumbnail/activity-thumbnail.ts';
import { runScript } from './helpers/cli.ts';
import { drainOutbox } from './helpers/outbox.ts';
import { dump, emptyDatabase, restore } from './helpers/pg-backup.ts';
import { insertTrackingUser, storeActivity } from './helpers/records.ts';
import { PrivateRedis } from './helpers/redis-server.ts';
import { oracleRows, rollupRows } from './helpers/sumups.ts';
import { startTrackingApi } from './helpers/tracking.ts';
import { WorkerProcess } from './helpers/worker-process.ts';

/**
 * docs/operations.md, "Backup and restore", into an empty cluster: the dump restored into an empty
 * database, a new STORAGE_DIR holding only the originals (a copy that predates every thumbnail)
 * and a new, empty Redis. The restored database then loses every derived row too, and the
 * runbook's commands (migrate, derived:rebuild --all-kinds --wait, records:recompute --all --wait)
 * bring back records, statistics, moving fields, previews and every thumbnail file.
 */
const api = await startTrackingApi({ env: { OUTBOX_POLL_MS: '50' } });
const { db } = api.database;
const workerEnv = { WORKER_QUEUES: 'records,thumbnails', OUTBOX_POLL_MS: '50' };
const worker = WorkerProcess.of(api.config, workerEnv);
const dir = await mkdtemp(path.join(tmpdir(), 'sb-restore-empty-'));
const redis = await PrivateRedis.create();
test.after.always(async () => {
  await worker.stop();
  await redis.stop();
  await api.close();
  await rm(dir, { recursive: true, force: true });
});

/** A 4,500 s run (long enough for a preview) with a stop at 2,000 s (a pause), GPS track included. */
async function run(userId: string, day: number): Promise<string> {
  const elapsed = Int32Array.from({ length: 4501 }, (_, i) => i);
  const stopped = (s: number) => s >= 2000 && s < 2120;
  let metres = 0;
  const distance = Float64Array.from(elapsed, (s) => (metres += stopped(s) ? 0 : 3 + day / 10));
  const row = await storeActivity(db, userId, {
    sportId: 121,
    name: null,
    startdate: new Date(Date.UTC(2026, 2, day, 8)),
    duration: 4500,
    summaries: new Map([[DATATYPE.DISTANCE, metres]]),
    datastream: { elapsed, channels: new Map([[DATATYPE.DISTANCE, distance]]) },
    track: {
      elapsed,
      latitude: Float64Array.from(elapsed, (s) => 45 + s / 10_000),
      longitude: Float64Array.from(elapsed, (s) => 6 + Math.sin(s / 500) / 100 + day / 1000),
      elevation: new Float64Array(elapsed.length).fill(Number.NaN),
    },
  });
  return row.id;
}

/** A place activity showing a picture stored under `storageDir`; its thumbnail job is in the outbox. */
async function placePicture(storageDir: string): Promise<{ activityId: number; imagePath: string }> {
  const n = Math.random().toString(36).slice(2, 8);
  const place = await db
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
  const activity = await db
    .insertInto('place_activities')
    .values({ place_id: place.id, sport_id: 121 })
    .returning('id')
    .executeTakeFirstOrThrow();
  const imagePath = activityImagePath(place.uuid, 121, `pic${n}`, 'png');
  const image = await sharp({ create: { width: 900, height: 600, channels: 3, background: '#3366cc' } })
    .png()
    .toBuffer();
  await writeStorageFile(storageDir, imagePath, image);
  await setActivityImage(db, activity.id, imagePath);
  return { activityId: activity.id, imagePath };
}

/** What the commands must bring back, as comparable values. */
async function derived(from: Db, userId: string, ids: string[]) {
  const [moving, previews, records] = await Promise.all([
    from
      .selectFrom('activities')
      .select(['id', 'moving_time', 'pauses', 'moving_speed_avg', 'moving_pace'])
      .where('id', 'in', ids)
      .orderBy('id')
      .execute(),
    sql<{ activity_id: string; datatype_id: number; samples: number; hex: string }>`
      select activity_id, datatype_id, samples, encode("values", 'hex') as hex from activity_stream_previews
      where activity_id = any(${ids}) order by activity_id, datatype_id`.execute(from),
    sql<{ type: string; sport_id: number | null; datatype_id: number; value: string; activity_id: string }>`
      select type, sport_id, datatype_id, value::text as value, activity_id from user_records
      where user_id = ${userId} order by type, sport_id nulls first, datatype_id`.execute(from),
  ]);
  return { moving, previews: previews.rows, records: records.rows, sumups: await rollupRows(from, [userId]) };
}

const exists = (file: string) =>
  access(file).then(
    () => true,
    () => false,
  );

test('restored into an empty database, STORAGE_DIR and Redis: the runbook brings back every derived artefact', async (t) => {
  await worker.started();
  const user = await insertTrackingUser(db);
  const ids = [await run(user, 1), await run(user, 2), await run(user, 3)];
  const picture = await placePicture(api.config.STORAGE_DIR);
  t.is(await drainOutbox(db), 0, worker.output.slice(-3_000));
  await worker.stop();
  const before = await derived(db, user, ids);
  t.is(before.moving.filter((a) => a.moving_time !== null && a.moving_time < 4500).length, 3, 'pauses found');
  t.true(before.previews.length >= 3, 'a preview of every activity');
  t.true(before.records.length > 0 && before.sumups.length > 0, 'records and statistics');
  const thumbnails = await db.selectFrom('activities').select(['id', 'thumbnail']).where('id', 'in', ids).execute();
  t.is(thumbnails.filter((a) => generatedThumbnailPath(a.thumbnail) !== undefined).length, 3);

  // Backup: pg_dump -Fc. Restore: an empty database, then npm run migrate (which checks the schema).
  const file = path.join(dir, 'sports.dump');
  const dumped = await dump(api.config.DATABASE_URL, file);
  t.is(dumped.code, 0, dumped.stderr);
  const target = await emptyDatabase();
  t.teardown(() => target.drop());
  const restored = await restore(target.url, file);
  t.is(restored.code, 0, restored.stderr);
  const env = { DATABASE_URL: target.url, REDIS_URL: redis.url, MIGRATE_ON_START: 'false' };
  const migrate = await runScript('scripts/migrate.ts', [], env);
  t.is(migrate.code, 0, migrate.stderr);
  const { db: restoredDb } = createDb(target.url, 2);
  t.teardown(() => restoredDb.destroy());
  // As a dump without the derived rows: each of them must come back from the commands alone.
  await sql`delete from user_records where user_id = ${user}`.execute(restoredDb);
  await sql`delete from activity_best_efforts where activity_id = any(${ids})`.execute(restoredDb);
  await sql`delete from activity_records_state where activity_id = any(${ids})`.execute(restoredDb);
  await sql`delete from user_sumups where user_id = ${user}`.execute(restoredDb);
  await sql`delete from activity_sumup_state where activity_id = any(${ids})`.execute(restoredDb);
  await sql`delete from activity_stream_previews where activity_id = any(${ids})`.execute(restoredDb);
  await sql`update activities set moving_time = null, pauses = null, moving_speed_avg = null, moving_pace = null
    where id = any(${ids})`.execute(restoredDb);

  // STORAGE_DIR: a copy holding the originals only; Redis: a new, empty one.
  const storage = path.join(dir, 'storage');
  await mkdir(path.dirname(path.join(storage, picture.imagePath)), { recursive: true });
  await copyFile(path.join(api.config.STORAGE_DIR, picture.imagePath), path.join(storage, picture.imagePath));
  await redis.start();
  const next = WorkerProcess.of(
    { ...api.config, DATABASE_URL: target.url, REDIS_URL: redis.url, STORAGE_DIR: storage },
    workerEnv,
  );
  t.teardown(() => next.stop());
  await next.started();

  // derived:rebuild first: the statistics sum the moving times it fills.
  const rebuild = await runScript('scripts/derived-rebuild.ts', ['--all-kinds', '--wait'], {
    ...env,
    STORAGE_DIR: storage,
  });
  t.is(rebuild.code, 0, `${rebuild.stdout}\n${rebuild.stderr}\n${next.output.slice(-3_000)}`);
  const recompute = await runScript('scripts/records-recompute.ts', ['--all', '--wait'], env);
  t.is(recompute.code, 0, `${recompute.stdout}\n${recompute.stderr}\n${next.output.slice(-3_000)}`);
  t.regex(rebuild.stdout, /moving time and pauses: [1-9]\d* activities computed/);
  t.regex(rebuild.stdout, /stream previews: [1-9]\d* activities written/);
  t.regex(rebuild.stdout, /thumbnails of pictures: 1 jobs enqueued of 1 pictures/);
  t.regex(rebuild.stdout, /thumbnails drawn/);

  // The statistics rebuild is a job of its own: done once the outbox is.
  t.is(await drainOutbox(restoredDb), 0, next.output.slice(-3_000));
  const after = await derived(restoredDb, user, ids);
  t.deepEqual(after, before);
  t.deepEqual(after.sumups, await oracleRows(restoredDb, [user]));
  const drawn = await restoredDb.selectFrom('activities').select(['id', 'thumbnail']).where('id', 'in', ids).execute();
  for (const a of drawn) {
    const stored = generatedThumbnailPath(a.thumbnail);
    t.true(stored !== undefined && (await exists(path.join(storage, stored))), `thumbnail of ${a.id}`);
  }
  const pictureRow = await restoredDb
    .selectFrom('place_activities')
    .select('thumbnail_path')
    .where('id', '=', picture.activityId)
    .executeTakeFirstOrThrow();
  t.true(
    pictureRow.thumbnail_path !== null && (await exists(path.join(storage, pictureRow.thumbnail_path))),
    'picture thumbnail',
  );

  // A second run finds nothing missing.
  const again = await runScript('scripts/derived-rebuild.ts', ['--all-kinds'], { ...env, STORAGE_DIR: storage });
  t.is(again.code, 0, again.stderr);
  t.regex(again.stdout, /moving time and pauses: 0 activities/);
  t.regex(again.stdout, /stream previews: 0 activities/);
  t.regex(again.stdout, /thumbnails of activities: 0 jobs enqueued/);
  t.regex(again.stdout, /thumbnails of pictures: 0 jobs enqueued/);

  // --force redoes everything, to the same result.
  const forced = await runScript('scripts/derived-rebuild.ts', ['--all-kinds', '--force', '--wait'], {
    ...env,
    STORAGE_DIR: storage,
  });
  t.is(forced.code, 0, `${forced.stdout}\n${forced.stderr}\n${next.output.slice(-3_000)}`);
  t.regex(forced.stdout, /moving time and pauses: 3 activities computed/);
  t.regex(forced.stdout, /stream previews: 3 activities written/);
  t.regex(forced.stdout, /thumbnails of activities: 3 jobs enqueued/);
  t.regex(forced.stdout, /thumbnails of pictures: 1 jobs enqueued/);
  t.deepEqual(await derived(restoredDb, user, ids), before);
});

test('derived:rebuild refuses bad options with exit code 2', async (t) => {
  const env = { DATABASE_URL: api.config.DATABASE_URL, MIGRATE_ON_START: 'false' };
  for (const args of [[], ['--bogus'], ['--moving', '--wait'], ['--thumbnails', 'extra']]) {
    const run = await runScript('scripts/derived-rebuild.ts', args, env);
    t.is(run.code, 2, `${args.join(' ')}: ${run.stdout}${run.stderr}`);
    t.regex(run.stderr, /usage: npm run derived:rebuild/);
  }
});
