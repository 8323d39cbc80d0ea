import type { ColumnType, Generated } from 'kysely';

/** Language code to text, e.g. {"en": "Running", "fr": "Course à pied"}. */
export type LocalizedNames = Record<string, string>;
type Json<T> = ColumnType<T, string, string>;

export interface UniversesTable {
  id: number;
  names: Json<LocalizedNames>;
}

export interface SportsTable {
  id: number;
  slug: string;
  names: Json<LocalizedNames>;
  parent_id: number | null;
  universe_id: number | null;
  active: boolean;
  description: string | null;
  /** Catalogue descriptions by language (migration 0030). */
  descriptions: ColumnType<LocalizedNames, string | undefined, string>;
  /** The catalogue's legacy id of the sport (migration 0030). */
  vendor_id: number | null;
  /** Catalogue tags (migration 0030). */
  tags: ColumnType<string[], string[] | undefined, string[]>;
  created_at: Generated<Date>;
  updated_at: Generated<Date>;
}

export interface SportGroupsTable {
  id: number;
  slug: string;
  names: Json<LocalizedNames>;
}

export interface SportGroupMembersTable {
  group_id: number;
  sport_id: number;
}

export interface DatatypesTable {
  id: number;
  unit: string;
  names: Json<LocalizedNames>;
  descriptions: Json<Record<string, string | null>>;
  record_way: number;
  cumulable: boolean;
  active: boolean;
  created_at: Generated<Date>;
  updated_at: Generated<Date>;
}

export type PlaceFilterType = 'number' | 'level' | 'enum';

export interface PlaceTagsTable {
  slug: string;
}

export interface PlaceFiltersTable {
  slug: string;
  type: PlaceFilterType;
  values: string[] | null;
}

export interface SportPlaceTagsTable {
  sport_id: number;
  tag_slug: string;
}

export interface SportPlaceFiltersTable {
  sport_id: number;
  filter_slug: string;
}

export interface ReferentialTables {
  universes: UniversesTable;
  sports: SportsTable;
  sport_groups: SportGroupsTable;
  sport_group_members: SportGroupMembersTable;
  datatypes: DatatypesTable;
  place_tags: PlaceTagsTable;
  place_filters: PlaceFiltersTable;
  sport_place_tags: SportPlaceTagsTable;
  sport_place_filters: SportPlaceFiltersTable;
}
