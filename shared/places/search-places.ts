import type pg from 'pg';
import { type SearchQuery, searchParams } from './search-query.ts';
import { compileSearchQuery, type SearchRow } from './search-sql.ts';

/** One page of a places search, with its Features already written as JSON by PostgreSQL. */
export interface SearchResult {
  /** The page's Features as JSON texts joined by commas (empty when none). */
  featuresJson: string;
  count: number;
  page: number;
  limit: number;
  /** The cursor that starts the next page, when there is one. */
  nextAfter: string | undefined;
}

/**
 * Searches places with a validated query (searchQuery). Runs straight through the pg pool as a
 * prepared statement: no query builder on the hot path.
 */
export async function searchPlaces(pool: pg.Pool, query: SearchQuery): Promise<SearchResult> {
  const params = searchParams(query);
  const compiled = compileSearchQuery(params);
  const found = (
    await pool.query<SearchRow>({
      ...(compiled.name ? { name: compiled.name } : {}),
      text: compiled.sql,
      values: compiled.parameters,
    })
  ).rows[0];
  return {
    featuresJson: found?.features ?? '',
    count: Math.min(found?.found ?? 0, params.limit),
    page: params.page,
    limit: params.limit,
    nextAfter: found?.next_after ?? undefined,
  };
}
