import { cpus, loadavg } from 'node:os';
import { sql } from 'kysely';
import { copyBinaryRows } from '../shared/db/copy-binary.ts';
import { ensureDatabase } from '../shared/db/create-database.ts';
import { createDb, type Db, poolOf } from '../shared/db/database.ts';
import { migrateToLatest } from '../shared/db/migrate.ts';
import { seedReferentials } from '../shared/db/referentials.ts';
import { readActivityContent } from '../shared/tracking/activities/content-read.ts';
import { type ActivityContent, DATATYPE } from '../shared/tracking/activities/data.ts';
import { createActivity } from '../shared/tracking/activities/store.ts';
import { BEST_EFFORTS } from '../shared/tracking/records/best-effort-ranks.ts';
import { DEFAULT_RECORDS_SETTINGS } from '../shared/tracking/records/settings.ts';
import { updateActivityRecords } from '../shared/tracking/records/update-records.ts';
import { streamsQuery } from '../shared/tracking/streams/read.ts';
import { findTrackingCredentials } from '../shared/tracking/users/credentials.ts';
import { benchDatabaseUrl, envNumber, loadSettings } from './harness.ts';
import { bytes, fmt } from './stats.ts';
import { compareReads, type ReadCase, trackingCaller } from './tracking-reads.ts';
import { benchUser } from './tracking-records-data.ts';

/**
 * bench/tracking-streams (docs/tracking-activities.md, "Streams by datatype and resolution"): the
 * per-activity reads, each through the API at 16 connections, through the bare server and as the
 * API's statements straight through pg, in alternating rounds (bench/tracking-reads.ts):
 * `GET /v2/activities/{id}/streams?resolution=low` of a 24-hour activity at 1 Hz (every channel:
 * heart rate, distance, speed, cadence, power, elevation, laps; the API reads its stored
 * preview), and the laps, km splits and best efforts of BENCH_STREAMS_RIDES (20) one-hour rides
 * at 1 Hz of the same user (a lap marker every 10 minutes, records computed), requests rotating
 * over the rides. Goals: each read API ≥ 0.75 × bare and API p99 ≤ 1.5 × the SQL's p99; the
 * streams answer under 10 KB.
 */

const SETTINGS = {
  points: Math.round(envNumber('BENCH_STREAMS_POINTS', 86_400)),
  rides: Math.max(1, Math.round(envNumber('BENCH_STREAMS_RIDES', 20))),
  ...loadSettings(),
};
const GOAL_BYTES = 10 * 1024;
const RIDE_SECONDS = 3600;

/**
 * `n` samples at 1 Hz with a plausible random walk (seeded: every run stores the same data), a lap
 * marker every `lapEvery` seconds.
 */
export function dayActivity(n: number, { seed: first = 42, lapEvery = 3600 } = {}): ActivityContent {
  let seed = first;
  const random = () => {
    seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
    return seed / 2 ** 31;
  };
  const elapsed = Int32Array.from({ length: n }, (_, i) => i);
  const channel = () => new Float64Array(n);
  const [latitude, longitude, elevation, hr, distance, speed, cadence, power] = Array.from({ length: 8 }, channel) as [
    Float64Array,
    Float64Array,
    Float64Array,
    Float64Array,
    Float64Array,
    Float64Array,
    Float64Array,
    Float64Array,
  ];
  let lat = 45.1;
  let lon = 6.1;
  let ele = 500;
  let d = 0;
  for (let i = 0; i < n; i++) {
    lat += (random() - 0.45) * 2e-5;
    lon += (random() - 0.45) * 2e-5;
    ele += (random() - 0.5) * 0.6;
    const v = 4 + random() * 4;
    d += v;
    latitude[i] = lat;
    longitude[i] = lon;
    elevation[i] = Math.round(ele * 10) / 10;
    hr[i] = Math.round(110 + random() * 60);
    distance[i] = Math.round(d * 10) / 10;
    speed[i] = Math.round(v * 3600);
    cadence[i] = Math.round(80 + random() * 15);
    power[i] = Math.round(150 + random() * 150);
  }
  return {
    sportId: 381,
    name: 'Day ride',
    startdate: new Date('2024-06-21T00:00:00Z'),
    duration: n,
    summaries: new Map([
      [DATATYPE.DURATION, n],
      [DATATYPE.DISTANCE, Math.round(d)],
    ]),
    datastream: {
      elapsed,
      channels: new Map([
        [DATATYPE.HR_CURRENT, hr],
        [DATATYPE.DISTANCE, distance],
        [DATATYPE.SPEED_CURRENT, speed],
        [DATATYPE.RPM_CURRENT, cadence],
        [DATATYPE.POWER_CURRENT, power],
        [DATATYPE.ELEVATION_CURRENT, elevation],
        [DATATYPE.LAP, Float64Array.from({ length: n }, (_, i) => (i % lapEvery === lapEvery - 1 ? 1 : Number.NaN))],
      ]),
    },
    track: { elapsed, latitude, longitude, elevation },
  };
}

/** Stores `content` for `userId` through the store's own create. */
const store = (db: Db, userId: string, content: ActivityContent) =>
  createActivity(db, userId, {
    userId,
    userDeviceId: null,
    connectorId: null,
    comment: null,
    userSession: null,
    images: [],
    tags: null,
    location: null,
    content,
    duplicates: 'keep',
  });

