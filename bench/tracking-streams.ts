import { cpus, loadavg } from 'node:os';
import { sql } from 'kysely';
import pg from 'pg';
import { issueApiKey } from '../shared/accounts/api-keys.ts';
import { registerClient } from '../shared/accounts/clients.ts';
import { issueOperatorToken } from '../shared/auth/operator-tokens.ts';
import { copyBinaryRows } from '../shared/db/copy-binary.ts';
import { ensureDatabase } from '../shared/db/create-database.ts';
import { createDb } from '../shared/db/database.ts';
import { migrateToLatest } from '../shared/db/migrate.ts';
import { seedReferentials } from '../shared/db/referentials.ts';
import { type ActivityContent, DATATYPE } from '../shared/tracking/activities/data.ts';
import { createActivity } from '../shared/tracking/activities/store.ts';
import { streamsQuery } from '../shared/tracking/streams/read.ts';
import {
  benchDatabaseUrl,
  combineRounds,
  envNumber,
  loadSettings,
  runAutocannon,
  startApiProcess,
  stopApiProcess,
} from './harness.ts';
import { bytes, closedLoop, fmt, type LoadStats } from './stats.ts';
import { benchUser } from './tracking-records-data.ts';

/**
 * bench/tracking-streams (docs/tracking-activities.md, "Streams by datatype and resolution"):
 * `GET /v2/activities/{id}/streams?resolution=low` of a 24-hour activity at 1 Hz (every channel:
 * heart rate, distance, speed, cadence, power, elevation, laps) through the API at 16
 * connections, beside bare SQL reads through a pg pool of the same size (the API's own statement,
 * a binary COPY, without downsampling or HTTP): of what the API reads, the activity's stored
 * preview, and of the whole stored streams (what a read without the preview would take), in
 * alternating rounds. Goals: API p99 ≤ 30 ms, and the answer under 10 KB.
 */

const SETTINGS = {
  points: Math.round(envNumber('BENCH_STREAMS_POINTS', 86_400)),
  ...loadSettings(),
};
const GOAL_P99_MS = 30;
const GOAL_BYTES = 10 * 1024;

/** A day of 1 Hz samples with a plausible random walk (seeded: every run stores the same data). */
export function dayActivity(n: number): ActivityContent {
  let seed = 42;
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
        [DATATYPE.LAP, Float64Array.from({ length: n }, (_, i) => (i % 3600 === 3599 ? 1 : Number.NaN))],
      ]),
    },
    track: { elapsed, latitude, longitude, elevation },
  };
}

const line = (label: string, s: LoadStats) =>
  `${label.padEnd(34)} ${fmt(s.rps, 0).padStart(6)} req/s  p50 ${fmt(s.p50, 1)} ms  p99 ${fmt(s.p99, 1)} ms  (${s.count} done, ${s.errors} errors)`;

