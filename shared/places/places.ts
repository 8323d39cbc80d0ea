import countries from 'i18n-iso-countries';
import { type InferResult, sql } from 'kysely';
import slugify from 'slugify';
import type { Config } from '../config.ts';
import type { Db } from '../db/database.ts';
import {
  activityJson,
  activityQuery,
  isUuid,
  type PlaceActivityRow,
  type UserJson,
  userJson,
  type Viewer,
  visibleTo,
} from './activities.ts';
import type { PlaceFeature } from './feature.ts';
import { DEFAULT_LOCALE, type Locale } from './locale.ts';

export const isCountryCode = (c: string): boolean => /^[A-Z]{2}$/.test(c) && countries.isValid(c);

/** `YYYY-MM-DD HH:MM:SS UTC`, the spec's created_at format. */
export function formatCreatedAt(d: Date): string {
  return `${d.toISOString().slice(0, 19).replace('T', ' ')} UTC`;
}

function placeQuery(db: Db) {
  return db
    .selectFrom('places as p')
    .leftJoin('accounts as u', 'u.id', 'p.created_by')
    .select([
      'p.id',
      'p.uuid',
      'p.slug',
      'p.name',
      sql<string>`coalesce(p.geojson::text, st_asgeojson(p.geom))`.as('geojson'),
      'p.address',
      'p.city',
      'p.province',
      'p.country',
      'p.email',
      'p.phone',
      'p.website',
      'p.booking_url',
      'p.social_username',
      'p.external_place_id',
      'p.created_by',
      'p.status',
      'p.featured',
      'p.partner',
      'p.created_at',
      'u.first_name as user_first_name',
      'u.last_name as user_last_name',
      'u.roles as user_roles',
    ]);
}

/** One place with what its JSON needs (geometry as GeoJSON text, creator), typed by its query. */
export type PlaceRow = InferResult<ReturnType<typeof placeQuery>>[number];

/** A place by uuid or slug, if the viewer may see it (approved, own, or staff). */
export async function findPlace(db: Db, uuidOrSlug: string, viewer?: Viewer): Promise<PlaceRow | undefined> {
  let q = placeQuery(db).where(visibleTo(viewer));
  q = isUuid(uuidOrSlug) ? q.where('p.uuid', '=', uuidOrSlug) : q.where('p.slug', '=', uuidOrSlug);
  return q.executeTakeFirst();
}

export async function placeActivities(db: Db, placeIds: number[]): Promise<PlaceActivityRow[]> {
  if (!placeIds.length) return [];
  return activityQuery(db).where('a.place_id', 'in', placeIds).orderBy('a.sport_id').execute();
}

/** A place as the API writes it (feature.ts defines it). */
export type PlaceJson = PlaceFeature;

/** The single-place GeoJSON Feature (the places spec's Place, see docs/places.md). */
export async function placeJson(
  db: Db,
  row: PlaceRow,
  config: Pick<Config, 'PUBLIC_URL'>,
  locale: Locale,
  options: { userAsList?: boolean; viewer?: Viewer | undefined } = {},
): Promise<PlaceJson> {
  const [json] = await placesJson(db, [row], config, locale, options);
  return json as PlaceJson;
}

/** Pending edits of these places, oldest first; `author`: only theirs. */
export async function pendingEdits(db: Db, placeIds: number[], author?: string) {
  if (!placeIds.length) return [];
  let q = db
    .selectFrom('place_edits as e')
    .leftJoin('accounts as u', 'u.id', 'e.created_by')
    .select([
      'e.place_id',
      'e.created_by',
      'e.fields',
      'e.notes',
      'e.updated_at',
      // Microseconds: an edit changed within the same millisecond still gets a new revision.
      sql<string>`(extract(epoch from e.updated_at) * 1000000)::bigint::text`.as('revision'),
      'u.first_name as user_first_name',
      'u.last_name as user_last_name',
      'u.roles as user_roles',
    ])
    .where('e.place_id', 'in', placeIds);
  if (author !== undefined) q = q.where('e.created_by', '=', author);
  return q.orderBy('e.updated_at').execute();
}

/** What the viewer may see of the edits waiting on these places: staff all, an author theirs, others none. */
function visibleEdits(db: Db, placeIds: number[], viewer: Viewer | undefined) {
  if (!viewer) return Promise.resolve([]);
  return pendingEdits(db, placeIds, viewer.staff ? undefined : viewer.accountId);
}

