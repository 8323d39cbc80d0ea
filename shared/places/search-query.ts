import type { FieldError } from '../errors.ts';
import placesReferential from '../referentials/places-tags-filters.json' with { type: 'json' };
import { distanceKm, parseLngLat } from './geojson.ts';

/** Default page size when `limit` is absent (docs/places.md), and the spec's maximum. */
export const DEFAULT_LIMIT = 20;
export const MAX_LIMIT = 100;
/** Longest radius and bounding-box side, in kilometres. */
export const MAX_EXTENT_KM = 100;

/** Search bounds on activity filter values: `min_<filter>` / `max_<filter>`. Levels are 0..2. */
export const RANGE_FILTERS = {
  difficulty: 'level',
  duration: 'number',
  distance: 'number',
  elevation_gain: 'number',
  cellphone_service: 'level',
  quality: 'level',
} as const;
type RangeFilter = keyof typeof RANGE_FILTERS;

const KNOWN_TAGS = new Set(placesReferential.tags);
const SURFACES = new Set(placesReferential.filters.find((f) => f.slug === 'surface')?.values ?? []);

export type LngLat = [number, number];
export type SearchArea =
  | { kind: 'bbox'; sw: LngLat; ne: LngLat }
  | { kind: 'radius'; origin: LngLat; radiusKm: number };

export interface SearchParams {
  area: SearchArea;
  /** Point results are ordered by (user_origin, else origin, else the box centre). */
  reference: LngLat;
  sports?: number[];
  tags?: string[];
  surface?: string[];
  ranges: { filter: RangeFilter; min?: number; max?: number }[];
  createdAt?: 'asc' | 'desc';
  days?: number;
  partner?: string;
  featured?: boolean;
  limit: number;
  /** Page number from 1: the offset when `after` is absent; with `after`, only the next link's number. */
  page: number;
  /** Keyset paging: the page starts after this row of the search order (from links.next). */
  after?: SearchKey;
}

/**
 * A row's place in the search order, which is total: proximity (exact float8 metres), then the
 * place id; `created_at` first when ordering by it. Carried by `after` (see parseCursor).
 */
export interface SearchKey {
  proximityM: number;
  /** places.id (bigint), as decimal digits. */
  id: string;
  /** created_at, ISO 8601 in UTC with microseconds: present exactly when the search orders by created_at. */
  createdAt?: string;
}

type Raw = Record<string, string | string[] | undefined>;

/**
 * Validates the search query string; every problem is reported with its parameter
 * (`query.radius`). A location (sw+ne or origin+radius) is required (docs/places.md).
 */
