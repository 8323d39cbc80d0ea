import type { ColumnType } from 'kysely';

/** Written by the recommendations job only (migration 0031, docs/recommendations.md). */
export interface SportCopracticeTable {
  sport_id: number;
  other_id: number;
  /** places + people practising both sports. */
  score: number;
  places: number;
  people: number;
}

export interface CitySportPopularityTable {
  /** geo_cities.id (no foreign key: the seed reloads geo_cities). */
  city_id: number;
  sport_id: number;
  /** Approved places offering the sport within the city radius. */
  places: number;
}

export interface CountrySportDensityTable {
  country: string;
  sport_id: number;
  places: number;
  area_km2: number;
  /** places per km². */
  density: number;
}

export interface SportPopularityTable {
  sport_id: number;
  places: number;
}

export interface RecommendationsRunsTable {
  id: ColumnType<boolean, boolean | undefined, never>;
  computed_at: ColumnType<Date, Date | string, Date | string>;
  duration_ms: number;
  counts: ColumnType<Record<string, number>, string, string>;
}

export interface RecommendationTables {
  sport_copractice: SportCopracticeTable;
  city_sport_popularity: CitySportPopularityTable;
  country_sport_density: CountrySportDensityTable;
  sport_popularity: SportPopularityTable;
  recommendations_runs: RecommendationsRunsTable;
}
