import type { ColumnType, Generated } from 'kysely';

export interface PartnersTable {
  id: Generated<number>;
  uuid: Generated<string>;
  /** Unique, never changes: the places service's `partner` field names a partner by it. */
  slug: string;
  title: string;
  source: string;
  description: string | null;
  link: string;
  featured: Generated<boolean>;
  partner: Generated<boolean>;
  city: string | null;
  province: string | null;
  country: string | null;
  lat: number;
  lng: number;
  /** geography(Point, 4326), generated from lat/lng (never written). */
  geog: ColumnType<unknown, never, never>;
  radius: number | null;
  image_ref: string | null;
  /** accounts.number of the partner's account (the spec's integer user_id). */
  user_id: ColumnType<string, number | string, number | string>;
  created_by: string | null;
  created_at: Generated<Date>;
  updated_at: Generated<Date>;
}

export interface PartnerSportsTable {
  partner_id: number;
  sport_id: number;
}

export interface PartnerTables {
  partners: PartnersTable;
  partner_sports: PartnerSportsTable;
}
