import type { JWTPayload } from 'jose';
import type { Selectable, Updateable } from 'kysely';
import { sql } from 'kysely';
import type { Db } from '../../db/database.ts';
import type { TrackingUsersTable, Visibility } from '../../db/schema/tracking.ts';
import { conflictError, type FieldError, invalid, notFoundError } from '../../errors.ts';
import { isCountryCode } from '../../places/places.ts';
import { compactTime, sumupsRebuildJob } from '../sumups/rebuild-requests.ts';
import { trackingWork } from '../unit-of-work.ts';
import { scheduleDeleteProblem } from './schedule-delete.ts';
import { canonicalTimezone, timezoneProblem } from './timezone.ts';

export type TrackingUser = Selectable<TrackingUsersTable>;

/** Who calls the tracking service: the account behind a verified token. */
export interface TrackingIdentity {
  accountId: string;
  /** The account's ldid: the tracking user's id. */
  ldid: string;
  claims: JWTPayload;
}

/** Gender codes, the accounts service's: 1 male, 2 female, 3 other (null: not said). */
export const GENDERS: ReadonlySet<number> = new Set([1, 2, 3]);

/** Longest `imageUrl` kept (browsers and CDNs cut longer URLs anyway). */
export const MAX_IMAGE_URL_LENGTH = 2048;

// pg would turn a `date` into a JS Date at local midnight; the User shows the calendar date as is.
const COLUMNS = [
  'id',
  'account_id',
  'one_id',
  'gender',
  'roles',
  'language',
  'country',
  'image_url',
  sql<string | null>`to_char(birth_date, 'YYYY-MM-DD')`.as('birth_date'),
  'schedule_delete',
  'timezone',
  'default_visibility',
  'default_map_visibility',
  'default_map_hidden_ends',
  'created_at',
  'updated_at',
] as const;

const languageNames = new Intl.DisplayNames(['en'], { type: 'language', fallback: 'none' });
/** Codes ISO 639-1 withdrew (ICU still names them, as aliases of their replacements). */
const WITHDRAWN_LANGUAGES = new Set(['in', 'iw', 'ji', 'jw', 'mo', 'sh']);

/** An ISO 639-1 language code, lower case (`fr`, `zh`): one the platform's ICU data names. */
export function isLanguageCode(code: string): boolean {
  return /^[a-z]{2}$/.test(code) && !WITHDRAWN_LANGUAGES.has(code) && languageNames.of(code) !== undefined;
}

/** `YYYY-MM-DD` of a real day (no 2023-02-30). */
function isCalendarDate(value: string): boolean {
  if (!/^\d{4}-\d{2}-\d{2}$/.test(value)) return false;
  const d = new Date(`${value}T00:00:00Z`);
  return !Number.isNaN(d.getTime()) && d.toISOString().startsWith(value);
}

/**
 * Today's date where the day is furthest ahead (UTC+14), so nobody's birth date of today is
 * refused as "in the future" wherever they live.
 */
export function latestToday(now = new Date()): string {
  return new Date(now.getTime() + 14 * 3600_000).toISOString().slice(0, 10);
}

/** A birth date: a real day from 1900-01-01 to today. */
export function isBirthDate(value: string, now = new Date()): boolean {
  return isCalendarDate(value) && value >= '1900-01-01' && value <= latestToday(now);
}

/** An absolute http(s) URL with a host. */
export function isImageUrl(value: string): boolean {
  if (value.length > MAX_IMAGE_URL_LENGTH) return false;
  const url = URL.parse(value);
  return url !== null && (url.protocol === 'http:' || url.protocol === 'https:') && url.hostname !== '';
}

/** The User fields a token's claims give, each kept only when valid. */
export function profileFromClaims(
  claims: JWTPayload,
): Partial<Pick<TrackingUser, 'gender' | 'birth_date' | 'country' | 'language'>> {
  const out: Partial<Pick<TrackingUser, 'gender' | 'birth_date' | 'country' | 'language'>> = {};
  const gender = Number(claims.gender);
  if (claims.gender !== undefined && claims.gender !== null && GENDERS.has(gender)) out.gender = gender;
  if (typeof claims.birthdate === 'string' && isBirthDate(claims.birthdate)) out.birth_date = claims.birthdate;
  if (typeof claims.country === 'string' && isCountryCode(claims.country.toUpperCase()))
    out.country = claims.country.toUpperCase();
  const language =
    typeof claims.language === 'string'
      ? claims.language
      : typeof claims.locale === 'string'
        ? claims.locale
        : undefined;
  const code = language && /^[A-Za-z]{2}([-_].*)?$/.test(language) ? language.slice(0, 2).toLowerCase() : undefined;
  if (code && isLanguageCode(code)) out.language = code;
  return out;
}

