import { sql } from 'kysely';
import type { Db } from '../db/database.ts';
import { invalid, notFoundError } from '../errors.ts';
import { isKnownCountry } from './recommendations-countries.ts';

/** `count` of the recommendation calls: default and bounds. */
export const RECOMMENDATIONS_COUNT = { default: 3, min: 1, max: 50 } as const;

/**
 * A `{location}` path value: a country (`FR`), a city in a country (`Lille,FR`), or the same as
 * the catalogue's original `{city}_{cc}` key (`montreal_ca`), matched by `catalogue_city_key`.
 */
export type RecommendationPlace =
  | { kind: 'country'; country: string }
  | { kind: 'city'; name: string; country: string }
  | { kind: 'city-key'; key: string; country: string };

const MALFORMED_LOCATION =
  'must be a 2-letter country code (FR), a city name, a comma and a country code (Lille,FR), or a city key, an underscore and a country code (montreal_ca)';

/**
 * Reads a `{location}` path value: exactly two letters is a country code; with a comma, the city
 * name, the comma, and the country code (`Lille,FR`, `Saint-Étienne,FR`, `New York,US`; the comma
 * may be sent as `%2C`); without one, the city key, an underscore and the country code
 * (`montreal_ca`, `new_york_city_us`, `saint-etienne_fr`). Case does not matter. Anything else is a
 * 422 naming `params.location`.
 */
export function parseRecommendationPlace(value: string): RecommendationPlace {
  const text = value.trim();
  if (/^[A-Za-z]{2}$/.test(text)) return { kind: 'country', country: text.toUpperCase() };
  if (!text.includes(',')) {
    const k = /^(.*)_([A-Za-z]{2})$/.exec(text);
    // The key needs a letter or digit: `_fr` or `--_fr` names nothing.
    if (!k || !/[\p{L}\p{N}]/u.test(k[1] as string))
      throw invalid([{ path: 'params.location', message: MALFORMED_LOCATION }]);
    return { kind: 'city-key', key: k[1] as string, country: (k[2] as string).toUpperCase() };
  }
  const m = /^(.*\S)\s*,\s*([A-Za-z]{2})$/.exec(text);
  const name = m?.[1]?.trim();
  if (!m || !name || name.includes(',')) throw invalid([{ path: 'params.location', message: MALFORMED_LOCATION }]);
  return { kind: 'city', name, country: (m[2] as string).toUpperCase() };
}

/** The id of a sport given by id or slug; an unknown sport is a 404. */
export async function recommendationSportId(db: Db, idOrSlug: string): Promise<number> {
  const byId = /^\d{1,9}$/.test(idOrSlug);
  const row = await db
    .selectFrom('sports')
    .select('id')
    .where(byId ? 'id' : 'slug', '=', byId ? Number(idOrSlug) : idOrSlug)
    .executeTakeFirst();
  if (!row) throw notFoundError(`Unknown sport ${idOrSlug}`);
  return row.id;
}

/**
 * Fills a list up to `count` with the fallback order: active sports by number of approved places
 * offering them (most first), then by id; never the sport itself or one already listed. It reads
 * the referential, so it is not empty even before the first computation.
 */
async function withFallback(db: Db, sportId: number, ids: number[], count: number): Promise<string[]> {
  if (ids.length < count) {
    const exclude = [sportId, ...ids];
    const rows = await sql<{ id: number }>`
      select s.id from sports s
      left join sport_popularity p on p.sport_id = s.id
      where s.active and s.id <> all(${exclude}::int[])
      order by coalesce(p.places, 0) desc, s.id
      limit ${count - ids.length}`.execute(db);
    ids.push(...rows.rows.map((r) => r.id));
  }
  return ids.map(String);
}

/** The sports most practised with this one (same places, same people), best first. */
export async function recommendedSports(db: Db, idOrSlug: string, count: number): Promise<string[]> {
  const sportId = await recommendationSportId(db, idOrSlug);
  const rows = await db
    .selectFrom('sport_copractice')
    .select('other_id')
    .where('sport_id', '=', sportId)
    .orderBy('score', 'desc')
    .orderBy('other_id')
    .limit(count)
    .execute();
  return withFallback(
    db,
    sportId,
    rows.map((r) => r.other_id),
    count,
  );
}

/**
 * The sports most popular around a city (approved places within the radius), or densest in a
 * country (places per km²), the sport itself left out. An unknown country or city is a 404.
 */
export async function recommendedSportsIn(
  db: Db,
  idOrSlug: string,
  location: string,
  count: number,
): Promise<string[]> {
  const place = parseRecommendationPlace(location);
  const sportId = await recommendationSportId(db, idOrSlug);
  if (!isKnownCountry(place.country)) throw notFoundError(`Unknown country ${place.country}`);
  let ids: number[];
  if (place.kind === 'country') {
    const rows = await db
      .selectFrom('country_sport_density')
      .select('sport_id')
      .where('country', '=', place.country)
      .where('sport_id', '<>', sportId)
      .orderBy('density', 'desc')
      .orderBy('sport_id')
      .limit(count)
      .execute();
    ids = rows.map((r) => r.sport_id);
  } else {
    // Homonyms in one country (several Saint-Denis in FR): the most populous, then the lowest id.
    // Each form is compared as its index (migrations 0031 and 0064) holds the name.
    const city = await db
      .selectFrom('geo_cities')
      .select('id')
      .where('country', '=', place.country)
      .where((eb) =>
        place.kind === 'city'
          ? eb(sql<string>`lower(name)`, '=', place.name.toLowerCase())
          : eb(sql<string>`catalogue_city_key(name)`, '=', sql<string>`catalogue_city_key(${place.key})`),
      )
      .orderBy('population', 'desc')
      .orderBy('id')
      .executeTakeFirst();
    if (!city) throw notFoundError(`Unknown city ${location.trim()}`);
    const rows = await db
      .selectFrom('city_sport_popularity')
      .select('sport_id')
      .where('city_id', '=', city.id)
      .where('sport_id', '<>', sportId)
      .orderBy('places', 'desc')
      .orderBy('sport_id')
      .limit(count)
      .execute();
    ids = rows.map((r) => r.sport_id);
  }
  return withFallback(db, sportId, ids, count);
}
