/** What the rewrite needs of a connection: a pg client, or a pool's. */
export interface SqlRunner {
  query(text: string): Promise<unknown>;
}

/**
 * The tables the searches walk by distance, and the location their rows are ordered by. PostGIS's
 * B-tree order of geometries follows a space-filling curve, so sorting on it puts neighbours on
 * the same pages.
 */
export const SPATIAL_TABLES = [
  { table: 'places', location: 'geom' },
  { table: 'place_activities', location: '(place_geog::geometry)' },
] as const;

export type SpatialTable = (typeof SPATIAL_TABLES)[number]['table'];

/**
 * Rewrites a table in spatial order (`CLUSTER`) and rebuilds its indexes over that order.
 *
 * Rows are stored in the order they were written, which has nothing to do with where they are:
 * the K nearest places of a search then sit on K different pages, and a geography GiST index
 * (PostGIS builds it by inserting rows in heap order, having no sorted build for geography)
 * over a random heap gets overlapping pages, so a KNN walk reads more of it as the table grows.
 * In spatial order both shrink to a few pages per search (docs/places.md, "Physical order").
 *
 * `CLUSTER` refuses the searches' indexes (partial), hence a temporary B-tree on the location:
 * with one, `CLUSTER` reads the table once and sorts it. It holds an ACCESS EXCLUSIVE lock on the
 * table for the whole rewrite; rows written later are appended unordered until the next run.
 */
export async function orderSpatially(client: SqlRunner, table: SpatialTable): Promise<void> {
  const spec = SPATIAL_TABLES.find((t) => t.table === table);
  if (!spec) throw new Error(`not a spatial table: ${table}`);
  const index = `${table}_spatial_order`;
  await client.query(`drop index if exists ${index}`);
  await client.query(`create index ${index} on ${table} (${spec.location})`);
  try {
    await client.query(`cluster ${table} using ${index}`);
  } finally {
    await client.query(`drop index if exists ${index}`);
  }
  await client.query(`analyze ${table}`);
}
