import type { Db } from '../../shared/db/database.ts';
import { type ActivityContent, DATATYPE, emptyDatastream, emptyTrack } from '../../shared/tracking/activities/data.ts';
import { createActivity } from '../../shared/tracking/activities/store.ts';
import { createTestAccount } from './tokens.ts';

/** Users and activities for the records tests. */

/**
 * Stores an activity of `userId` as the API's create does (its outbox rows included), without
 * the metadata a test does not need (device, connector, comment, tags, images, place).
 */
export function storeActivity(db: Db, userId: string, content: ActivityContent) {
  return createActivity(db, userId, {
    userId,
    userDeviceId: null,
    connectorId: null,
    comment: null,
    userSession: null,
    images: [],
    tags: null,
    location: null,
    content,
  });
}

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

/**
 * Stores an activity (version 1) through the activities' own store, without its outbox job: the
 * records tests run the job themselves. Returns its id.
 */
export async function insertActivity(db: Db, a: FixtureActivity): Promise<string> {
  const datastream = a.distance
    ? {
        elapsed: Int32Array.from(a.distance.elapsed),
        channels: new Map([[DATATYPE.DISTANCE as number, Float64Array.from(a.distance.metres)]]),
      }
    : emptyDatastream();
  const track = a.track
    ? {
        elapsed: Int32Array.from(a.track.elapsed),
        latitude: Float64Array.from(a.track.latitude),
        longitude: Float64Array.from(a.track.longitude),
        elevation: new Float64Array(a.track.elapsed.length).fill(Number.NaN),
      }
    : emptyTrack();
  const content: ActivityContent = {
    sportId: a.sportId,
    name: null,
    startdate: a.startdate,
    duration: a.distance?.elapsed.at(-1) ?? a.track?.elapsed.at(-1) ?? 0,
    summaries: new Map(Object.entries(a.summaries ?? {}).map(([k, v]) => [Number(k), v])),
    datastream,
    track,
  };
  const row = await storeActivity(db, a.userId, content);
  await db.deleteFrom('outbox').where('job_id', '=', `records-${row.id}-v${row.version}`).execute();
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