export async function run(): Promise<{ failed: boolean }> {
  const log = (s: string) => console.log(s);
  const url = benchDatabaseUrl('BENCH_STREAMS_DATABASE_URL', 'sports_bench_streams');
  log(
    `tracking-streams benchmark: ${SETTINGS.points} samples, ${SETTINGS.rounds} rounds of ${fmt(SETTINGS.durationS / SETTINGS.rounds, 1)} s per side, warmup ${SETTINGS.warmupS} s, concurrency ${SETTINGS.connections}; ${cpus().length} CPUs, load average ${loadavg()[0]?.toFixed(1)}`,
  );
  await ensureDatabase(url);
  const { db } = createDb(url, 4);
  const pool = new pg.Pool({ connectionString: url, max: SETTINGS.connections, idleTimeoutMillis: 0 });
  let api: Awaited<ReturnType<typeof startApiProcess>> | undefined;
  try {
    await migrateToLatest(db);
    await seedReferentials(db);
    // A new user and activity each run (the data is one activity: seconds to store).
    const user = await benchUser(db, 'streams');
    const content = dayActivity(SETTINGS.points);
    const row = await createActivity(db, user.ldid, {
      userId: user.ldid,
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
    const { rows } = await sql<{ kb: number }>`
      select (pg_column_size(d.elapsed) + (select sum(pg_column_size(c."values")) from activity_stream_channels c
        where c.activity_id = ${row.id})) / 1024 as kb
      from activity_datastreams d where d.activity_id = ${row.id}`.execute(db);
    log(
      `data: one activity, ${SETTINGS.points} samples × ${content.datastream.channels.size} channels; streams stored in ${fmt(Number(rows[0]?.kb), 0)} kB (lz4)`,
    );

    api = await startApiProcess(url, 'tracking', SETTINGS.connections);
    const client = await registerClient(db, {
      client_name: 'streams bench',
      redirect_uris: ['https://bench.test/cb'],
      firstParty: true,
    });
    const { api_key: apiKey } = await issueApiKey(db, client.client_id, 'bench');
    const token = await issueOperatorToken(
      db,
      { issuer: api.url, AUTH_AUDIENCE: 'sports-api' },
      { accountId: user.accountId, clientId: client.client_id, ttlSeconds: 3600 },
    );
    const headers = { authorization: `Bearer ${token}`, 'x-api-key': apiKey };
    const path = `/v2/activities/${row.id}/streams?resolution=low`;
    const probe = await fetch(`${api.url}${path}`, { headers });
    const body = await probe.text();
    if (probe.status !== 200) throw new Error(`GET ${path}: ${probe.status} ${body.slice(0, 300)}`);
    const answer = JSON.parse(body) as { size: number; values: Record<string, unknown[]> };
    const full = await fetch(`${api.url}/v2/activities/${row.id}`, { headers });
    const fullBytes = (await full.arrayBuffer()).byteLength;
    log(
      `answer at low: ${body.length} bytes, ${answer.size} samples × ${Object.keys(answer.values).length} channels (the whole activity, GET /v2/activities/{id}: ${bytes(fullBytes)})`,
    );

    const previewSql = streamsQuery(row.id, user.ldid, undefined, true);
    const streamsSql = streamsQuery(row.id, user.ldid, undefined, false);
    const previewRead = () => copyBinaryRows(pool, previewSql);
    const streamsRead = () => copyBinaryRows(pool, streamsSql);
    const previewBytes = (await previewRead()).reduce((n, r) => n + (r[3]?.length ?? 0), 0);
    const streamsBytes = (await streamsRead()).reduce((n, r) => n + (r[3]?.length ?? 0), 0);
    log(`bytes read: preview ${bytes(previewBytes)}, whole streams ${bytes(streamsBytes)}`);
    const requests = [{ path, headers }];
    await runAutocannon(api.url, requests, SETTINGS.warmupS, SETTINGS.connections);
    await closedLoop(SETTINGS.connections, SETTINGS.warmupS, previewRead);
    const slice = SETTINGS.durationS / SETTINGS.rounds;
    const sides = { api: [] as LoadStats[], preview: [] as LoadStats[], streams: [] as LoadStats[] };
    for (let r = 0; r < SETTINGS.rounds; r++) {
      sides.api.push(await runAutocannon(api.url, requests, slice, SETTINGS.connections));
      sides.preview.push(await closedLoop(SETTINGS.connections, slice, previewRead));
      sides.streams.push(await closedLoop(SETTINGS.connections, slice, streamsRead));
    }
    const a = combineRounds(sides.api);
    const p = combineRounds(sides.preview);
    const s = combineRounds(sides.streams);
    log(line('API GET .../streams?resolution=low', a));
    log(line('bare SQL read of the preview', p));
    log(line('bare SQL read of the whole streams', s));
    log(
      `API / bare preview read throughput: ${fmt((a.rps / p.rps) * 100, 0)} %; API / whole streams read: ${fmt(a.rps / s.rps, 1)} x; load average ${loadavg()[0]?.toFixed(1)}`,
    );
    const fast = a.count > 0 && a.p99 <= GOAL_P99_MS && a.errors === 0;
    const small = body.length < GOAL_BYTES;
    log(`goal: API p99 ≤ ${GOAL_P99_MS} ms: ${fast ? 'PASS' : 'FAIL'} (${fmt(a.p99, 1)} ms)`);
    log(`goal: answer < ${GOAL_BYTES} bytes: ${small ? 'PASS' : 'FAIL'} (${body.length})`);
    await db.deleteFrom('accounts').where('id', '=', user.accountId).execute();
    return { failed: !(fast && small) };
  } finally {
    if (api) await stopApiProcess(api.child);
    await pool.end();
    await db.destroy();
  }
}
