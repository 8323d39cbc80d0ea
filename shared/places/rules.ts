import type { Db } from '../db/database.ts';
import type { ActivityAttributes } from '../db/schema/places.ts';
import type { PlaceFilterType } from '../db/schema/referentials.ts';
import { type FieldError, invalid } from '../errors.ts';

export interface FilterDef {
  slug: string;
  type: PlaceFilterType;
  values: string[] | null;
}

/** What may be written on activities of one sport. */
export interface SportRules {
  id: number;
  tags: Set<string>;
  filters: Map<string, FilterDef>;
}

/** Allowed tags and filters of the given sports (absent ids: unknown sports). Two queries. */
export async function sportRules(db: Db, sportIds: number[]): Promise<Map<number, SportRules>> {
  const ids = [...new Set(sportIds)].filter((id) => Number.isSafeInteger(id) && id > 0 && id < 2 ** 31);
  const out = new Map<number, SportRules>();
  if (!ids.length) return out;
  const [sports, tags, filters] = await Promise.all([
    db.selectFrom('sports').select('id').where('id', 'in', ids).execute(),
    db.selectFrom('sport_place_tags').select(['sport_id', 'tag_slug']).where('sport_id', 'in', ids).execute(),
    db
      .selectFrom('sport_place_filters as sf')
      .innerJoin('place_filters as f', 'f.slug', 'sf.filter_slug')
      .select(['sf.sport_id', 'f.slug', 'f.type', 'f.values'])
      .where('sf.sport_id', 'in', ids)
      .execute(),
  ]);
  for (const s of sports) out.set(s.id, { id: s.id, tags: new Set(), filters: new Map() });
  for (const t of tags) out.get(t.sport_id)?.tags.add(t.tag_slug);
  for (const f of filters) out.get(f.sport_id)?.filters.set(f.slug, { slug: f.slug, type: f.type, values: f.values });
  return out;
}

/** sport_id as the spec accepts it: an integer or a string of digits. */
export function parseSportId(value: unknown): number | undefined {
  if (typeof value === 'number' && Number.isSafeInteger(value) && value > 0) return value;
  if (typeof value === 'string' && /^\d{1,9}$/.test(value) && Number(value) > 0) return Number(value);
  return undefined;
}

/** Checks one filter value against its definition; returns the stored value or an error message. */
export function filterValue(def: FilterDef, value: unknown): { value?: number | string; message?: string } {
  if (def.type === 'enum') {
    if (typeof value === 'string' && def.values?.includes(value)) return { value };
    return { message: `${def.slug} must be one of: ${(def.values ?? []).join(', ')}` };
  }
  const n = typeof value === 'string' && value.trim() !== '' ? Number(value) : value;
  if (typeof n !== 'number' || !Number.isFinite(n)) return { message: `${def.slug} must be a number` };
  if (def.type === 'level') {
    if (Number.isInteger(n) && n >= 0 && n <= 2) return { value: n };
    return { message: `${def.slug} is a level: 0, 1 or 2` };
  }
  if (n < 0) return { message: `${def.slug} must be zero or more` };
  return { value: n };
}

/** Keys of an activity body that are not filter values. */
const RESERVED = new Set(['sport_id', 'tags', 'photo_reference', 'user', 'attributes', 'image']);

export interface ActivityInput {
  sport_id: number;
  tags?: string[];
  photo_reference?: string | null;
  /** Filter values to set; a null value (updates only) removes the filter. */
  attributes: Record<string, number | string | null>;
}

/**
 * Validates one activity body (creation, or update with `sportId` from the path). Filter values
 * are top-level keys; an `attributes` object is accepted too. Tags and filters must be allowed
 * for the sport, and each value of its filter's type.
 */
