import { type InferResult, sql } from 'kysely';
import type { Config } from '../config.ts';
import type { Db } from '../db/database.ts';
import type { ActivityAttributes } from '../db/schema/places.ts';

/** Who is looking: staff see every place, a creator sees their own pending/rejected places. */
export interface Viewer {
  accountId: string;
  staff: boolean;
}

/** The `user` object of places and activities (the places spec's Place, see docs/places.md). */
export interface UserJson {
  identifier: string;
  first_name: string;
  last_name: string;
  staff: boolean;
}

/** The spec's Activity shape. */
export interface ActivityJson {
  sport_id: number;
  tags: string[];
  photo_reference: string | null;
  user: UserJson | null;
  attributes: ActivityAttributes;
  image: { url?: string; thumbnail_url?: string | null };
}

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
export const isUuid = (s: string): boolean => UUID_RE.test(s);

/** SQL condition: the place row `p` may be seen by this viewer (approved, own, or staff). */
export function visibleTo(viewer: Viewer | undefined) {
  if (viewer?.staff) return sql<boolean>`true`;
  if (viewer) return sql<boolean>`(p.status = 'approved' or p.created_by = ${viewer.accountId})`;
  return sql<boolean>`p.status = 'approved'`;
}

/** Activities with their place and creator; filter further with `where`. */
export function activityQuery(db: Db) {
  return db
    .selectFrom('place_activities as a')
    .innerJoin('places as p', 'p.id', 'a.place_id')
    .leftJoin('accounts as u', 'u.id', 'a.created_by')
    .select([
      'a.id',
      'a.place_id',
      'p.uuid as place_uuid',
      'p.status as place_status',
      'p.created_by as place_created_by',
      'a.sport_id',
      'a.tags',
      'a.attributes',
      'a.photo_reference',
      'a.image_path',
      'a.thumbnail_path',
      'a.created_by',
      'u.first_name as user_first_name',
      'u.last_name as user_last_name',
      'u.roles as user_roles',
    ]);
}

/** One place activity (a sport offered at a place) with its place and creator, typed by its query. */
export type PlaceActivityRow = InferResult<ReturnType<typeof activityQuery>>[number];

/**
 * The activity of sport `sportId` at the place `placeUuid`, if the place exists and the viewer
 * may see it (no viewer: approved places only). The pictures upload builds on this.
 */
export async function findActivity(
  db: Db,
  placeUuid: string,
  sportId: number,
  viewer?: Viewer,
): Promise<PlaceActivityRow | undefined> {
  if (!isUuid(placeUuid) || !Number.isSafeInteger(sportId)) return undefined;
  return activityQuery(db)
    .where('p.uuid', '=', placeUuid)
    .where('a.sport_id', '=', sportId)
    .where(visibleTo(viewer))
    .executeTakeFirst();
}

export function userJson(
  id: string | null,
  firstName: string | null,
  lastName: string | null,
  roles: string[] | null,
): UserJson | null {
  if (!id) return null;
  return {
    identifier: id,
    first_name: firstName ?? '',
    last_name: lastName ?? '',
    staff: roles?.includes('staff') ?? false,
  };
}

export function imageJson(
  imagePath: string | null,
  thumbnailPath: string | null,
  config: Pick<Config, 'PUBLIC_URL'>,
): ActivityJson['image'] {
  if (!imagePath) return {};
  return {
    url: `${config.PUBLIC_URL}/media/${imagePath}`,
    thumbnail_url: thumbnailPath ? `${config.PUBLIC_URL}/media/${thumbnailPath}` : null,
  };
}

/** The spec's Activity: filter values inside `attributes`. */
export function activityJson(row: PlaceActivityRow, config: Pick<Config, 'PUBLIC_URL'>): ActivityJson {
  return {
    sport_id: row.sport_id,
    tags: row.tags,
    photo_reference: row.photo_reference,
    user: userJson(row.created_by, row.user_first_name, row.user_last_name, row.user_roles),
    attributes: row.attributes ?? {},
    image: imageJson(row.image_path, row.thumbnail_path, config),
  };
}

/** The activities-list shape: filter values flat beside sport_id and tags (no `attributes`). */
export function flatActivityJson(row: PlaceActivityRow, config: Pick<Config, 'PUBLIC_URL'>): Record<string, unknown> {
  const { attributes, ...rest } = activityJson(row, config);
  return { ...attributes, ...rest };
}
