import { sql } from 'kysely';
import type { Db } from '../../shared/db/database.ts';
import { DATATYPE } from '../../shared/tracking/activity-data.ts';
import { createTestAccount } from './tokens.ts';

/** Activities written straight into the tables (migration 0040's layout), for the records tests and bench. */

/** A new account and its tracking user; returns the user id (the account's ldid). */
export async function insertTrackingUser(db: Db): Promise<string> {
  const account = await createTestAccount(db);
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
  return account.ldid;
}

export interface FixtureActivity {
  userId: string;
  sportId: number;
  startdate: Date;
  /** Datatype id to value. */
  summaries?: Record<number, number>;
  /** A datastream with one channel: cumulative distance (NaN: no value at that sample). */
  distance?: { elapsed: number[]; metres: number[] };
  track?: { elapsed: number[]; latitude: number[]; longitude: number[] };
}

async function writeStreams(db: Db, id: string, a: Pick<FixtureActivity, 'distance' | 'track'>): Promise<void> {
  if (a.distance) {
    await db.insertInto('activity_datastreams').values({ activity_id: id, elapsed: a.distance.elapsed }).execute();
    await db
      .insertInto('activity_stream_channels')
      .values({
        activity_id: id,
        datatype_id: DATATYPE.DISTANCE,
        values: a.distance.metres.map((v) => (Number.isNaN(v) ? null : v)),
      })
      .execute();
  }
  if (a.track) {
    const { elapsed, latitude, longitude } = a.track;
    await sql`
      insert into activity_tracks (activity_id, points, track)
      select ${id}, count(*), st_setsrid(st_makeline(array_agg(st_makepoint(lon, lat, 'NaN', m) order by m)), 4326)
      from unnest(${longitude}::float8[], ${latitude}::float8[], ${elapsed}::int[]) as u(lon, lat, m)`.execute(db);
  }
}

/** Inserts an activity (version 1) with its streams; returns its id. */
export async function insertActivity(db: Db, a: FixtureActivity): Promise<string> {
  const summaries = a.summaries ?? {};
  const row = await db
    .insertInto('activities')
    .values({
      user_id: a.userId,
      sport_id: a.sportId,
      startdate: a.startdate,
      duration: a.distance?.elapsed.at(-1) ?? a.track?.elapsed.at(-1) ?? 0,
      manual: true,
      data_summaries: JSON.stringify(summaries),
      available_datatypes: Object.keys(summaries).map(Number),
      datastream_flag: a.distance !== undefined,
      track_flag: a.track !== undefined,
      name: null,
      user_device_id: null,
      connector_id: null,
      comment: null,
      user_session: null,
      thumbnail: null,
      tags: null,
      global_challenge: null,
      location: JSON.stringify(null),
      latitude: null,
      longitude: null,
      elevation: null,
    })
    .returning('id')
    .executeTakeFirstOrThrow();
  await writeStreams(db, row.id, a);
  return row.id;
}

/**
 * Changes an activity as a write of the API would: new values, version + 1 (streams never change
 * after the creation). Returns the new version.
 */
export async function updateActivity(
  db: Db,
  id: string,
  change: Partial<Pick<FixtureActivity, 'sportId' | 'startdate' | 'summaries'>>,
): Promise<number> {
  const row = await db
    .updateTable('activities')
    .set((eb) => ({
      version: eb('version', '+', 1),
      updated_at: new Date(),
      ...(change.sportId !== undefined ? { sport_id: change.sportId } : {}),
      ...(change.startdate !== undefined ? { startdate: change.startdate } : {}),
      ...(change.summaries !== undefined ? { data_summaries: JSON.stringify(change.summaries) } : {}),
    }))
    .where('id', '=', id)
    .returning('version')
    .executeTakeFirstOrThrow();
  return row.version;
}
