import { sql } from 'kysely';
import type { Db } from '../shared/db/database.ts';
import { type ActivityContent, DATATYPE, emptyDatastream, emptyTrack } from '../shared/tracking/activities/data.ts';
import { createActivity } from '../shared/tracking/activities/store.ts';
import { prng } from './places-data.ts';

/** Running: a sport with distance records, so every activity here has some to compute. */
export const RUNNING = 121;

// ---- Activities like the ones watches record ----

export interface Samples {
  elapsed: Int32Array;
  distance: Float64Array;
  latitude: Float64Array;
  longitude: Float64Array;
  elevation: Float64Array;
}

/**
 * A run at 1 Hz: 3.2 m/s on average with slow changes of pace (±8 % over 10 minutes, ±5 % over
 * a minute and a half: terrain, fatigue), 0.4 m/s of noise each second, a 30-second stop every
 * 10 minutes (traffic lights), a slowly turning heading, and 0.3 m of position noise on the track
 * (what a watch's filtered GPS gives). `uniform`: the speed drawn each second from 2.5-4 m/s and
 * nothing else, the least favourable case for the pruning of the distance records (every stretch
 * of a given length lasts about as long as any other).
 */
export function runSamples(seconds: number, seed: number, uniform = false): Samples {
  const random = prng(seed);
  const n = seconds + 1;
  const s: Samples = {
    elapsed: new Int32Array(n),
    distance: new Float64Array(n),
    latitude: new Float64Array(n),
    longitude: new Float64Array(n),
    elevation: new Float64Array(n),
  };
  let lat = 45 + random();
  let lon = 6 + random();
  let total = 0;
  let heading = random() * 2 * Math.PI;
  const phase = random() * 1000;
  for (let i = 0; i < n; i++) {
    let v = 0;
    if (i > 0) {
      if (uniform) v = 2.5 + random() * 1.5;
      else if ((i + phase) % 600 >= 30)
        v = Math.max(
          0,
          3.2 * (1 + 0.08 * Math.sin((i + phase) / 600) + 0.05 * Math.sin((i + phase) / 97)) + (random() - 0.5) * 0.8,
        );
    }
    heading += (random() - 0.5) * 0.1;
    lat += (v * Math.cos(heading)) / 111_195;
    lon += (v * Math.sin(heading)) / (111_195 * Math.cos((lat * Math.PI) / 180));
    total += v;
    s.elapsed[i] = i;
    s.distance[i] = total;
    const jitter = uniform ? 0 : 0.3 / 111_195;
    s.latitude[i] = lat + (random() - 0.5) * jitter;
    s.longitude[i] = lon + (random() - 0.5) * jitter;
    s.elevation[i] = 100 + 20 * Math.sin(i / 900);
  }
  return s;
}

export function content(s: Samples, source: 'stream' | 'track'): ActivityContent {
  return {
    sportId: RUNNING,
    name: null,
    startdate: new Date(),
    duration: s.elapsed.length - 1,
    summaries: new Map([
      [DATATYPE.DISTANCE, s.distance.at(-1) as number],
      [DATATYPE.DURATION, s.elapsed.length - 1],
    ]),
    datastream:
      source === 'stream'
        ? { elapsed: s.elapsed, channels: new Map([[DATATYPE.DISTANCE as number, s.distance]]) }
        : emptyDatastream(),
    track:
      source === 'track'
        ? { elapsed: s.elapsed, latitude: s.latitude, longitude: s.longitude, elevation: s.elevation }
        : emptyTrack(),
  };
}

// ---- the stored data ----

export async function benchUser(db: Db, label: string): Promise<{ accountId: string; ldid: string }> {
  const account = await db
    .insertInto('accounts')
    .values({
      email: `bench-records-${label}-${Date.now()}@example.test`,
      first_name: 'Bench',
      last_name: label,
      roles: ['user'],
    })
    .returning(['id', 'ldid'])
    .executeTakeFirstOrThrow();
  await db
    .insertInto('tracking_users')
    .values({
      id: account.ldid,
      account_id: account.id,
      one_id: null,
      gender: null,
      language: null,
      country: null,
      image_url: null,
      birth_date: null,
      schedule_delete: null,
    })
    .execute();
  return { accountId: account.id, ldid: account.ldid };
}

/** 10,000 activities of 15 minutes, half with a distance stream and half with a track only, 100 users. */
export async function loadActivities(db: Db, count: number, log: (s: string) => void): Promise<void> {
  const started = Date.now();
  await sql`truncate activities cascade`.execute(db);
  const users: string[] = [];
  for (let u = 0; u < Math.max(1, Math.ceil(count / 100)); u++) users.push((await benchUser(db, `load${u}`)).ldid);
  const random = prng(3);
  for (let done = 0; done < count; ) {
    const batch = Math.min(200, count - done);
    const lengths = Array.from({ length: batch }, () => 600 + Math.floor(random() * 600));
    // Through the activities' own store (one transaction each), a few at a time.
    for (let k = 0; k < batch; k += 4)
      await Promise.all(
        lengths.slice(k, k + 4).map((seconds, m) => {
          const i = done + k + m;
          const withStream = i % 2 === 0;
          const c = content(runSamples(seconds, 100 + i), withStream ? 'stream' : 'track');
          c.startdate = new Date(Date.UTC(2025, 0, 1) + i * 3_600_000);
          const userId = users[i % users.length] as string;
          return createActivity(db, userId, {
            userId,
            userDeviceId: null,
            connectorId: null,
            comment: null,
            userSession: null,
            images: [],
            tags: null,
            location: null,
            content: c,
          });
        }),
      );
    done += batch;
    if (done % 2000 === 0 || done === count) log(`  ${done}/${count} activities loaded`);
  }
  // The activity-changed jobs of the load: the recomputation below does their work.
  await db.deleteFrom('outbox').where('queue', '=', 'records').execute();
  await sql`vacuum analyze activities`.execute(db);
  log(`data: ${count} activities loaded in ${((Date.now() - started) / 1000).toFixed(0)} s`);
}
