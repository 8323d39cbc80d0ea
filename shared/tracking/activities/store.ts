import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import type { Db } from '../../db/database.ts';
import type { ActivityRow, Visibility } from '../../db/schema/tracking.ts';
import { conflictError, type FieldError, invalid, notFoundError } from '../../errors.ts';
import { job } from '../../queue/jobs.ts';
import { outboxInsert } from '../../queue/outbox-write.ts';
import { type ReportedDevice, resolveReportedDevice } from '../devices/reported.ts';
import { equipmentProblems, newActivityGear } from '../gear/activity-gear.ts';
import { iri } from '../iri.ts';
import { previewRows } from '../streams/preview-store.ts';
import { trackingWork } from '../unit-of-work.ts';
import { channelBytes, int4ArrayParam, trackToEwkb } from './binary.ts';
import { availableDatatypesWith, changeProblems } from './changes.ts';
import { contentLimitProblems } from './content.ts';
import type { ActivityContent } from './data.ts';
import { deriveActivityFields } from './derived.ts';
import {
  DuplicateActivityError,
  type DuplicatePolicy,
  type DuplicateProbe,
  findDuplicate,
  noDuplicateOf,
  trackBoxOf,
} from './duplicates.ts';
import { movingColumns, movingFieldsForSport, movingRuleFor } from './moving-store.ts';
import { type MovingFields, movingFields } from './moving-time.ts';
import { referenceProblems } from './references.ts';
import { sameFamilySports } from './sport-family.ts';
import { trackThumbnailJob } from './thumbnail-job.ts';
import { buryActivity } from './tombstones.ts';

/**
 * Activities and their streams in PostgreSQL (docs/tracking-activities.md): one `activities` row
 * (summaries, derived fields, a version bumped by every write), the GPS track as one PostGIS
 * LineStringZM, the datastream as one array of elapsed seconds with, per datatype, its values as
 * float64 bytes (migration 0047). Every write goes with its outbox jobs, atomically: a create in
 * one statement, an update or a delete in one transaction.
 */

/** An activity as a create sends it (ids taken from their IRIs), its content already parsed. */
export interface ActivityInput {
  /** The user the body names: it must be the caller. */
  userId: string;
  userDeviceId: string | null;
  connectorId: number | null;
  /** Sent `manual`, when sent: it must agree with the device (manual ⇔ no device). */
  manual?: boolean | undefined;
  comment: string | null;
  userSession: string | null;
  images: string[];
  tags: string[] | null;
  /** The spec's `location` object, stored as sent. */
  location: Record<string, unknown> | null;
  /**
   * The device the `location.device` block names, if it names one: the caller's device of that
   * model and serial, registered when they have none (devices/reported.ts).
   */
  reportedDevice?: ReportedDevice | null | undefined;
  content: ActivityContent;
  /** SHA-256 of the file the activity is imported from (none for a JSON create). */
  fileSha256?: Uint8Array | null | undefined;
  /** A duplicate of a stored activity (duplicates.ts) is refused unless this is `keep`. */
  duplicates?: DuplicatePolicy | undefined;
  /** The caller's gear it was done with; undefined: the gear auto-assigned to its sport (gear/activity-gear.ts). */
  equipmentIds?: string[] | undefined;
  /**
   * A file of a bulk import: no `activity_create` event (the bulk import's one `import_done`
   * stands for its files: shared/tracking/jobs/job-effects.ts). Its records and thumbnail jobs
   * are written as for any activity: they work by deltas, as cheap in a bulk as alone.
   */
  withoutEvent?: boolean | undefined;
  /** Who sees it beside its owner; what is left out is the user's default (sharing/visibility.ts). */
  visibility?: VisibilityChoice | undefined;
}

/** An activity's visibility, its map's, and the metres of track hidden at each end. */
export interface VisibilityChoice {
  visibility?: Visibility | undefined;
  mapVisibility?: Visibility | undefined;
  mapHiddenEnds?: number | undefined;
}

/** What a PUT may change; absent members keep their value. */
export interface ActivityChanges extends VisibilityChoice {
  name?: string | null;
  comment?: string | null;
  tags?: string[] | null;
  images?: string[];
  thumbnail?: string | null;
  sportId?: number;
  /** The caller's gear (replaces the list). */
  equipmentIds?: string[];
  /** The `dataSummaries` (replace them). */
  summaries?: Map<number, number>;
}

const notFound = (id: string) => notFoundError(`No activity ${id}`);

type Change = 'created' | 'updated' | 'deleted';