/** The benchmark's data: a new user with the day-long activity and the rides (their records computed). */
export async function loadStreamsData(db: Db) {
  const user = await benchUser(db, 'streams');
  const userId = user.ldid;
  const content = dayActivity(SETTINGS.points);
  const day = await store(db, userId, content);
  const rides: string[] = [];
  for (let k = 0; k < SETTINGS.rides; k++) {
    const ride = dayActivity(RIDE_SECONDS, { seed: 1000 + k, lapEvery: 600 });
    ride.startdate = new Date(Date.UTC(2024, 0, 1 + k, 8));
    const row = await store(db, userId, ride);
    await updateActivityRecords(db, { activityId: row.id, userId, sports: [], force: true }, DEFAULT_RECORDS_SETTINGS);
    rides.push(row.id);
  }
  // The creates' jobs: the records were computed above, the rest is not needed here.
  await db.deleteFrom('outbox').execute();
  return { user, day: day.id, channels: content.datastream.channels.size, rides };
}

export async function run(): Promise<{ failed: boolean }> {
  const log = (s: string) => console.log(s);
  const url = benchDatabaseUrl('BENCH_STREAMS_DATABASE_URL', 'sports_bench_streams');
  log(
    `tracking-streams benchmark: ${SETTINGS.points} samples, ${SETTINGS.rides} rides; ${SETTINGS.rounds} rounds of ${fmt(SETTINGS.durationS / SETTINGS.rounds, 1)} s per side, warmup ${SETTINGS.warmupS} s, concurrency ${SETTINGS.connections}, pool ${SETTINGS.pool}; ${cpus().length} CPUs, load average ${loadavg()[0]?.toFixed(1)}`,
  );
  await ensureDatabase(url);
  const { db } = createDb(url, 4);
  const sqlDb = createDb(url, SETTINGS.connections).db;
  let user: { accountId: string; ldid: string } | undefined;
  try {
    await migrateToLatest(db);
    await seedReferentials(db);
    // A new user and activities each run (seconds to store).
    const data = await loadStreamsData(db);
    user = data.user;
    const userId = user.ldid;
    const day = { id: data.day };
    const rides = data.rides;
    const { rows } = await sql<{ kb: number }>`
      select (pg_column_size(d.elapsed) + (select sum(pg_column_size(c."values")) from activity_stream_channels c
        where c.activity_id = ${day.id})) / 1024 as kb
      from activity_datastreams d where d.activity_id = ${day.id}`.execute(db);
    log(
      `data: one activity of ${SETTINGS.points} samples × ${data.channels} channels (streams stored in ${fmt(Number(rows[0]?.kb), 0)} kB, lz4), ${SETTINGS.rides} rides of ${RIDE_SECONDS} samples with their records`,
    );
    const previewSql = streamsQuery(day.id, userId, undefined, true);
    const previewBytes = (await copyBinaryRows(poolOf(db), previewSql)).reduce((n, r) => n + (r[3]?.length ?? 0), 0);
    log(`bytes read at low: the preview, ${bytes(previewBytes)}`);
    const splitsSql = rides.map((id) =>
      streamsQuery(id, userId, [DATATYPE.HR_CURRENT, DATATYPE.DISTANCE, DATATYPE.ELEVATION_CURRENT], false),
    );
    const effortsSql = rides.map((id) => ({ name: 'tracking_best_efforts', text: BEST_EFFORTS, values: [id, userId] }));
    const sqlPool = poolOf(sqlDb);
    let streamsBytes = 0;
    const results = await compareReads(
      url,
      async ({ api }) => {
        const caller = await trackingCaller(db, api, (user as { accountId: string }).accountId, 'streams');
        const path = `/v2/activities/${day.id}/streams?resolution=low`;
        const answer = await fetch(`${api}${path}`, { headers: caller.headers });
        streamsBytes = (await answer.arrayBuffer()).byteLength;
        const credentials = () => findTrackingCredentials(sqlDb, caller.credentials);
        const perRide = (suffix: string) =>
          rides.map((id) => ({ path: `/v2/activities/${id}/${suffix}`, headers: caller.headers }));
        const reads: ReadCase[] = [
          {
            label: 'streams of a 24 h activity at low (GET /v2/activities/{id}/streams)',
            requests: [{ path, headers: caller.headers }],
            sql: async () => {
              await credentials();
              return copyBinaryRows(sqlPool, previewSql);
            },
          },
          {
            label: 'laps of a one-hour ride (GET /v2/activities/{id}/laps)',
            requests: perRide('laps'),
            sql: async (i) => {
              await credentials();
              return readActivityContent(sqlDb, rides[i % rides.length] as string, userId);
            },
          },
          {
            label: 'km splits of a one-hour ride (GET /v2/activities/{id}/splits)',
            requests: perRide('splits'),
            sql: async (i) => {
              await credentials();
              return copyBinaryRows(sqlPool, splitsSql[i % rides.length] as string);
            },
          },
          {
            label: 'best efforts of a one-hour ride (GET /v2/activities/{id}/best_efforts)',
            requests: perRide('best_efforts'),
            sql: async (i) => {
              await credentials();
              const q = effortsSql[i % rides.length] as (typeof effortsSql)[number];
              return sqlPool.query(q);
            },
          },
        ];
        return reads;
      },
      log,
    );
    const small = streamsBytes > 0 && streamsBytes < GOAL_BYTES;
    log(`\ngoal: the streams answer at low < ${GOAL_BYTES} bytes: ${small ? 'PASS' : 'FAIL'} (${streamsBytes})`);
    return { failed: !(small && results.every((r) => r.ok)) };
  } finally {
    if (user) await db.deleteFrom('accounts').where('id', '=', user.accountId).execute();
    await sqlDb.destroy();
    await db.destroy();
  }
}