/**
 * Several places as Features: their activities, notes and pending edits in one query each (no
 * N+1). `viewer` decides which pending edits are shown (none without one).
 */
export async function placesJson(
  db: Db,
  rows: PlaceRow[],
  config: Pick<Config, 'PUBLIC_URL'>,
  locale: Locale,
  options: { userAsList?: boolean; viewer?: Viewer | undefined } = {},
): Promise<PlaceJson[]> {
  if (!rows.length) return [];
  const ids = rows.map((r) => r.id);
  const [activities, notes, edits] = await Promise.all([
    placeActivities(db, ids),
    db
      .selectFrom('place_notes')
      .select(['place_id', 'locale', 'text'])
      .where('place_id', 'in', ids)
      .where('locale', 'in', [locale, DEFAULT_LOCALE])
      .execute(),
    visibleEdits(db, ids, options.viewer),
  ]);
  return rows.map((row) => {
    const user = userJson(row.created_by, row.user_first_name, row.user_last_name, row.user_roles);
    const own = notes.filter((n) => n.place_id === row.id);
    const note = own.find((n) => n.locale === locale) ?? own.find((n) => n.locale === DEFAULT_LOCALE);
    return {
      type: 'Feature',
      geometry: JSON.parse(row.geojson) as PlaceFeature['geometry'],
      properties: {
        uuid: row.uuid,
        name: row.name,
        slug: row.slug,
        proximity: null,
        user: options.userAsList ? updateUsers(user) : user,
        partner: row.partner,
        featured: row.featured,
        status: row.status,
        created_at: formatCreatedAt(row.created_at),
        external_place_id: row.external_place_id,
        contact_details: {
          email: row.email,
          phone: row.phone,
          website: row.website,
          booking_url: row.booking_url,
          social_username: row.social_username,
        },
        address_components: { address: row.address, city: row.city, province: row.province, country: row.country },
        activities: activities.filter((a) => a.place_id === row.id).map((a) => activityJson(a, config)),
        notes: note?.text ?? null,
        pending_edits: edits
          .filter((e) => e.place_id === row.id)
          .map((e) => ({
            user: userJson(e.created_by, e.user_first_name, e.user_last_name, e.user_roles),
            fields: { ...e.fields },
            notes: e.notes,
            submitted_at: formatCreatedAt(e.updated_at),
            revision: e.revision,
          })),
      },
    };
  });
}

/**
 * What waits for staff: pending places and places with pending edits, the author's own (or
 * everyone's: the staff queue); most recently submitted first, at most 500. The two id sets come
 * from their own indexes (places_pending_idx or places_created_by_idx, place_edits'), not from a
 * test of every place.
 */
export async function pendingPlaces(db: Db, author: string | undefined): Promise<PlaceRow[]> {
  const own = (column: string) => (author === undefined ? sql`` : sql`and ${sql.ref(column)} = ${author}`);
  const edited = sql`select e.place_id from place_edits e where true ${own('e.created_by')}`;
  return placeQuery(db)
    .where(
      sql<boolean>`p.id in (select q.id from places q where q.status = 'pending' ${own('q.created_by')} union all ${edited})`,
    )
    .orderBy(
      sql`coalesce((select max(e.updated_at) from place_edits e where e.place_id = p.id ${own('e.created_by')}), p.created_at)`,
      'desc',
    )
    .orderBy('p.id', 'desc')
    .limit(500)
    .execute();
}

/** After an update the spec shows `user` as an array of objects with `user_id`. */
function updateUsers(user: UserJson | null) {
  if (!user) return [];
  const { identifier, ...rest } = user;
  return [{ user_id: identifier, ...rest }];
}

const RESERVED_SLUGS = new Set(['pending']);

/** A unique slug from the name: `name`, else `name-<8 hex of the uuid>` (also when the name has no latin letters). */
export async function uniqueSlug(db: Db, name: string, uuid: string): Promise<string> {
  const base = slugify(name, { lower: true, strict: true, trim: true }).slice(0, 80).replace(/-+$/, '');
  const suffix = uuid.replace(/-/g, '').slice(0, 8);
  if (!base || RESERVED_SLUGS.has(base) || isUuid(base)) return base ? `${base}-${suffix}` : `place-${suffix}`;
  const taken = await db.selectFrom('places').select('id').where('slug', '=', base).executeTakeFirst();
  return taken ? `${base}-${suffix}` : base;
}
