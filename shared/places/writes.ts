import { sql } from 'kysely';
import type { Db } from '../db/database.ts';
import type { ActivityAttributes, PlaceStatus } from '../db/schema/places.ts';
import type { Geometry } from './geojson.ts';
import type { Locale } from './locale.ts';
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

/** Adds activities (a sport the place already has is left as it is) and notes. */
export async function addActivities(
  db: Db,
  placeId: number,
  activities: ActivityInput[],
  createdBy: string,
  notes?: NotesInput,
): Promise<void> {
  await db.transaction().execute((trx) => writeActivitiesAndNotes(trx, placeId, activities, createdBy, notes));
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

/** The updatable columns of a place (PUT /places/{id}). */
export type PlaceFields = Partial<
  Pick<
    NewPlace,
    | 'name'
    | 'email'
    | 'phone'
    | 'website'
    | 'booking_url'
    | 'social_username'
    | 'address'
    | 'city'
    | 'province'
    | 'country'
  > & { featured: boolean; partner: string | null }
>;

export async function updatePlace(db: Db, placeId: number, fields: PlaceFields, notes?: NotesInput): Promise<void> {
  await db.transaction().execute(async (trx) => {
    if (Object.keys(fields).length)
      await trx
        .updateTable('places')
        .set({ ...fields, updated_at: sql<Date>`now()` })
        .where('id', '=', placeId)
        .execute();
    if (notes) await setNotes(trx, placeId, notes.locale, notes.text);
  });
}

/** Moderation: approves or rejects (triggers keep the activities' search copies in step). */
export async function setPlaceStatus(db: Db, placeId: number, status: PlaceStatus): Promise<void> {
  await db.updateTable('places').set({ status, updated_at: sql<Date>`now()` }).where('id', '=', placeId).execute();
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