/** The tracking user `id`, as stored. */
export function findTrackingUser(db: Db, id: string): Promise<TrackingUser | undefined> {
  return db.selectFrom('tracking_users').select(COLUMNS).where('id', '=', id).executeTakeFirst();
}

/**
 * The caller's tracking user, created on their first call from the token's claims (completed by
 * their account's profile, where valid); later calls only read. Concurrent first calls make one row.
 */
export async function ensureTrackingUser(db: Db, identity: TrackingIdentity): Promise<TrackingUser> {
  const existing = await findTrackingUser(db, identity.ldid);
  if (existing) return existing;
  const account = await db
    .selectFrom('accounts')
    .select([
      'gender',
      sql<string | null>`to_char(birth_date, 'YYYY-MM-DD')`.as('birth_date'),
      'country',
      'language',
      'image_url',
    ])
    .where('id', '=', identity.accountId)
    .executeTakeFirstOrThrow();
  const fromAccount = profileFromClaims({
    gender: account.gender ?? undefined,
    birthdate: account.birth_date ?? undefined,
    country: account.country ?? undefined,
    language: account.language ?? undefined,
  });
  const claims = profileFromClaims(identity.claims);
  await db
    .insertInto('tracking_users')
    .values({
      id: identity.ldid,
      account_id: identity.accountId,
      one_id: null,
      gender: claims.gender ?? fromAccount.gender ?? null,
      birth_date: claims.birth_date ?? fromAccount.birth_date ?? null,
      country: claims.country ?? fromAccount.country ?? null,
      language: claims.language ?? fromAccount.language ?? null,
      image_url: account.image_url && isImageUrl(account.image_url) ? account.image_url : null,
      schedule_delete: null,
      updated_at: sql<Date>`now()`,
    })
    // No conflict target: concurrent first calls conflict on id or on account_id, whichever index
    // meets the other insert first, and a target covers only its own index.
    .onConflict((oc) => oc.doNothing())
    .execute();
  const created = await findTrackingUser(db, identity.ldid);
  if (!created) throw new Error(`tracking user ${identity.ldid} was neither found nor created`);
  return created;
}

/** `/v2/users/{id}`: the caller only; any other id is "not found" (no existence leak). */
export function userVisibleTo(caller: TrackingUser, id: string): TrackingUser {
  if (id !== caller.id) throw notFoundError(`No user ${id}`);
  return caller;
}

/** The fields a user may change (`undefined`: unchanged; `null`: cleared). */
export interface UserChanges {
  gender?: number | null | undefined;
  /** ISO 639-1, any case (stored lower case). */
  language?: string | null | undefined;
  /** ISO 3166-1 alpha-2, any case (stored upper case). */
  country?: string | null | undefined;
  imageUrl?: string | null | undefined;
  /** `YYYY-MM-DD`. */
  birthDate?: string | null | undefined;
  scheduleDelete?: Date | null | undefined;
  /** An IANA time zone name, any spelling the platform knows (stored canonical); null: UTC. */
  timezone?: string | null | undefined;
  /** What the user's new activities get (docs/tracking-sharing-users.md). */
  defaultVisibility?: Visibility | undefined;
  defaultMapVisibility?: Visibility | undefined;
  defaultMapHiddenEnds?: number | undefined;
}

/** What the rules of a change compare against. */
export interface UserChangeContext {
  /** ACCOUNT_DELETE_GRACE_S: the least time between a `scheduleDelete` request and its date. */
  deleteGraceSeconds: number;
  /** The stored `scheduleDelete`: sent back unchanged, it is not judged again (a client may PUT what it read). */
  currentScheduleDelete?: Date | null;
}

