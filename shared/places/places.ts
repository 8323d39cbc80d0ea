import countries from 'i18n-iso-countries';
import { type InferResult, sql } from 'kysely';
import slugify from 'slugify';
import type { Config } from '../config.ts';
import type { Db } from '../db/database.ts';
import {
  type ActivityRow,
  activityJson,
  activityQuery,
  isUuid,
  type UserJson,
  userJson,
  type Viewer,
  visibleTo,
} from './activities.ts';
import type { Geometry } from './geojson.ts';
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

export async function placeActivities(db: Db, placeIds: number[]): Promise<ActivityRow[]> {
  if (!placeIds.length) return [];
  return activityQuery(db).where('a.place_id', 'in', placeIds).orderBy('a.sport_id').execute();
}

export interface PlaceJson {
  type: 'Feature';
  geometry: Geometry;
  properties: Record<string, unknown>;
}

/** The single-place GeoJSON Feature (the places spec's Place, see docs/places.md). */
export async function placeJson(
  db: Db,
  row: PlaceRow,
  config: Pick<Config, 'PUBLIC_URL'>,
  locale: Locale,
  options: { userAsList?: boolean } = {},
): Promise<PlaceJson> {
  const [json] = await placesJson(db, [row], config, locale, options);
  return json as PlaceJson;
}

/** Several places as Features: their activities and notes in one query each (no N+1). */
export async function placesJson(
  db: Db,
  rows: PlaceRow[],
  config: Pick<Config, 'PUBLIC_URL'>,
  locale: Locale,
  options: { userAsList?: boolean } = {},
): Promise<PlaceJson[]> {
  if (!rows.length) return [];
  const ids = rows.map((r) => r.id);
  const [activities, notes] = await Promise.all([
    placeActivities(db, ids),
    db
      .selectFrom('place_notes')
      .select(['place_id', 'locale', 'text'])
      .where('place_id', 'in', ids)
      .where('locale', 'in', [locale, DEFAULT_LOCALE])
      .execute(),
  ]);
  return rows.map((row) => {
    const user = userJson(row.created_by, row.user_first_name, row.user_last_name, row.user_roles);
    const own = notes.filter((n) => n.place_id === row.id);
    const note = own.find((n) => n.locale === locale) ?? own.find((n) => n.locale === DEFAULT_LOCALE);
    return {
      type: 'Feature',
      geometry: JSON.parse(row.geojson) as Geometry,
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
      },
    };
  });
}

/** Pending places: the caller's own, or (staff queue) everyone's; newest first, at most 500. */
export async function pendingPlaces(db: Db, accountId: string | undefined): Promise<PlaceRow[]> {
  let q = placeQuery(db).where('p.status', '=', 'pending');
  if (accountId) q = q.where('p.created_by', '=', accountId);
  return q.orderBy('p.created_at', 'desc').orderBy('p.id', 'desc').limit(500).execute();
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
