import { randomUUID } from 'node:crypto';
import type { Config } from '../config.ts';
import type { Db } from '../db/database.ts';
import { type FieldError, invalid, notFoundError } from '../errors.ts';
import type { Viewer } from './activities.ts';
import { nearestCity } from './cities.ts';
import { approvedHolder, externalIdHolder, externalIdTaken, isExternalIdViolation } from './external-ids.ts';
import { parseGeometry } from './geojson.ts';
import { type Locale, notesLocale } from './locale.ts';
import { changeWaitsForStaff, type Decision, moderationOutcome, reviewProblem, splitChanges } from './moderation.ts';
import { assertMayDeletePlace, assertMayUpdatePlace, assertStaff, type Caller } from './permissions.ts';
import {
  findPlace,
  isCountryCode,
  type PlaceJson,
  type PlaceRow,
  pendingEdits,
  pendingPlaces,
  placeJson,
  placesJson,
  uniqueSlug,
} from './places.ts';
import { checkActivityList } from './rules.ts';
import {
  addActivities,
  createPlace,
  deletePlace,
  moderate,
  type NotesInput,
  type PlaceFields,
  updatePlace,
} from './writes.ts';

/** What reading places needs besides the database: links to pictures. */
export type PlacesConfig = Pick<Config, 'PUBLIC_URL'>;

/** POST /places: variant B (geometry, name, country) creates; variant A (external_place_id alone) adds activities. */
export interface PlaceInput {
  external_place_id?: string | undefined;
  geometry?: unknown;
  name?: string | undefined;
  country?: string | undefined;
  activities: Record<string, unknown>[];
  notes?: string | undefined;
  address?: string | null | undefined;
  city?: string | null | undefined;
  province?: string | null | undefined;
  email?: string | null | undefined;
  phone?: string | null | undefined;
  website?: string | null | undefined;
  booking_url?: string | null | undefined;
  social_username?: string | null | undefined;
}

/** A place the viewer may see (approved, their own, or any for staff); otherwise not found. */
export async function visiblePlace(db: Db, idOrSlug: string, viewer: Viewer | undefined): Promise<PlaceRow> {
  const row = await findPlace(db, idOrSlug, viewer);
  if (!row) throw notFoundError('Place not found');
  return row;
}

/** The single-place Feature, as the viewer may see it, with notes in `locale`. */
export async function placeFeature(
  db: Db,
  config: PlacesConfig,
  idOrSlug: string,
  viewer: Viewer | undefined,
  locale: Locale,
  options: { userAsList?: boolean } = {},
): Promise<PlaceJson> {
  return placeJson(db, await visiblePlace(db, idOrSlug, viewer), config, locale, { ...options, viewer });
}

/**
 * What waits for moderation: the caller's pending places and their pending edits of approved
 * places, or (staff asking for the queue) everyone's.
 */
export async function pendingFeatures(
  db: Db,
  config: PlacesConfig,
  caller: Caller,
  all: boolean,
  locale: Locale,
): Promise<PlaceJson[]> {
  const rows = await pendingPlaces(db, all && caller.staff ? undefined : caller.accountId);
  return placesJson(db, rows, config, locale, { viewer: caller });
}

/** Notes to write when the body has some, in the locale Accept-Language names. */
function notesOf(text: string | undefined, acceptLanguage: string | undefined): NotesInput | undefined {
  return text === undefined ? undefined : { locale: notesLocale(acceptLanguage), text };
}

/**
 * Adds a place (variant B) or, for variant A, activities to the place already stored with that
 * external id (no external provider is configured to look one up). Users' places wait for
 * moderation; staff's are approved at once. Returns the place's uuid and whether it is new.
 */
export async function createPlaceAs(
  db: Db,
  caller: Caller,
  input: PlaceInput,
  acceptLanguage: string | undefined,
): Promise<{ uuid: string; created: boolean }> {
  const notes = notesOf(input.notes, acceptLanguage);
  if (input.geometry === undefined) return { uuid: await addToExternalPlace(db, caller, input, notes), created: false };
  const errors: FieldError[] = [];
  const geo = parseGeometry(input.geometry, 'body.geometry');
  errors.push(...geo.errors);
  if (input.name === undefined) errors.push({ path: 'body.name', message: 'name is required with geometry' });
  if (input.country === undefined)
    errors.push({ path: 'body.country', message: 'country is required (2-letter ISO code)' });
  else if (!isCountryCode(input.country))
    errors.push({
      path: 'body.country',
      message: `"${input.country}" is not a 2-letter ISO 3166-1 country code (e.g. FR)`,
    });
  if (errors.length || !geo.geometry || input.name === undefined || input.country === undefined) throw invalid(errors);
  const activities = await checkActivityList(db, input.activities, 'body.activities');
  // Staff's place is approved at once: only an approved one conflicts with it. A user's pending
  // place conflicts with the approved one or their own pending one, never with one they cannot see.
  const externalId = input.external_place_id;
  const holder = (approvedOnly: boolean) =>
    externalId ? externalIdHolder(db, externalId, caller, { approvedOnly }) : Promise.resolve(undefined);
  const taken = await holder(caller.staff);
  if (taken) throw externalIdTaken(taken.uuid);
  let city = input.city ?? null;
  let province = input.province ?? null;
  if (!city || !province) {
    const near = await nearestCity(db, JSON.stringify(geo.geometry), input.country);
    if (near && near.country === input.country) {
      city ??= near.name;
      province ??= near.admin_code;
    }
  }
  const uuid = randomUUID();
  try {
    await createPlace(
      db,
      {
        ...input,
        uuid,
        slug: await uniqueSlug(db, input.name, uuid),
        name: input.name,
        geometry: geo.geometry,
        country: input.country,
        city,
        province,
        created_by: caller.accountId,
        approved: caller.staff,
      },
      activities,
      notes,
    );
  } catch (error) {
    // The same id posted twice at once: the index kept one; answer as if the check had seen it.
    if (isExternalIdViolation(error)) throw externalIdTaken((await holder(caller.staff))?.uuid);
    throw error;
  }
  return { uuid, created: true };
}

