import type { FieldError } from '../errors.ts';

/** The geometry types a place may have (RFC 7946 names; the spec's "Linestring" is accepted too). */
export type GeometryType = 'Point' | 'LineString' | 'Polygon';
export type Position = [number, number] | [number, number, number];
export interface Geometry {
  type: GeometryType;
  coordinates: Position | Position[] | Position[][];
}

const TYPES: Record<string, GeometryType> = { point: 'Point', linestring: 'LineString', polygon: 'Polygon' };

const inRange = (lng: number, lat: number) => lng >= -180 && lng <= 180 && lat >= -90 && lat <= 90;

/**
 * Checks one position: 2 or 3 finite numbers, longitude in [-180, 180], latitude in [-90, 90].
 * A pair out of range that would be valid swapped gets a message saying the order is wrong.
 */
export function positionError(value: unknown, path: string): FieldError | undefined {
  if (!Array.isArray(value) || value.length < 2 || value.length > 3)
    return { path, message: 'a position is an array [longitude, latitude] or [longitude, latitude, elevation]' };
  if (!value.every((n) => typeof n === 'number' && Number.isFinite(n)))
    return { path, message: 'position members must be finite numbers' };
  const [lng, lat] = value as number[];
  if (inRange(lng as number, lat as number)) return undefined;
  if (inRange(lat as number, lng as number))
    return {
      path,
      message: `[${lng}, ${lat}] is out of range but valid swapped: GeoJSON positions are [longitude, latitude], send [${lat}, ${lng}]`,
    };
  return { path, message: 'longitude must be within [-180, 180] and latitude within [-90, 90]' };
}

const samePosition = (a: number[], b: number[]) => a[0] === b[0] && a[1] === b[1] && a[2] === b[2];

/** Validates an RFC 7946 Point, LineString or Polygon; returns the normalized geometry or errors. */
export function parseGeometry(value: unknown, path: string): { geometry?: Geometry; errors: FieldError[] } {
  const errors: FieldError[] = [];
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    return { errors: [{ path, message: 'geometry must be a GeoJSON object with type and coordinates' }] };
  const raw = value as { type?: unknown; coordinates?: unknown };
  const type = typeof raw.type === 'string' ? TYPES[raw.type.toLowerCase()] : undefined;
  if (!type) return { errors: [{ path: `${path}.type`, message: 'type must be Point, LineString or Polygon' }] };
  const c = raw.coordinates;
  const cpath = `${path}.coordinates`;
  if (!Array.isArray(c)) return { errors: [{ path: cpath, message: 'coordinates must be an array' }] };
  const checkLine = (line: unknown, p: string, min: number): boolean => {
    if (!Array.isArray(line) || line.length < min) {
      errors.push({ path: p, message: `at least ${min} positions are required` });
      return false;
    }
    let ok = true;
    line.forEach((pos, i) => {
      const e = positionError(pos, `${p}[${i}]`);
      if (e) {
        errors.push(e);
        ok = false;
      }
    });
    return ok;
  };
  if (type === 'Point') {
    const e = positionError(c, cpath);
    if (e) errors.push(e);
  } else if (type === 'LineString') {
    checkLine(c, cpath, 2);
  } else {
    if (c.length === 0) errors.push({ path: cpath, message: 'a polygon needs at least one linear ring' });
    c.forEach((ring, i) => {
      const p = `${cpath}[${i}]`;
      if (
        checkLine(ring, p, 4) &&
        !samePosition((ring as number[][])[0] as number[], (ring as number[][]).at(-1) as number[])
      )
        errors.push({ path: p, message: 'a linear ring must be closed: its first and last positions must be equal' });
    });
  }
  if (errors.length) return { errors };
  return { geometry: { type, coordinates: c as Geometry['coordinates'] }, errors };
}

/** Parses a query-string coordinate `lng,lat`; returns [lng, lat] or an error naming the parameter. */
export function parseLngLat(value: string, name: string): { point?: [number, number]; error?: FieldError } {
  const path = `query.${name}`;
  const parts = value.split(',');
  if (parts.length !== 2 || parts.some((p) => p.trim() === '' || !Number.isFinite(Number(p))))
    return { error: { path, message: `${name} must be "lng,lat" (two numbers separated by a comma)` } };
  const [lng, lat] = parts.map(Number) as [number, number];
  const e = positionError([lng, lat], path);
  if (e)
    return {
      error: {
        path,
        message: e.message.replace('GeoJSON positions are', `${name} is`).replace(/send \[(.*), (.*)\]$/, 'send $1,$2'),
      },
    };
  return { point: [lng, lat] };
}

/** Great-circle distance in kilometres (haversine, mean Earth radius). */
export function distanceKm(a: [number, number], b: [number, number]): number {
  const rad = Math.PI / 180;
  const dLat = (b[1] - a[1]) * rad;
  const dLng = (b[0] - a[0]) * rad;
  const h = Math.sin(dLat / 2) ** 2 + Math.cos(a[1] * rad) * Math.cos(b[1] * rad) * Math.sin(dLng / 2) ** 2;
  return 2 * 6371.0088 * Math.asin(Math.min(1, Math.sqrt(h)));
}
