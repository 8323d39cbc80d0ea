import { webcrypto } from 'node:crypto';
import { type RawBuilder, sql } from 'kysely';
import type { Db } from '../../db/database.ts';
import { DomainError } from '../../errors.ts';
import { iri } from '../iri.ts';

/**
 * Duplicate activities (docs/tracking-activities.md, "Duplicates"). A new activity duplicates a
 * stored one of the same user when
 *
 * - it is imported from a file whose bytes have the same SHA-256 as the file the stored one was
 *   imported from, or
 * - it starts in the same second (UTC, fractions dropped) and lasts the same whole seconds,
 *   whatever the input (JSON or file) of either, or
 * - both are imported from files and are near: the same session recorded by two devices (a
 *   watch's FIT and a phone's TCX) starts and lasts up to NEAR_SECONDS apart, in the same sport
 *   family (sport-family.ts), with tracks that overlap when both have one. JSON creates keep the
 *   exact rule: apps that send them know their own starts, and may log short sessions back to back.
 *
 * A duplicate is refused unless the client asks to keep it. Both lookups are one probe of the
 * unique indexes of migration 0057, which also stop two identical creates sent at once; the near
 * rule is one range probe of `activities_user_startdate_idx` (no unique index can say "near").
 */

/** Seconds two recordings of one session may differ by, on their start and on their duration. */
export const NEAR_SECONDS = 2;

/** Degrees a track's bounding box is widened by before another's must meet it (about 100 m). */
const TRACK_MARGIN_DEGREES = 0.001;

/** What a create does with a duplicate: refuse it (409, the default) or store it beside the other. */
export const DUPLICATE_POLICIES = ['refuse', 'keep'] as const;
export type DuplicatePolicy = (typeof DUPLICATE_POLICIES)[number];

/** Which rule made an activity a duplicate. */
export type DuplicateRule = 'file' | 'start-duration' | 'near';

/** What a new activity is compared on. */
export interface DuplicateProbe {
  startdate: Date;
  duration: number;
  /** The imported file's SHA-256; null for a JSON create. */
  fileSha256: Uint8Array | null;
  /** The sports the near rule compares with (sameFamilySports); null: any. */
  sportIds: number[] | null;
  /** The track's bounding box [west, south, east, north]; null without a track. */
  trackBox: [number, number, number, number] | null;
}

const SAME: Record<DuplicateRule, string> = {
  file: 'was imported from the same file',
  'start-duration': 'has the same start (to the second) and duration',
  near: `starts and lasts within ${NEAR_SECONDS} s of this one, in the same sport family, on the same ground`,
};

/** The new activity duplicates the caller's activity `existingId`: a conflict naming it. */
export class DuplicateActivityError extends DomainError {
  readonly existingId: string;
  readonly rule: DuplicateRule;

  constructor(existingId: string, rule: DuplicateRule) {
    super(
      'conflict',
      `The activity ${iri('activities', existingId)} ${SAME[rule]}: this one is a duplicate. Send duplicates=keep to store it too.`,
    );
    this.name = 'DuplicateActivityError';
    this.existingId = existingId;
    this.rule = rule;
  }
}

/** SHA-256 of a file's bytes, computed off the event loop (WebCrypto runs it in libuv's pool). */
export async function fileSha256(bytes: Uint8Array): Promise<Uint8Array> {
  return new Uint8Array(await webcrypto.subtle.digest('SHA-256', bytes));
}

/** The start second as the index of migration 0057 writes it (the same expression, so it is used). */
const startSecond = (value: RawBuilder<unknown>) => sql`date_trunc('second', ${value} at time zone 'UTC')`;

/** Activities of `userId` the start-and-duration rule matches, as a query on `activities d`. */
const sameStart = (userId: string, probe: DuplicateProbe) => sql`
  select d.id, d.created_at, 2 as rule from activities d
  where d.user_id = ${userId}
    and ${startSecond(sql`d.startdate`)} = ${startSecond(sql`${probe.startdate}::timestamptz`)}
    and d.duration = ${probe.duration}::int`;

