import { sql } from 'kysely';
import type { Db } from '../db/database.ts';

export interface NearestCity {
  name: string;
  country: string;
  admin_code: string | null;
}

/**
 * The city nearest to a geometry (KNN on the GiST index over a point on its surface), preferring
 * one in `country` among the 20 nearest: a place near a border keeps its own country's city.
 */
export async function nearestCity(db: Db, geojson: string, country: string): Promise<NearestCity | undefined> {
  const rows = await sql<NearestCity & { d: number }>`
    with g as (select st_pointonsurface(st_geomfromgeojson(${geojson})) as pt)
    select c.name, c.country, c.admin_code, c.geom <-> g.pt as d
    from geo_cities c, g
    order by c.geom <-> g.pt
    limit 20`.execute(db);
  const same = rows.rows.find((r) => r.country === country);
  return same ?? rows.rows[0];
}
