/** Folded (unaccented, lower-case) sport names per language, kept by a trigger (migration 0030). */
export interface SportSearchNamesTable {
  sport_id: number;
  locale: string;
  folded: string;
}

export interface CatalogueTables {
  sport_search_names: SportSearchNamesTable;
}