/** The outbox job of a change: the records of the activity's sport (and of its old sport) follow it. */
function activityChanged(
  row: Pick<ActivityRow, 'id' | 'user_id' | 'sport_id'>,
  change: Change,
  version: number,
  previousSportId: number | null = null,
) {
  return job('records', 'activity-changed', {
    activityId: row.id,
    userId: row.user_id,
    sportId: row.sport_id,
    version,
    change,
    previousSportId,
  });
}

/** The workers' jobs of a new activity: its records (with statistics, gear and challenges) and its thumbnail. */
const createdActivityJobs = (created: Pick<ActivityRow, 'id' | 'user_id' | 'sport_id' | 'version'>) => [
  activityChanged(created, 'created', created.version),
  trackThumbnailJob(created),
];

/**
 * The rules that need no database: the body's user is the caller, a device activity (userDevice,
 * or a `location.device` block naming one) names its connector and is not manual.
 */
function inputProblems(callerId: string, input: ActivityInput): FieldError[] {
  const errors: FieldError[] = [];
  const declared = [
    ...(input.userDeviceId !== null ? ['userDevice'] : []),
    ...(input.reportedDevice ? ['location.device'] : []),
  ].join(' and ');
  if (input.userId !== callerId)
    errors.push({ path: 'body.user', message: `must be your own user, ${iri('users', callerId)}` });
  if (declared && input.connectorId === null)
    errors.push({ path: 'body.connector', message: `is required for an activity recorded by a device (${declared})` });
  if (input.manual === true && declared)
    errors.push({ path: 'body.manual', message: `must be false for an activity recorded by a device (${declared})` });
  if (input.manual === false && !declared)
    errors.push({ path: 'body.userDevice', message: 'is required when the activity is not manual' });
  if (input.reportedDevice && input.location?.manual === true)
    errors.push({ path: 'body.location.manual', message: 'must be false when location.device names a device' });
  // Checked by each reader already; here too, so that no writer stores more than an activity may hold.
  errors.push(...contentLimitProblems(input.content));
  return errors;
}

/** A new activity's id: the same 32 hex digits as the column's default, known before the insert. */
const newActivityId = () => randomUUID().replaceAll('-', '');

/** A new activity's version: set by the insert, so that its outbox jobs can name it beforehand. */
const FIRST_VERSION = 1;

/**
 * The activity row, its streams and its outbox jobs in one statement (one round trip whatever the
 * streams, and atomic without a transaction): the track, the elapsed seconds, the channels and
 * the jobs are inserted from the activity the first CTE inserts, so nothing is written when it is
 * not. It is not (undefined then) when `userDevice` is not one of the caller's devices, or when
 * the activity duplicates one of the caller's (unless kept): one stored before the statement
 * began is seen by its `not exists`, one committed while it runs by the unique indexes of
 * migration 0057 (`on conflict do nothing` waits for it). Streams go as binary parameters (see
 * binary.ts).
 */
