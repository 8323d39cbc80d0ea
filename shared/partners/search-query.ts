import type { FieldError } from '../errors.ts';

/** Partners per search page (the spec's page size). */
export const PAGE_SIZE = 25;
/** Deepest page: 4,000 pages of 25 reach 100,000 partners; beyond, narrow the search. */
export const MAX_PAGE = 4000;

export interface PartnerSearchParams {
  sport?: number;
  /** The end-user's position `[lat, lng]`: results nearest first. */
  nearby?: [number, number];
  featured?: boolean;
  partner?: boolean;
  page: number;
}

type Raw = Record<string, string | string[] | undefined>;

const NUMBER = /^[+-]?(\d+(\.\d*)?|\.\d+)$/;

/** One value of a parameter that takes one (a repeated one is an error naming it). */
function single(raw: Raw, name: string, errors: FieldError[]): string | undefined {
  const v = raw[name];
  if (Array.isArray(v)) {
    errors.push({ path: `query.${name}`, message: `give ${name} once` });
    return undefined;
  }
  return v;
}

function bool(raw: Raw, name: string, errors: FieldError[]): boolean | undefined {
  const v = single(raw, name, errors);
  if (v === undefined) return undefined;
  if (v === 'true' || v === '1') return true;
  if (v === 'false' || v === '0') return false;
  errors.push({ path: `query.${name}`, message: `${name} must be true or false` });
  return undefined;
}

/**
 * `nearby[]=lat,lng` (the spec's form), also `nearby=lat,lng` or two values
 * `nearby[]=lat&nearby[]=lng`. Latitude first, like the partner's own lat/lng fields.
 */
function nearby(raw: Raw, errors: FieldError[]): [number, number] | undefined {
  const key = raw['nearby[]'] !== undefined ? 'nearby[]' : 'nearby';
  const given = raw[key];
  if (given === undefined) return undefined;
  if (raw['nearby[]'] !== undefined && raw.nearby !== undefined) {
    errors.push({ path: 'query.nearby[]', message: 'give nearby[] or nearby, not both' });
    return undefined;
  }
  const values = Array.isArray(given) ? given : [given];
  const parts = values.length === 1 ? (values[0] as string).split(',') : values;
  const [lat, lng] = parts.map((p) => p.trim());
  const bad = () =>
    errors.push({
      path: `query.${key}`,
      message: 'nearby[] must be one position "lat,lng" in degrees (latitude -90..90, longitude -180..180)',
    });
  if (parts.length !== 2 || !lat || !lng || !NUMBER.test(lat) || !NUMBER.test(lng)) {
    bad();
    return undefined;
  }
  const pos: [number, number] = [Number(lat), Number(lng)];
  if (Math.abs(pos[0]) > 90 || Math.abs(pos[1]) > 180) {
    bad();
    return undefined;
  }
  return pos;
}

/** Reads the search query; every invalid parameter is named (`query.sport`, `query.nearby[]`). */
export function parsePartnerSearch(raw: Raw): { params?: PartnerSearchParams; errors: FieldError[] } {
  const errors: FieldError[] = [];
  const params: PartnerSearchParams = { page: 1 };
  const sport = single(raw, 'sport', errors);
  if (sport !== undefined) {
    if (/^\d{1,9}$/.test(sport) && Number(sport) > 0) params.sport = Number(sport);
    else errors.push({ path: 'query.sport', message: 'sport must be a sport id (a positive integer)' });
  }
  const near = nearby(raw, errors);
  if (near) params.nearby = near;
  const featured = bool(raw, 'featured', errors);
  if (featured !== undefined) params.featured = featured;
  const partner = bool(raw, 'partner', errors);
  if (partner !== undefined) params.partner = partner;
  const page = single(raw, 'page', errors);
  if (page !== undefined) {
    if (/^\d{1,5}$/.test(page) && Number(page) >= 1 && Number(page) <= MAX_PAGE) params.page = Number(page);
    else errors.push({ path: 'query.page', message: `page must be an integer from 1 to ${MAX_PAGE}` });
  }
  return errors.length ? { errors } : { params, errors };
}