/** Activities of `userId` the near rule matches: start and duration close, same family, tracks meeting. */
const near = (userId: string, probe: DuplicateProbe) => {
  const sport = probe.sportIds === null ? sql`` : sql` and d.sport_id = any(${probe.sportIds}::int[])`;
  const box = probe.trackBox;
  const ground =
    box === null
      ? sql``
      : sql` and not exists (select from activity_tracks t where t.activity_id = d.id and not t.track && st_expand(
          st_makeenvelope(${box[0]}::float8, ${box[1]}::float8, ${box[2]}::float8, ${box[3]}::float8, 4326),
          ${TRACK_MARGIN_DEGREES}::float8))`;
  return sql`
  select d.id, d.created_at, 3 as rule from activities d
  where d.user_id = ${userId} and d.file_sha256 is not null
    and d.startdate between ${probe.startdate}::timestamptz - make_interval(secs => ${NEAR_SECONDS})
      and ${probe.startdate}::timestamptz + make_interval(secs => ${NEAR_SECONDS})
    and d.duration between ${probe.duration}::int - ${NEAR_SECONDS}::int and ${probe.duration}::int + ${NEAR_SECONDS}::int${sport}${ground}`;
};

/** The bounding box of a track's points, for the near rule; null without a point. */
export function trackBoxOf(latitude: ArrayLike<number>, longitude: ArrayLike<number>): DuplicateProbe['trackBox'] {
  let [west, south, east, north] = [Infinity, Infinity, -Infinity, -Infinity];
  for (let i = 0; i < latitude.length; i++) {
    const lat = latitude[i] ?? Number.NaN;
    const lon = longitude[i] ?? Number.NaN;
    if (!Number.isFinite(lat) || !Number.isFinite(lon)) continue;
    west = Math.min(west, lon);
    east = Math.max(east, lon);
    south = Math.min(south, lat);
    north = Math.max(north, lat);
  }
  return Number.isFinite(west) ? [west, south, east, north] : null;
}

/** Activities of `userId` imported from the same file. */
const sameFile = (userId: string, digest: Uint8Array) => sql`
  select d.id, d.created_at, 1 as rule from activities d
  where d.user_id = ${userId} and d.file_sha256 = ${Buffer.from(digest)}::bytea`;

/**
 * The condition a new activity's insert is made under: no stored activity of the user it would
 * duplicate (kept duplicates included, which the unique indexes do not compare).
 */
export function noDuplicateOf(userId: string, probe: DuplicateProbe): RawBuilder<unknown> {
  const file =
    probe.fileSha256 === null
      ? sql``
      : sql` and not exists (${sameFile(userId, probe.fileSha256)}) and not exists (${near(userId, probe)})`;
  return sql`not exists (${sameStart(userId, probe)})${file}`;
}

/** The stored activities of `userId` the probe duplicates: same file first, then same start, then near; oldest first. */
export function duplicatesOf(userId: string, probe: DuplicateProbe): RawBuilder<{ id: string; rule: number }> {
  const union =
    probe.fileSha256 === null
      ? sameStart(userId, probe)
      : sql`${sameFile(userId, probe.fileSha256)} union all ${sameStart(userId, probe)} union all ${near(userId, probe)}`;
  return sql<{ id: string; rule: number }>`select id, rule from (${union}) m order by rule, created_at, id`;
}

const RULES: Record<number, DuplicateRule> = { 1: 'file', 2: 'start-duration', 3: 'near' };

/** The stored activity of `userId` the probe duplicates, if any (the first of duplicatesOf). */
export async function findDuplicate(
  db: Db,
  userId: string,
  probe: DuplicateProbe,
): Promise<{ id: string; rule: DuplicateRule } | undefined> {
  const { rows } = await sql<{ id: string; rule: number }>`${duplicatesOf(userId, probe)} limit 1`.execute(db);
  const found = rows[0];
  return found && { id: found.id, rule: RULES[found.rule] ?? 'start-duration' };
}