async function insertActivity(
  db: Db,
  callerId: string,
  input: ActivityInput,
  probe: DuplicateProbe,
  moving: MovingFields,
): Promise<ActivityRow | undefined> {
  const { content } = input;
  // The id is known before the insert, so the jobs (which name it) are written by the same statement.
  const id = newActivityId();
  const created = { id, user_id: callerId, sport_id: content.sportId, version: FIRST_VERSION };
  const jobs = outboxInsert(createdActivityJobs(created), 'a');
  const { datastream, track } = content;
  const derived = deriveActivityFields(content, input.userDeviceId);
  const ewkb = trackToEwkb(track);
  const channels = [...datastream.channels].map(
    ([datatypeId, values]) => sql`(${datatypeId}::int, ${channelBytes(values)}::bytea)`,
  );
  // A long activity's preview, for low-resolution reads (shared/tracking/streams/preview.ts).
  const preview = previewRows(datastream);
  const device = input.userDeviceId;
  const keep = input.duplicates === 'keep';
  const sha256 = probe.fileSha256 === null ? null : Buffer.from(probe.fileSha256);
  const gear = newActivityGear(callerId, content, input.equipmentIds);
  const result = await sql<ActivityRow>`
    with g as (${gear.cte}), a as (
      insert into activities (id, user_id, sport_id, user_device_id, connector_id, name, startdate, duration,
        comment, user_session, images, tags, manual, location, data_summaries, available_datatypes,
        track_flag, datastream_flag, latitude, longitude, elevation, version, file_sha256, kept_duplicate,
        moving_time, pauses, moving_speed_avg, moving_pace, equipment_ids, visibility, map_visibility, map_hidden_ends)
      select ${id}, ${callerId}, ${content.sportId}::int, ${device}::text, ${input.connectorId}::int,
        ${content.name}::text, ${content.startdate}::timestamptz, ${content.duration}::int, ${input.comment}::text,
        ${input.userSession}::text, ${input.images}::text[], ${input.tags}::text[], ${derived.manual},
        ${JSON.stringify(input.location)}::jsonb, ${JSON.stringify(Object.fromEntries(content.summaries))}::jsonb,
        ${derived.available_datatypes}::int[], ${derived.track_flag}, ${derived.datastream_flag},
        ${derived.latitude}::float8, ${derived.longitude}::float8, ${derived.elevation}::float8, ${FIRST_VERSION}::int,
        ${sha256}::bytea, ${keep}, ${moving.moving_time}::int, ${JSON.stringify(moving.pauses)}::jsonb,
        ${moving.moving_speed_avg}::float8, ${moving.moving_pace}::float8, ${gear.ids},
        coalesce(${input.visibility?.visibility ?? null}::text, u.default_visibility),
        coalesce(${input.visibility?.mapVisibility ?? null}::text, u.default_map_visibility),
        coalesce(${input.visibility?.mapHiddenEnds ?? null}::int, u.default_map_hidden_ends)
      from tracking_users u
      where u.id = ${callerId} and ${gear.found} and (${device}::text is null
          or exists (select 1 from user_devices where id = ${device}::text and user_id = ${callerId}))
        and ${keep ? sql`true` : noDuplicateOf(callerId, probe)}
      on conflict do nothing
      returning *
    )${
      ewkb
        ? sql`, t as (
      insert into activity_tracks (activity_id, points, track)
      select a.id, ${track.elapsed.length}::int, ${ewkb}::geometry from a
    )`
        : sql``
    }${
      datastream.elapsed.length > 0
        ? sql`, d as (
      insert into activity_datastreams (activity_id, elapsed)
      select a.id, ${int4ArrayParam(datastream.elapsed)}::int4[] from a
    )`
        : sql``
    }${
      channels.length > 0
        ? sql`, c as (
      insert into activity_stream_channels (activity_id, datatype_id, "values")
      select a.id, v.datatype_id, v.bytes from a, (values ${sql.join(channels)}) as v (datatype_id, bytes)
    )`
        : sql``
    }${
      preview.length > 0
        ? sql`, p as (
      insert into activity_stream_previews (activity_id, datatype_id, samples, "values")
      select a.id, v.datatype_id, v.samples, v.bytes from a, (values ${sql.join(preview)}) as v (datatype_id, samples, bytes)
    )`
        : sql``
    }${jobs ? sql`, o as (${jobs})` : sql``}
    select * from a`.execute(db);
  return result.rows[0];
}

/** Why the insert wrote nothing: a device or gear that is not the caller's (422), a duplicate (409), or neither. */
async function refusal(
  db: Db,
  callerId: string,
  device: string | null,
  equipmentIds: string[] | undefined,
  probe: DuplicateProbe,
): Promise<Error | null> {
  const gear = await equipmentProblems(db, callerId, equipmentIds ?? []);
  if (gear.length) return invalid(gear);
  if (device !== null) {
    const mine = await db
      .selectFrom('user_devices')
      .select('id')
      .where('id', '=', device)
      .where('user_id', '=', callerId)
      .executeTakeFirst();
    if (!mine)
      return invalid([
        { path: 'body.userDevice', message: `${iri('user_devices', device)} is not one of your devices` },
      ]);
  }
  const duplicate = await findDuplicate(db, callerId, probe);
  return duplicate ? new DuplicateActivityError(duplicate.id, duplicate.rule) : null;
}

/**
 * Stores a new activity of the caller with its streams and its outbox jobs, in one statement.
 * A broken rule is a 422 naming its field, a duplicate a conflict naming the stored activity
 * (DuplicateActivityError); nothing is written then, but for a device the `location.device` block
 * registered.
 */
export async function createActivity(db: Db, callerId: string, input: ActivityInput): Promise<ActivityRow> {
  const problems = inputProblems(callerId, input);
  if (problems.length) throw invalid(problems);
  const references = await referenceProblems(db, input);
  if (references.length) throw invalid(references);
  const userDeviceId = input.reportedDevice
    ? await resolveReportedDevice(db, callerId, input.reportedDevice, 'body.location.device', input.userDeviceId)
    : input.userDeviceId;
  const stored = { ...input, userDeviceId };
  const probe: DuplicateProbe = {
    startdate: input.content.startdate,
    duration: input.content.duration,
    fileSha256: input.fileSha256 ?? null,
    sportIds: sameFamilySports(input.content.sportId),
    trackBox: trackBoxOf(input.content.track.latitude, input.content.track.longitude),
  };
  // Moving time and pauses (moving-time.ts), stored beside the derived fields.
  const moving = movingFields(input.content, await movingRuleFor(db, input.content.sportId));
  // A conflicting activity deleted between the insert and the look for it: the insert runs again.
  for (let round = 0; round < 3; round++) {
    const row = await trackingWork(db, async (uow) => {
      const inserted = await insertActivity(uow.trx, callerId, stored, probe, moving);
      if (inserted) uow.wroteJobs();
      if (inserted && !input.withoutEvent) uow.emit({ type: 'ActivityCreated', activity: inserted });
      return inserted;
    });
    if (row) return row;
    const refused = await refusal(db, callerId, userDeviceId, input.equipmentIds, probe);
    if (refused) throw refused;
  }
  throw conflictError('The activity collided with others being deleted at the same time: send it again');
}