export function checkActivity(
  body: Record<string, unknown>,
  path: string,
  rules: Map<number, SportRules>,
  mode: { update: boolean; sportId?: number },
): { input?: ActivityInput; errors: FieldError[] } {
  const errors: FieldError[] = [];
  if ('user' in body)
    errors.push({ path: `${path}.user`, message: 'user is immutable: it is the caller who created the activity' });
  let sportId: number | undefined;
  if (mode.update) {
    sportId = mode.sportId;
    if ('sport_id' in body && parseSportId(body.sport_id) !== sportId)
      errors.push({ path: `${path}.sport_id`, message: 'sport_id is immutable; delete the activity and add another' });
  } else {
    sportId = parseSportId(body.sport_id);
    if (sportId === undefined)
      errors.push({ path: `${path}.sport_id`, message: 'sport_id is required: a sport id (integer)' });
  }
  const sport = sportId === undefined ? undefined : rules.get(sportId);
  if (sportId !== undefined && !sport) errors.push({ path: `${path}.sport_id`, message: `unknown sport ${sportId}` });
  const input: ActivityInput = { sport_id: sportId ?? 0, attributes: {} };
  if ('tags' in body) {
    const tags = body.tags;
    if (!Array.isArray(tags) || !tags.every((t) => typeof t === 'string')) {
      errors.push({ path: `${path}.tags`, message: 'tags must be an array of tag slugs' });
    } else {
      input.tags = [...new Set(tags as string[])].sort();
      tags.forEach((t, i) => {
        if (sport && !sport.tags.has(t as string))
          errors.push({
            path: `${path}.tags[${i}]`,
            message: `tag "${t}" is not allowed for sport ${sport.id} (allowed: ${[...sport.tags].sort().join(', ') || 'none'})`,
          });
      });
    }
  }
  if ('photo_reference' in body) {
    const p = body.photo_reference;
    if (p !== null && typeof p !== 'string')
      errors.push({ path: `${path}.photo_reference`, message: 'photo_reference must be a string or null' });
    else input.photo_reference = p;
  }
  const values: [string, unknown, string][] = [];
  if ('attributes' in body) {
    const a = body.attributes;
    if (typeof a !== 'object' || a === null || Array.isArray(a))
      errors.push({ path: `${path}.attributes`, message: 'attributes must be an object of filter values' });
    else for (const [k, v] of Object.entries(a)) values.push([k, v, `${path}.attributes.${k}`]);
  }
  for (const [k, v] of Object.entries(body)) if (!RESERVED.has(k)) values.push([k, v, `${path}.${k}`]);
  for (const [key, value, p] of values) {
    if (!sport) continue;
    const def = sport.filters.get(key);
    if (!def) {
      errors.push({
        path: p,
        message: `"${key}" is not a filter allowed for sport ${sport.id} (allowed: ${[...sport.filters.keys()].sort().join(', ') || 'none'})`,
      });
      continue;
    }
    if (value === null && mode.update) {
      input.attributes[key] = null;
      continue;
    }
    const r = filterValue(def, value);
    if (r.message) errors.push({ path: p, message: r.message });
    else input.attributes[key] = r.value as number | string;
  }
  return errors.length ? { errors } : { input, errors };
}

/** Applies an update's attribute changes (null removes) to stored attributes. */
export function mergeAttributes(stored: ActivityAttributes, changes: ActivityInput['attributes']): ActivityAttributes {
  const out: ActivityAttributes = { ...stored };
  for (const [k, v] of Object.entries(changes)) {
    if (v === null) delete out[k];
    else out[k] = v;
  }
  return out;
}

/**
 * Validates a list of activity bodies in one pass (two queries for the rules): each against its
 * sport, one activity per sport. A sport in `existing` is checked as an update of that activity,
 * the others as creations. Throws one 422-kind error listing every problem.
 */
export async function checkActivityList(
  db: Db,
  bodies: readonly Record<string, unknown>[],
  path: string,
  existing: ReadonlySet<number> = new Set(),
): Promise<ActivityInput[]> {
  const rules = await sportRules(
    db,
    bodies.map((b) => parseSportId(b.sport_id) ?? 0),
  );
  const errors: FieldError[] = [];
  const inputs: ActivityInput[] = [];
  const seen = new Set<number>();
  bodies.forEach((body, i) => {
    const sportId = parseSportId(body.sport_id);
    const at = `${path}[${i}]`;
    const mode = sportId !== undefined && existing.has(sportId) ? { update: true, sportId } : { update: false };
    const r = checkActivity(body, at, rules, mode);
    errors.push(...r.errors);
    if (!r.input) return;
    if (seen.has(r.input.sport_id))
      errors.push({
        path: `${at}.sport_id`,
        message: `sport ${r.input.sport_id} is listed twice: one activity per sport`,
      });
    seen.add(r.input.sport_id);
    inputs.push(r.input);
  });
  if (errors.length) throw invalid(errors);
  return inputs;
}

/** Validates one activity body (a creation, or an update of the activity of `sportId`). */
export async function checkOneActivity(
  db: Db,
  body: Record<string, unknown>,
  path: string,
  mode: { update: boolean; sportId?: number },
): Promise<ActivityInput> {
  const ids = mode.sportId !== undefined ? [mode.sportId] : [parseSportId(body.sport_id) ?? 0];
  const r = checkActivity(body, path, await sportRules(db, ids), mode);
  if (!r.input) throw invalid(r.errors);
  return r.input;
}
