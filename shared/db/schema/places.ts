import type { ColumnType, Generated } from 'kysely';

export type PlaceStatus = 'pending' | 'approved' | 'rejected';

/** Filter name to value: numbers for number/level filters, strings for enum filters. */
export type ActivityAttributes = Record<string, number | string>;

export interface PlacesTable {
  id: Generated<number>;
  uuid: Generated<string>;
  slug: string;
  name: string;
  /** geometry(Geometry, 4326): write with ST_GeomFromGeoJSON, read with ST_AsGeoJSON. */
  geom: ColumnType<unknown, unknown, unknown>;
  /** The posted geometry when it has elevations (geom is 2D); null otherwise. */
  geojson: ColumnType<unknown, string | null | undefined, string | null>;
  address: string | null;
  city: string | null;
  province: string | null;
  country: string;
  email: string | null;
  phone: string | null;
  website: string | null;
  booking_url: string | null;
  social_username: string | null;
  external_place_id: string | null;
  created_by: string | null;
  status: Generated<PlaceStatus>;
  featured: Generated<boolean>;
  partner: string | null;
  created_at: Generated<Date>;
  updated_at: Generated<Date>;
}

export interface PlaceNotesTable {
  place_id: number;
  locale: string;
  text: string;
}

export interface PlaceActivitiesTable {
  id: Generated<number>;
  place_id: number;
  sport_id: number;
  tags: Generated<string[]>;
  attributes: ColumnType<ActivityAttributes, string | undefined, string>;
  photo_reference: string | null;
  created_by: string | null;
  /** Relative to STORAGE_DIR, written by the pictures upload. */
  image_path: string | null;
  thumbnail_path: string | null;
  created_at: Generated<Date>;
  updated_at: Generated<Date>;
  /** Copies of the place's geography and approval for search, kept by triggers (migration 0022). */
  place_geog: Generated<string>;
  place_approved: Generated<boolean>;
}

/** Place fields a user's edit of an approved place changes (PUT /places/{id}; partner fields are not moderated). */
export interface PlaceEditFields {
  name?: string;
  email?: string | null;
  phone?: string | null;
  website?: string | null;
  booking_url?: string | null;
  social_username?: string | null;
  address?: string | null;
  city?: string | null;
  province?: string | null;
  country?: string;
}

/** A user's edit of an approved place, waiting for staff (migration 0051): one per place and author. */
export interface PlaceEditsTable {
  place_id: number;
  created_by: string;
  fields: ColumnType<PlaceEditFields, string | undefined, string>;
  /** Locale to notes text. */
  notes: ColumnType<Record<string, string>, string | undefined, string>;
  created_at: Generated<Date>;
  updated_at: Generated<Date>;
}

export interface GeoCitiesTable {
  id: number;
  name: string;
  country: string;
  admin_code: string | null;
  population: number;
  geom: ColumnType<unknown, unknown, unknown>;
}

export interface PlaceTables {
  places: PlacesTable;
  place_notes: PlaceNotesTable;
  place_activities: PlaceActivitiesTable;
  place_edits: PlaceEditsTable;
  geo_cities: GeoCitiesTable;
}