/**
 * Changes what a PUT may change (name, comment, tags, images, thumbnail, sport, gear, summaries)
 * of the caller's activity. A call that changes something bumps the version and writes the
 * outbox job (with the previous sport when the sport changed); one that changes nothing writes
 * nothing.
 */
export async function updateActivity(
  db: Db,
  callerId: string,
  id: string,
  changes: ActivityChanges,
): Promise<ActivityRow> {
  return trackingWork(db, async (uow) => {
    const { trx } = uow;
    const current = await trx
      .selectFrom('activities')
      .selectAll()
      .where('id', '=', id)
      .where('user_id', '=', callerId)
      .forUpdate()
      .executeTakeFirst();
    if (!current) throw notFound(id);
    const problems = await changeProblems({ db, trx }, callerId, current, changes);
    if (problems.length) throw invalid(problems);
    const next = {
      name: changes.name === undefined ? current.name : changes.name,
      comment: changes.comment === undefined ? current.comment : changes.comment,
      tags: changes.tags === undefined ? current.tags : changes.tags,
      images: changes.images ?? current.images,
      thumbnail: changes.thumbnail === undefined ? current.thumbnail : changes.thumbnail,
      sport_id: changes.sportId ?? current.sport_id,
      equipment_ids: changes.equipmentIds ? [...new Set(changes.equipmentIds)] : current.equipment_ids,
      data_summaries: changes.summaries ? Object.fromEntries(changes.summaries) : current.data_summaries,
      visibility: changes.visibility ?? current.visibility,
      map_visibility: changes.mapVisibility ?? current.map_visibility,
      map_hidden_ends: changes.mapHiddenEnds ?? current.map_hidden_ends,
    };
    const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);
    if ((Object.keys(next) as (keyof typeof next)[]).every((k) => same(next[k], current[k]))) return current;
    // Another sport may follow another moving rule, another distance gives other averages:
    // recomputed from the stored streams then.
    const summariesChange = !same(next.data_summaries, current.data_summaries);
    const moving =
      next.sport_id !== current.sport_id || summariesChange
        ? await movingFieldsForSport(trx, current, next.sport_id, next.data_summaries)
        : undefined;
    const row = await trx
      .updateTable('activities')
      .set({
        ...next,
        data_summaries: JSON.stringify(next.data_summaries),
        ...(summariesChange ? { available_datatypes: await availableDatatypesWith(trx, id, next.data_summaries) } : {}),
        ...(moving ? movingColumns(moving) : {}),
        version: sql<number>`version + 1`,
        updated_at: sql<Date>`now()`,
      })
      .where('id', '=', id)
      .where('user_id', '=', callerId)
      .returningAll()
      .executeTakeFirstOrThrow();
    const previousSportId = row.sport_id !== current.sport_id ? current.sport_id : null;
    // The thumbnail follows the sport (placeholders differ by sport) and comes back when the user clears theirs.
    const redraw = previousSportId !== null || (row.thumbnail === null && current.thumbnail !== null);
    uow.enqueue(
      activityChanged(row, 'updated', row.version, previousSportId),
      ...(redraw ? [trackThumbnailJob(row)] : []),
    );
    uow.emit({ type: 'ActivityUpdated', activity: row });
    return row;
  });
}

/**
 * Deletes the caller's activity (its streams and records go with it), leaves its tombstone for
 * the sync clients (tombstones.ts) and tells the records job, in one transaction.
 */
export async function deleteActivity(db: Db, callerId: string, id: string): Promise<void> {
  await trackingWork(db, async (uow) => {
    const row = await uow.trx
      .deleteFrom('activities')
      .where('id', '=', id)
      .where('user_id', '=', callerId)
      .returningAll()
      .executeTakeFirst();
    if (!row) throw notFound(id);
    await buryActivity(uow.trx, row);
    uow.enqueue(activityChanged(row, 'deleted', row.version + 1));
    uow.emit({ type: 'ActivityDeleted', activity: row });
  });
}