/**
 * Variant A: the activities go to the place known by this external id (the approved one, else the
 * caller's own pending one). Activities are crowdsourced and land at once; notes on an approved
 * place are a change of its text like any other and wait for staff (see updatePlaceAs).
 */
async function addToExternalPlace(
  db: Db,
  caller: Caller,
  input: PlaceInput,
  notes: NotesInput | undefined,
): Promise<string> {
  if (!input.external_place_id)
    throw invalid([
      {
        path: 'body.geometry',
        message: 'send geometry, name and country (variant B), or external_place_id (variant A)',
      },
    ]);
  const row = await externalIdHolder(db, input.external_place_id, caller);
  if (!row)
    throw invalid([
      {
        path: 'body.external_place_id',
        message:
          'no place has this external_place_id, and no external place provider is configured to look it up: send geometry, name and country (variant B)',
      },
    ]);
  const activities = await checkActivityList(db, input.activities, 'body.activities');
  await addActivities(db, row.id, activities, caller.accountId, notes, changeWaitsForStaff(caller, row.status));
  return row.uuid;
}

/** Whether a partner has this slug (a place's `partner` field must name one; the partners service owns the table, docs/partners.md). */
export async function partnerSlugExists(db: Db, slug: string): Promise<boolean> {
  return Boolean(await db.selectFrom('partners').select('id').where('slug', '=', slug).executeTakeFirst());
}

/**
 * PUT /places/{id}: the fields the caller may change (see permissions.ts), notes in the request's
 * locale. A user's change of an approved place's text waits for staff as a pending edit, the
 * approved version staying public (moderation.ts); partner fields and staff changes apply at once.
 */
export async function updatePlaceAs(
  db: Db,
  caller: Caller,
  idOrSlug: string,
  changes: PlaceFields & { notes?: string | undefined },
  acceptLanguage: string | undefined,
): Promise<string> {
  const row = await visiblePlace(db, idOrSlug, caller);
  const keys = Object.keys(changes);
  if (!keys.length) throw invalid([{ path: 'body', message: 'send at least one updatable field' }]);
  assertMayUpdatePlace(caller, row.created_by, keys);
  if (changes.country !== undefined && !isCountryCode(changes.country))
    throw invalid([
      { path: 'body.country', message: `"${changes.country}" is not a 2-letter ISO 3166-1 country code` },
    ]);
  // The slug names a partner of the partners service (docs/partners.md, "Places and partners").
  if (typeof changes.partner === 'string' && !(await partnerSlugExists(db, changes.partner)))
    throw invalid([{ path: 'body.partner', message: `no partner has the slug "${changes.partner}"` }]);
  const { notes: text, ...fields } = changes;
  const notes = notesOf(text, acceptLanguage);
  if (!changeWaitsForStaff(caller, row.status)) await updatePlace(db, row.id, { fields, notes });
  else {
    const { content, partner } = splitChanges(fields);
    await updatePlace(db, row.id, { fields: partner }, { by: caller.accountId, fields: content, notes });
  }
  return row.uuid;
}

export async function deletePlaceAs(db: Db, caller: Caller, idOrSlug: string): Promise<void> {
  const row = await visiblePlace(db, idOrSlug, caller);
  assertMayDeletePlace(caller, row.created_by);
  await deletePlace(db, row.id);
}

/**
 * Staff approve or reject what waits on a place (moderation.ts, `moderationOutcome`): its pending
 * edits when it is approved and has some, else the place (any status may be changed again).
 * Approving edits needs the revision staff reviewed (`reviewProblem`). Approving a place whose
 * external id an approved place already holds is a 409 naming it.
 */
export async function moderatePlace(
  db: Db,
  caller: Caller,
  idOrSlug: string,
  decision: Decision,
  reviewed?: string,
): Promise<string> {
  assertStaff(caller);
  const row = await visiblePlace(db, idOrSlug, caller);
  const edits = await pendingEdits(db, [row.id]);
  const outcome = moderationOutcome(decision, row.status, edits.length > 0);
  if (
    outcome.edits === 'apply' &&
    reviewProblem(
      edits.map((e) => e.revision),
      reviewed,
    ) === 'missing'
  )
    throw invalid([
      {
        path: 'query.revision',
        message: 'the place has pending edits: send the newest pending_edits[].revision you reviewed',
      },
    ]);
  const externalId = outcome.status === 'approved' && row.status !== 'approved' ? row.external_place_id : null;
  const conflict = () => (externalId ? approvedHolder(db, externalId, row.id) : Promise.resolve(undefined));
  const taken = await conflict();
  if (taken) throw externalIdTaken(taken.uuid, 'properties.external_place_id');
  try {
    await moderate(db, row.id, outcome, reviewed);
  } catch (error) {
    if (isExternalIdViolation(error)) throw externalIdTaken((await conflict())?.uuid, 'properties.external_place_id');
    throw error;
  }
  return row.uuid;
}
