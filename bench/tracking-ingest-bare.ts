import type pg from 'pg';
import { channelBytes, int4ArrayParam, trackToEwkb } from '../shared/tracking/activities/binary.ts';
import { datastreamFromJson, summariesFromJson, trackFromJson } from '../shared/tracking/activities/content.ts';
import { deriveActivityFields } from '../shared/tracking/activities/derived.ts';
import type { ActivityBody } from '../shared/tracking/body/activity-body.ts';
import { parseActivityBody } from '../shared/tracking/body/parse.ts';
import { iri, parseIri } from '../shared/tracking/iri.ts';
import type { BareRoute } from './bare-server.ts';

/**
 * tracking-ingest's plain INSERT of an activity's rows, shared by the benchmark's SQL side (rows
 * built before the load) and the bare server's POST /v2/activities (rows built per request from
 * the parsed body). Kept apart from bench/tracking-ingest.ts so the bare server's process imports
 * only this.
 */

export type Json = Record<string, unknown>;

/** The rows a POST of `body` stores, as parameters ready for a plain INSERT. */
export function plainRows(body: Json) {
  return rowsOf(body, datastreamFromJson(body.datastream as Json), trackFromJson(body.locations as Json));
}

/** The same rows from a body whose streams are already columns. */
function rowsOf(body: Json, datastream: ActivityBody['datastream'], track: ActivityBody['track']) {
  const summaries = summariesFromJson(body.dataSummaries as Json);
  const derived = deriveActivityFields({ summaries, datastream, track }, null);
  return {
    activity: [
      body.name,
      body.startdate,
      body.duration,
      JSON.stringify(body.dataSummaries),
      derived.available_datatypes,
      derived.latitude,
      derived.longitude,
      derived.elevation,
    ],
    points: track.elapsed.length,
    track: trackToEwkb(track),
    elapsed: int4ArrayParam(datastream.elapsed),
    channels: [...datastream.channels].map(([id, values]) => [id, channelBytes(values)] as const),
  };
}

export type PlainRows = ReturnType<typeof plainRows>;

/**
 * One plain INSERT of an activity's rows, as a transaction of the same statements the store runs;
 * resolves to the new activity's id.
 */
export async function plainInsert(pool: pg.Pool, userId: string, rows: PlainRows): Promise<string> {
  const client = await pool.connect();
  try {
    await client.query('begin');
    const inserted = await client.query<{ id: string }>(
      // kept_duplicate: the same rows again and again, as the API side posts with ?duplicates=keep.
      `insert into activities (user_id, sport_id, manual, name, startdate, duration, data_summaries, available_datatypes,
         track_flag, datastream_flag, latitude, longitude, elevation, kept_duplicate)
       values ($1, 121, true, $2, $3, $4, $5, $6, true, true, $7, $8, $9, true) returning id`,
      [userId, ...rows.activity],
    );
    const id = inserted.rows[0]?.id as string;
    await client.query('insert into activity_tracks (activity_id, points, track) values ($1, $2, $3::geometry)', [
      id,
      rows.points,
      rows.track,
    ]);
    await client.query('insert into activity_datastreams (activity_id, elapsed) values ($1, $2::int4[])', [
      id,
      rows.elapsed,
    ]);
    const values = rows.channels.map((_, i) => `($1, $${2 + i * 2}::int, $${3 + i * 2}::bytea)`).join(', ');
    await client.query(`insert into activity_stream_channels (activity_id, datatype_id, "values") values ${values}`, [
      id,
      ...rows.channels.flat(),
    ]);
    await client.query(
      `insert into outbox (queue, job_name, job_id, payload) values ('records', 'activity-changed', $1, $2)`,
      [`records-${id}-v1`, JSON.stringify({ activityId: id, userId, sportId: 121, version: 1, change: 'created' })],
    );
    await client.query('commit');
    return id;
  } catch (e) {
    await client.query('rollback');
    throw e;
  } finally {
    client.release();
  }
}

/**
 * The bare server's route (bench/bare-server.ts): POST /v2/activities, the body read by the
 * API's own parser (shared/tracking/body/parse.ts: reading the streams is the work itself, not
 * the framework's), its rows inserted by {@link plainInsert}; answers 201 with the activity's IRI
 * and id. No authentication, no validation: the user is the body's `user` IRI.
 */
export function bareRoute(): BareRoute {
  return (url, _headers, body) => {
    if (url.pathname !== '/v2/activities' || body === undefined) return undefined;
    const parsed = parseActivityBody(body);
    const activity = parsed.body as Json;
    const userId = parseIri(String(activity.user), 'users');
    if (userId === undefined) throw new Error('user must be a /v2/users/{id} IRI');
    const rows = rowsOf(activity, parsed.datastream, parsed.track);
    return {
      status: 201,
      run: async (pool) => {
        const id = await plainInsert(pool, userId, rows);
        return JSON.stringify({ '@id': iri('activities', id), id });
      },
    };
  };
}
