import { createRequire } from 'node:module';

interface WorldCountry {
  cca2: string;
  area: number;
}

let countries: WorldCountry[] | undefined;
const load = () => {
  countries ??= createRequire(import.meta.url)('world-countries/countries.json') as WorldCountry[];
  return countries;
};

/**
 * Area in km² of each country (ISO 3166-1 alpha-2), from the offline `world-countries` dataset
 * (ODbL). Countries the dataset gives no positive area (e.g. SJ) are absent: no density can be
 * computed for them, so their recommendations are the fallback.
 */
export function countryAreas(): Map<string, number> {
  return new Map(load().flatMap((c) => (c.area > 0 ? [[c.cca2.toUpperCase(), c.area] as const] : [])));
}

/** Whether a 2-letter code is a country of the dataset (an unknown one is a 404). */
export function isKnownCountry(code: string): boolean {
  const upper = code.toUpperCase();
  return load().some((c) => c.cca2.toUpperCase() === upper);
}