/** Every broken rule of `changes`, each naming its body field. */
export function userChangeErrors(
  changes: UserChanges,
  now = new Date(),
  context: UserChangeContext = { deleteGraceSeconds: 0 },
): FieldError[] {
  const errors: FieldError[] = [];
  const err = (field: string, message: string) => errors.push({ path: `body.${field}`, message });
  if (changes.gender != null && !GENDERS.has(changes.gender))
    err('gender', 'must be 1 (male), 2 (female), 3 (other) or null');
  if (changes.language != null && !isLanguageCode(changes.language.toLowerCase()))
    err('language', `"${changes.language}" is not a 2-letter ISO 639-1 language code (e.g. fr)`);
  if (changes.country != null && !isCountryCode(changes.country.toUpperCase()))
    err('country', `"${changes.country}" is not a 2-letter ISO 3166-1 alpha-2 country code (e.g. FR)`);
  if (changes.imageUrl != null && !isImageUrl(changes.imageUrl))
    err('imageUrl', `must be an http or https URL of at most ${MAX_IMAGE_URL_LENGTH} characters`);
  if (changes.birthDate != null && !isBirthDate(changes.birthDate, now))
    err('birthDate', 'must be a real date YYYY-MM-DD from 1900-01-01 to today');
  const schedule = changes.scheduleDelete;
  // Compared to the second, as the User shows it.
  const second = (d: Date | null | undefined) => (d ? Math.floor(d.getTime() / 1000) : undefined);
  if (schedule != null && second(schedule) !== second(context.currentScheduleDelete)) {
    const problem = scheduleDeleteProblem(schedule, now, context.deleteGraceSeconds);
    if (problem) err('scheduleDelete', problem);
  }
  if (changes.timezone != null) {
    const problem = timezoneProblem(changes.timezone);
    if (problem) err('timezone', problem);
  }
  return errors;
}

/**
 * Applies a PUT of the user: fields not sent stay as they are (API Platform's PUT), `null`
 * clears a field. Answers the user as stored. Once the account's deletion has started (its
 * tokens are refused from then on, but a request may have passed just before), nothing changes
 * any more: 409. A change of `timezone` asks for a rebuild of the user's statistics by period
 * (docs/tracking-statistics.md), in the same transaction.
 */
export async function updateTrackingUser(
  db: Db,
  user: TrackingUser,
  changes: UserChanges,
  options: { deleteGraceSeconds: number },
): Promise<TrackingUser> {
  const errors = userChangeErrors(changes, new Date(), {
    deleteGraceSeconds: options.deleteGraceSeconds,
    currentScheduleDelete: user.schedule_delete,
  });
  if (errors.length) throw invalid(errors);
  const set: Updateable<TrackingUsersTable> = {};
  if (changes.gender !== undefined) set.gender = changes.gender;
  if (changes.language !== undefined) set.language = changes.language?.toLowerCase() ?? null;
  if (changes.country !== undefined) set.country = changes.country?.toUpperCase() ?? null;
  if (changes.imageUrl !== undefined) set.image_url = changes.imageUrl;
  if (changes.birthDate !== undefined) set.birth_date = changes.birthDate;
  if (changes.scheduleDelete !== undefined) set.schedule_delete = changes.scheduleDelete;
  if (changes.defaultVisibility !== undefined) set.default_visibility = changes.defaultVisibility;
  if (changes.defaultMapVisibility !== undefined) set.default_map_visibility = changes.defaultMapVisibility;
  if (changes.defaultMapHiddenEnds !== undefined) set.default_map_hidden_ends = changes.defaultMapHiddenEnds;
  if (changes.timezone !== undefined)
    set.timezone = changes.timezone === null ? null : (canonicalTimezone(changes.timezone) ?? null);
  await trackingWork(db, async (uow) => {
    const { trx } = uow;
    // The purge locks the user when it starts the deletion: a change waits for it, then sees it.
    const row = await trx
      .selectFrom('tracking_users')
      .select(['account_id', 'timezone'])
      .where('id', '=', user.id)
      .forUpdate()
      .executeTakeFirst();
    const deleting =
      row &&
      (await trx
        .selectFrom('account_deletions')
        .select('account_id')
        .where('account_id', '=', row.account_id)
        .executeTakeFirst());
    if (!row || deleting)
      throw conflictError('The deletion of this account has started: it can no longer be changed or cancelled');
    const updated = await trx
      .updateTable('tracking_users')
      .set({ ...set, updated_at: sql<Date>`now()` })
      .where('id', '=', user.id)
      .returning('updated_at')
      .executeTakeFirstOrThrow();
    // Its periods are cut in the zone: they are cut again, by the records workers.
    if (set.timezone !== undefined && set.timezone !== row.timezone)
      uow.enqueue(sumupsRebuildJob(user.id, compactTime(updated.updated_at)));
  });
  const updated = await findTrackingUser(db, user.id);
  if (!updated) throw notFoundError(`No user ${user.id}`);
  return updated;
}
