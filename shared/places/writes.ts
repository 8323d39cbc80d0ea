import { sql } from 'kysely';
import type { Db } from '../db/database.ts';
import type { ActivityAttributes, PlaceEditFields, PlaceStatus } from '../db/schema/places.ts';
import { conflictError } from '../errors.ts';
import type { Geometry } from './geojson.ts';
import { isLocale, type Locale } from './locale.ts';
import { editFields, reviewProblem } from './moderation.ts';
import type { ActivityInput } from './rules.ts';
import { mergeAttributes } from './rules.ts';

type Tx = Db;

const hasElevation = (g: Geometry): boolean =>
  JSON.stringify(g.coordinates).match(/\[[^[\]]*,[^[\]]*,[^[\]]*\]/) !== null;

export interface NewPlace {
  uuid: string;
  slug: string;
  name: string;
  geometry: Geometry;
  country: string;
  address?: string | null;
  city?: string | null;
  province?: string | null;
  email?: string | null;
  phone?: string | null;
  website?: string | null;
  booking_url?: string | null;
  social_username?: string | null;
  external_place_id?: string | null;
  created_by: string;
  approved: boolean;
}

export async function insertPlace(db: Tx, p: NewPlace): Promise<number> {
  const row = await db
    .insertInto('places')
    .values({
      uuid: p.uuid,
      slug: p.slug,
      name: p.name,
      geom: sql`st_force2d(st_setsrid(st_geomfromgeojson(${JSON.stringify(p.geometry)}), 4326))`,
      geojson: hasElevation(p.geometry) ? JSON.stringify(p.geometry) : null,
      country: p.country,
      address: p.address ?? null,
      city: p.city ?? null,
      province: p.province ?? null,
      email: p.email ?? null,
      phone: p.phone ?? null,
      website: p.website ?? null,
      booking_url: p.booking_url ?? null,
      social_username: p.social_username ?? null,
      external_place_id: p.external_place_id ?? null,
      created_by: p.created_by,
      status: p.approved ? 'approved' : 'pending',
    })
    .returning('id')
    .executeTakeFirstOrThrow();
  return row.id;
}

export async function setNotes(db: Tx, placeId: number, locale: Locale, text: string): Promise<void> {
  await db
    .insertInto('place_notes')
    .values({ place_id: placeId, locale, text })
    .onConflict((oc) => oc.columns(['place_id', 'locale']).doUpdateSet({ text }))
    .execute();
}

/** Inserts an activity; returns false when the place already has one of this sport. */
export async function insertActivity(
  db: Tx,
  placeId: number,
  input: ActivityInput,
  createdBy: string,
): Promise<boolean> {
  const attributes = mergeAttributes({}, input.attributes);
  const r = await db
    .insertInto('place_activities')
    .values({
      place_id: placeId,
      sport_id: input.sport_id,
      tags: input.tags ?? [],
      attributes: JSON.stringify(attributes),
      photo_reference: input.photo_reference ?? null,
      created_by: createdBy,
    })
    .onConflict((oc) => oc.columns(['place_id', 'sport_id']).doNothing())
    .returning('id')
    .executeTakeFirst();
  return r !== undefined;
}

/** Applies an update (tags replaced, photo_reference set, filter values merged; null removes). */
export async function updateActivity(
  db: Tx,
  id: number,
  stored: ActivityAttributes,
  input: ActivityInput,
): Promise<void> {
  await db
    .updateTable('place_activities')
    .set({
      ...(input.tags ? { tags: input.tags } : {}),
      ...(input.photo_reference !== undefined ? { photo_reference: input.photo_reference } : {}),
      attributes: JSON.stringify(mergeAttributes(stored, input.attributes)),
      updated_at: sql<Date>`now()`,
    })
    .where('id', '=', id)
    .execute();
}

/** Notes written in one locale, with the write that carries them. */
export interface NotesInput {
  locale: Locale;
  text: string;
}

/** A new place with its activities and notes, in one transaction; returns its id. */
export async function createPlace(
  db: Db,
  place: NewPlace,
  activities: ActivityInput[],
  notes?: NotesInput,
): Promise<number> {
  return db.transaction().execute(async (trx) => {
    const id = await insertPlace(trx, place);
    await writeActivitiesAndNotes(trx, id, activities, place.created_by, notes);
    return id;
  });
}

/**
 * Adds activities (a sport the place already has is left as it is) and notes; `notesWait`: the
 * notes are the author's pending edit instead (see moderation.ts).
 */
export async function addActivities(
  db: Db,
  placeId: number,
  activities: ActivityInput[],
  createdBy: string,
  notes?: NotesInput,
  notesWait = false,
): Promise<void> {
  await db.transaction().execute(async (trx) => {
    await writeActivitiesAndNotes(trx, placeId, activities, createdBy, notesWait ? undefined : notes);
    if (notesWait && notes) await proposeEdit(trx, placeId, createdBy, {}, notes);
  });
}

async function writeActivitiesAndNotes(
  trx: Tx,
  placeId: number,
  activities: ActivityInput[],
  createdBy: string,
  notes?: NotesInput,
): Promise<void> {
  for (const a of activities) await insertActivity(trx, placeId, a, createdBy);
  if (notes) await setNotes(trx, placeId, notes.locale, notes.text);
}