export function parseSearchQuery(raw: Raw): { params?: SearchParams; errors: FieldError[] } {
  const errors: FieldError[] = [];
  const err = (name: string, message: string) => errors.push({ path: `query.${name}`, message });
  const get = (name: string): string | undefined => {
    const v = raw[name];
    if (Array.isArray(v)) {
      err(name, `${name} was given more than once`);
      return undefined;
    }
    return v;
  };
  const point = (name: string): LngLat | undefined => {
    const v = get(name);
    if (v === undefined) return undefined;
    const r = parseLngLat(v, name);
    if (r.error) errors.push(r.error);
    return r.point;
  };
  const int = (name: string, min: number, max = Number.MAX_SAFE_INTEGER): number | undefined => {
    const v = get(name);
    if (v === undefined) return undefined;
    if (!/^-?\d+$/.test(v.trim())) {
      err(name, `${name} must be an integer`);
      return undefined;
    }
    const n = Number(v);
    if (n < min || n > max) {
      err(
        name,
        max === Number.MAX_SAFE_INTEGER
          ? `${name} must be at least ${min}`
          : `${name} must be between ${min} and ${max}`,
      );
      return undefined;
    }
    return n;
  };
  const list = (name: string): string[] | undefined => {
    const v = get(name);
    if (v === undefined) return undefined;
    const items = v
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean);
    if (!items.length) err(name, `${name} must be a comma-separated list`);
    return items;
  };

  const has = (name: string) => raw[name] !== undefined;
  const sw = point('sw');
  const ne = point('ne');
  const origin = point('origin');
  const userOrigin = point('user_origin');
  let radius: number | undefined;
  if (has('radius')) {
    const v = get('radius');
    const n = v === undefined || v.trim() === '' ? Number.NaN : Number(v);
    if (!Number.isFinite(n) || n <= 0) err('radius', 'radius must be a number of kilometres greater than 0');
    else if (n > MAX_EXTENT_KM) err('radius', `radius must not exceed ${MAX_EXTENT_KM} km`);
    else radius = n;
  }
  if (has('sw') !== has('ne')) err(has('sw') ? 'ne' : 'sw', 'sw and ne must be sent together');
  if (has('origin') !== has('radius'))
    err(has('origin') ? 'radius' : 'origin', 'origin and radius must be sent together');
  if (has('sw') && has('origin'))
    err('origin', 'send either a bounding box (sw, ne) or a radius (origin, radius), not both');
  if (!has('sw') && !has('ne') && !has('origin') && !has('radius'))
    err('origin', 'a location is required: sw and ne (bounding box) or origin and radius (km)');
  let area: SearchArea | undefined;
  if (sw && ne) {
    if (sw[1] > ne[1]) err('sw', 'sw must be south of ne (sw latitude ≤ ne latitude)');
    else if (sw[0] > ne[0]) err('sw', 'sw must be west of ne (boxes across the antimeridian are not supported)');
    else {
      const width = distanceKm(sw, [ne[0], sw[1]]);
      const height = distanceKm(sw, [sw[0], ne[1]]);
      if (Math.max(width, height) > MAX_EXTENT_KM)
        err(
          'ne',
          `the bounding box must not exceed ${MAX_EXTENT_KM} km per side (it is ${Math.round(Math.max(width, height))} km)`,
        );
      else area = { kind: 'bbox', sw, ne };
    }
  } else if (origin && radius !== undefined) area = { kind: 'radius', origin, radiusKm: radius };

  let sports: number[] | undefined;
  const sportItems = list('sports');
  if (sportItems) {
    if (sportItems.every((s) => /^\d{1,9}$/.test(s))) sports = sportItems.map(Number);
    else err('sports', 'sports must be comma-separated sport ids (integers)');
  }
  const tags = list('tags');
  const unknownTags = tags?.filter((t) => !KNOWN_TAGS.has(t)) ?? [];
  if (unknownTags.length) err('tags', `unknown tag(s): ${unknownTags.join(', ')}`);
  const surface = list('surface');
  const unknownSurfaces = surface?.filter((s) => !SURFACES.has(s)) ?? [];
  if (unknownSurfaces.length)
    err('surface', `unknown surface(s): ${unknownSurfaces.join(', ')}; known: ${[...SURFACES].join(', ')}`);

  const ranges: SearchParams['ranges'] = [];
  for (const [filter, type] of Object.entries(RANGE_FILTERS) as [RangeFilter, string][]) {
    const max = type === 'level' ? 2 : undefined;
    const lo = int(`min_${filter}`, 0, max);
    const hi = int(`max_${filter}`, 0, max);
    if (lo !== undefined && hi !== undefined && lo > hi)
      err(`min_${filter}`, `min_${filter} must not exceed max_${filter}`);
    else if (lo !== undefined || hi !== undefined)
      ranges.push({ filter, ...(lo !== undefined ? { min: lo } : {}), ...(hi !== undefined ? { max: hi } : {}) });
  }
  let createdAt: 'asc' | 'desc' | undefined;
  const ca = get('created_at');
  if (ca !== undefined) {
    if (ca === 'asc' || ca === 'desc') createdAt = ca;
    else err('created_at', 'created_at must be asc or desc');
  }
  const days = int('days', 1, 36_500);
  const partner = get('partner');
  if (partner !== undefined && !/^[a-z0-9][a-z0-9_-]{0,99}$/i.test(partner))
    err('partner', 'partner must be a partner slug');
  let featured: boolean | undefined;
  const f = get('featured');
  if (f !== undefined) {
    if (['true', '1'].includes(f)) featured = true;
    else if (['false', '0'].includes(f)) featured = false;
    else err('featured', 'featured must be true or false');
  }
  let limit = DEFAULT_LIMIT;
  if (has('limit')) {
    const l = int('limit', 1);
    if (l !== undefined && l > MAX_LIMIT) err('limit', `limit must not exceed ${MAX_LIMIT}`);
    else if (l !== undefined) limit = l;
  }
  const page = has('page') ? int('page', 1, 1_000_000) : 1;
  let after: SearchKey | undefined;
  const cursor = get('after');
  if (cursor !== undefined) {
    after = parseCursor(cursor);
    if (!after) err('after', 'after must be the cursor of a links.next URL of this search');
    else if ((after.createdAt !== undefined) !== (createdAt !== undefined))
      err('after', 'after comes from a search with another order (created_at): follow links.next of this search');
  }

  if (errors.length || !area) return { errors };
  const reference: LngLat =
    userOrigin ??
    (area.kind === 'radius' ? area.origin : [(area.sw[0] + area.ne[0]) / 2, (area.sw[1] + area.ne[1]) / 2]);
  return {
    params: {
      area,
      reference,
      ...(sports ? { sports } : {}),
      ...(tags ? { tags } : {}),
      ...(surface ? { surface } : {}),
      ranges,
      ...(createdAt ? { createdAt } : {}),
      ...(days !== undefined ? { days } : {}),
      ...(partner !== undefined ? { partner } : {}),
      ...(featured !== undefined ? { featured } : {}),
      limit,
      page: page ?? 1,
      ...(after ? { after } : {}),
    },
    errors,
  };
}

/**
 * The cursor of `after`, as the search SQL writes it for the last row of a page (search-sql.ts,
 * `next_after`): `<proximity>.<id>` or `<proximity>.<id>.<created_at>`, where proximity is the
 * float8 distance in metres as the 16 hex digits of its IEEE 754 bits (exact: ties are compared
 * with `=`, so a decimal rendering that rounds would skip or repeat rows), id the place id and
 * created_at in microseconds since 1970. Opaque to clients, who follow links.next.
 */
export function parseCursor(token: string): SearchKey | undefined {
  const m = /^([0-9a-f]{16})\.(\d{1,19})(?:\.(-?\d{1,19}))?$/.exec(token);
  if (!m) return undefined;
  const [, hex, id, micros] = m as unknown as [string, string, string, string | undefined];
  const proximityM = Buffer.from(hex, 'hex').readDoubleBE(0);
  if (!Number.isFinite(proximityM) || proximityM < 0 || BigInt(id) > 9_223_372_036_854_775_807n) return undefined;
  if (micros === undefined) return { proximityM, id };
  const createdAt = isoMicros(BigInt(micros));
  return createdAt ? { proximityM, id, createdAt } : undefined;
}

/** Microseconds since 1970 as an exact ISO 8601 UTC timestamp (Date alone keeps milliseconds). */
function isoMicros(micros: bigint): string | undefined {
  let ms = micros / 1000n;
  let us = micros % 1000n;
  if (us < 0n) {
    us += 1000n;
    ms -= 1n;
  }
  const date = new Date(Number(ms));
  if (Number.isNaN(date.getTime()) || date.getUTCFullYear() < 1 || date.getUTCFullYear() > 9999) return undefined;
  return date.toISOString().replace('Z', `${String(us).padStart(3, '0')}Z`);
}