/** Stores a pending edit, merged into the author's one on this place if any: later values win. */
async function proposeEdit(
  trx: Tx,
  placeId: number,
  by: string,
  fields: PlaceEditFields,
  notes: NotesInput | undefined,
): Promise<void> {
  if (!Object.keys(fields).length && !notes) return;
  await trx
    .insertInto('place_edits')
    .values({
      place_id: placeId,
      created_by: by,
      fields: JSON.stringify(fields),
      notes: JSON.stringify(notes ? { [notes.locale]: notes.text } : {}),
    })
    .onConflict((oc) =>
      oc.columns(['place_id', 'created_by']).doUpdateSet({
        fields: sql`place_edits.fields || excluded.fields`,
        notes: sql`place_edits.notes || excluded.notes`,
        updated_at: sql<Date>`now()`,
      }),
    )
    .execute();
}

/** The updatable columns of a place (PUT /places/{id}). */
export type PlaceFields = PlaceEditFields & Partial<{ featured: boolean; partner: string | null }>;

/** Changes of a place: columns and notes in one locale. */
export interface PlaceChanges {
  fields: PlaceFields;
  notes?: NotesInput | undefined;
}

/** Applies `now`, and stores `proposed` (a user's change of an approved place, see moderation.ts) as their pending edit. */
export async function updatePlace(
  db: Db,
  placeId: number,
  now: PlaceChanges,
  proposed?: { by: string; fields: PlaceEditFields; notes?: NotesInput | undefined },
): Promise<void> {
  await db.transaction().execute(async (trx) => {
    if (Object.keys(now.fields).length)
      await trx
        .updateTable('places')
        .set({ ...now.fields, updated_at: sql<Date>`now()` })
        .where('id', '=', placeId)
        .execute();
    if (now.notes) await setNotes(trx, placeId, now.notes.locale, now.notes.text);
    if (proposed) await proposeEdit(trx, placeId, proposed.by, proposed.fields, proposed.notes);
  });
}

/**
 * Moderation: sets the status and applies or drops the place's pending edits, in one transaction
 * (triggers keep the activities' search copies in step). The edits are taken with a delete, so
 * an edit arriving meanwhile is either applied here or kept for the next decision, never lost.
 * Edits newer than the `reviewed` revision, or a unique violation (external id approved twice),
 * roll it all back.
 */
export async function moderate(
  db: Db,
  placeId: number,
  outcome: { status: PlaceStatus; edits: 'apply' | 'drop' },
  reviewed?: string,
): Promise<void> {
  await db.transaction().execute(async (trx) => {
    await trx
      .updateTable('places')
      .set({ status: outcome.status, updated_at: sql<Date>`now()` })
      .where('id', '=', placeId)
      .where('status', '<>', outcome.status)
      .execute();
    const edits = await trx
      .deleteFrom('place_edits')
      .where('place_id', '=', placeId)
      .returning([
        'fields',
        'notes',
        'updated_at',
        sql<string>`(extract(epoch from updated_at) * 1000000)::bigint::text`.as('revision'),
      ])
      .execute();
    if (outcome.edits === 'drop') return;
    if (
      reviewProblem(
        edits.map((e) => e.revision),
        reviewed,
      )
    )
      throw conflictError('The pending edits changed since they were read: read the place again and review them', [
        { path: 'query.revision', message: 'an edit is newer than this revision' },
      ]);
    // Oldest first: when two authors changed the same field, the later edit wins.
    for (const edit of edits.sort((a, b) => a.updated_at.getTime() - b.updated_at.getTime())) {
      const fields = editFields(edit.fields);
      if (Object.keys(fields).length)
        await trx
          .updateTable('places')
          .set({ ...fields, updated_at: sql<Date>`now()` })
          .where('id', '=', placeId)
          .execute();
      for (const [locale, text] of Object.entries(edit.notes))
        if (isLocale(locale)) await setNotes(trx, placeId, locale, text);
    }
  });
}

/** Deletes a place; its activities and notes go with it (foreign keys cascade). */
export async function deletePlace(db: Db, placeId: number): Promise<void> {
  await db.deleteFrom('places').where('id', '=', placeId).execute();
}

/** Applies PUT /places/{id}/activities: updates the sports the place has, creates the others. */
export async function upsertActivities(
  db: Db,
  placeId: number,
  inputs: ActivityInput[],
  existing: ReadonlyMap<number, { id: number; attributes: ActivityAttributes }>,
  createdBy: string,
): Promise<void> {
  await db.transaction().execute(async (trx) => {
    for (const input of inputs) {
      const old = existing.get(input.sport_id);
      if (old) await updateActivity(trx, old.id, old.attributes, input);
      else await insertActivity(trx, placeId, input, createdBy);
    }
  });
}

export async function setActivityTags(db: Db, activityId: number, tags: string[]): Promise<void> {
  await db
    .updateTable('place_activities')
    .set({ tags, updated_at: sql<Date>`now()` })
    .where('id', '=', activityId)
    .execute();
}

export async function deleteActivity(db: Db, activityId: number): Promise<void> {
  await db.deleteFrom('place_activities').where('id', '=', activityId).execute();
}
