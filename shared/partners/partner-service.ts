import { sql } from 'kysely';
import type pg from 'pg';
import slugify from 'slugify';
import type { Db } from '../db/database.ts';
import { conflictError, type FieldError, invalid, notFoundError } from '../errors.ts';
import { isUuid } from '../places/activities.ts';
import { linkProblem } from '../places/links.ts';
import { isCountryCode } from '../places/places.ts';
import { assertMayModifyPartners, type PartnerCaller } from './permissions.ts';
import {
  type PartnerSearchParams,
  type PartnerSearchQuery,
  parsePartnerSearch,
  partnerSearchParams,
} from './search-query.ts';
import { compilePartnerSearch, PARTNER_JSON, type PartnerSearchRow } from './search-sql.ts';

/** A partner as every read returns it (the spec's fields; lat/lng are strings). */
export interface PartnerJson {
  uuid: string;
  slug: string;
  title: string;
  source: string;
  description: string | null;
  link: string;
  featured: boolean;
  partner: boolean;
  city: string | null;
  province: string | null;
  country: string | null;
  lat: string;
  lng: string;
  radius: number | null;
  image_ref: string | null;
  user_id: number;
  sports: { sport: number }[];
}

type SportRef = { sport?: unknown };

/** The body's `partner` member on POST and PUT (types checked by the API's schema; rules here). */
export interface PartnerInput {
  user_id?: number | string | undefined;
  title?: string | undefined;
  source?: string | undefined;
  description?: string | null | undefined;
  link?: string | undefined;
  featured?: boolean | undefined;
  partner?: boolean | undefined;
  city?: string | null | undefined;
  province?: string | null | undefined;
  country?: string | null | undefined;
  lat?: number | string | undefined;
  lng?: number | string | undefined;
  radius?: number | null | undefined;
  image_ref?: string | null | undefined;
  /** Only on creation (default: from the title); never changes afterwards. */
  slug?: string | undefined;
  sports_attributes?: SportRef[] | undefined;
  /** The spec's other spelling of sports_attributes. */
  sport_attributes?: SportRef[] | undefined;
}

const BASE = 'body.partner';
const REQUIRED = ['user_id', 'title', 'source', 'link', 'lat', 'lng'] as const;
export const SLUG_RE = /^[a-z0-9][a-z0-9_-]{0,99}$/;
const NUMBER = /^\s*[+-]?(\d+(\.\d*)?|\.\d+)\s*$/;

/** One page (25) of a search with a validated query (partnerSearchQuery), straight from PostgreSQL. */
export async function findPartners(
  pool: pg.Pool,
  query: PartnerSearchQuery,
): Promise<{ json: string; count: number; page: number }> {
  return runSearch(pool, partnerSearchParams(query));
}

/** The same from a raw query string (scripts, tests): every invalid parameter named in one `invalid` error. */
export async function searchPartners(
  pool: pg.Pool,
  query: Record<string, string | string[] | undefined>,
): Promise<{ json: string; count: number; page: number }> {
  const { params, errors } = parsePartnerSearch(query);
  if (!params) throw invalid(errors, 'Invalid search query');
  return runSearch(pool, params);
}

async function runSearch(
  pool: pg.Pool,
  params: PartnerSearchParams,
): Promise<{ json: string; count: number; page: number }> {
  const q = compilePartnerSearch(params);
  const row = (await pool.query<PartnerSearchRow>({ name: q.name, text: q.sql, values: q.parameters })).rows[0];
  return { json: row?.partners ?? '', count: row?.found ?? 0, page: params.page };
}

async function findPartnerId(db: Db, idOrSlug: string): Promise<{ id: number; slug: string }> {
  const row = await db
    .selectFrom('partners')
    .select(['id', 'slug'])
    .where(isUuid(idOrSlug) ? 'uuid' : 'slug', '=', idOrSlug)
    .executeTakeFirst();
  if (!row) throw notFoundError('Partner not found');
  return { id: Number(row.id), slug: row.slug };
}

/** One partner by uuid or slug; unknown: not found. */
export async function partnerById(db: Db, idOrSlug: string): Promise<PartnerJson> {
  return partnerJson(db, (await findPartnerId(db, idOrSlug)).id);
}

async function partnerJson(db: Db, id: number): Promise<PartnerJson> {
  const row = await sql<{
    json: PartnerJson;
  }>`select ${sql.raw(PARTNER_JSON)} as json from partners p where p.id = ${id}`.execute(db);
  return (row.rows[0] as { json: PartnerJson }).json;
}

/** What a valid body becomes: the columns to write and the sport ids, when given. */
interface Checked {
  columns: Record<string, unknown>;
  sports?: number[];
}

function text(v: string | null | undefined): string | null | undefined {
  if (v === undefined || v === null) return v;
  const t = v.trim();
  return t === '' ? null : t;
}

/** Every rule of a partner body; `creating` makes the spec's mandatory fields required. */
async function checkInput(db: Db, input: PartnerInput, creating: boolean): Promise<Checked> {
  const errors: FieldError[] = [];
  const columns: Record<string, unknown> = {};
  const err = (field: string, message: string) => errors.push({ path: `${BASE}.${field}`, message });
  for (const field of REQUIRED) {
    const v = input[field];
    const blank = v === undefined || v === null || (typeof v === 'string' && v.trim() === '');
    if (blank && (creating || v !== undefined)) err(field, `${field} is required`);
  }
  for (const field of ['title', 'source'] as const) {
    const v = text(input[field]);
    if (v) {
      if (v.length > 200) err(field, `${field} is at most 200 characters`);
      else columns[field] = v;
    }
  }
  for (const field of ['description', 'city', 'province', 'image_ref'] as const) {
    const v = input[field];
    if (v === undefined) continue;
    const t = text(v);
    const max = field === 'description' ? 5000 : field === 'image_ref' ? 2000 : 200;
    if (t && t.length > max) err(field, `${field} is at most ${max} characters`);
    else columns[field] = t ?? null;
  }
  if (input.link !== undefined && text(input.link)) {
    // The same rule as the places' links: clients show it as an href (shared/places/links.ts).
    const link = (input.link as string).trim();
    const problem = linkProblem(link);
    if (problem) err('link', `link ${problem}`);
    else columns.link = link;
  }
  if (input.country !== undefined) {
    const c = text(input.country);
    if (c && !isCountryCode(c)) err('country', `"${c}" is not a 2-letter ISO 3166-1 alpha-2 country code (e.g. FR)`);
    else columns.country = c ?? null;
  }
  for (const [field, max] of [
    ['lat', 90],
    ['lng', 180],
  ] as const) {
    const v = input[field];
    if (v === undefined || v === null || (typeof v === 'string' && v.trim() === '')) continue;
    const n = typeof v === 'number' ? v : NUMBER.test(v) ? Number(v) : Number.NaN;
    if (!Number.isFinite(n) || Math.abs(n) > max)
      err(field, `${field} must be a number from -${max} to ${max} (degrees)`);
    else columns[field] = n;
  }
  if (input.radius !== undefined) {
    const r = input.radius;
    if (r !== null && !(Number.isInteger(r) && r >= 0 && r <= 20_000_000))
      err('radius', 'radius must be a non-negative integer');
    else columns.radius = r;
  }
  for (const field of ['featured', 'partner'] as const) if (input[field] !== undefined) columns[field] = input[field];
  if (input.user_id !== undefined && input.user_id !== null && String(input.user_id).trim() !== '') {
    const raw = String(input.user_id).trim();
    if (!/^\d{1,15}$/.test(raw)) err('user_id', 'user_id must be a positive integer (an account number)');
    else {
      const account = await db.selectFrom('accounts').select('id').where('number', '=', Number(raw)).executeTakeFirst();
      if (!account) err('user_id', `no account has the number ${raw}`);
      else columns.user_id = raw;
    }
  }
  if (input.slug !== undefined) {
    if (!creating) err('slug', 'the slug never changes (places refer to partners by it)');
    else if (!SLUG_RE.test(input.slug))
      err('slug', 'slug must be 1 to 100 lowercase letters, digits, "-" or "_", starting with a letter or digit');
    else columns.slug = input.slug;
  }
  const sports = await checkSports(db, input, creating, errors);
  if (errors.length) throw invalid(errors);
  return { columns, ...(sports ? { sports } : {}) };
}

/** `sports_attributes` (or `sport_attributes`): at least one sport, each one that exists. */
async function checkSports(
  db: Db,
  input: PartnerInput,
  creating: boolean,
  errors: FieldError[],
): Promise<number[] | undefined> {
  if (input.sports_attributes !== undefined && input.sport_attributes !== undefined) {
    errors.push({ path: `${BASE}.sports_attributes`, message: 'send sports_attributes or sport_attributes, not both' });
    return undefined;
  }
  const key = input.sport_attributes !== undefined ? 'sport_attributes' : 'sports_attributes';
  const list = input[key];
  if (list === undefined) {
    if (creating) errors.push({ path: `${BASE}.sports_attributes`, message: 'at least one sport is required' });
    return undefined;
  }
  if (list.length === 0) {
    errors.push({ path: `${BASE}.${key}`, message: 'at least one sport is required' });
    return undefined;
  }
  const ids: number[] = [];
  list.forEach((entry, i) => {
    const v = entry.sport;
    const n = typeof v === 'number' ? v : typeof v === 'string' && /^\d{1,9}$/.test(v) ? Number(v) : Number.NaN;
    if (Number.isInteger(n) && n > 0) ids.push(n);
    else errors.push({ path: `${BASE}.${key}[${i}].sport`, message: 'sport must be a sport id (a positive integer)' });
  });
  if (ids.length !== list.length) return undefined;
  const known = new Set(
    (await db.selectFrom('sports').select('id').where('id', 'in', ids).execute()).map((r) => Number(r.id)),
  );
  ids.forEach((id, i) => {
    if (!known.has(id)) errors.push({ path: `${BASE}.${key}[${i}].sport`, message: `no sport has the id ${id}` });
  });
  return [...new Set(ids)];
}

/** A free slug from the title: the title's slug, else with -2, -3... */
async function slugFor(db: Db, title: string): Promise<string> {
  const base = slugify(title, { lower: true, strict: true, trim: true }).slice(0, 80).replace(/-+$/, '') || 'partner';
  const taken = new Set(
    (await db.selectFrom('partners').select('slug').where('slug', 'like', `${base}%`).execute()).map((r) => r.slug),
  );
  if (!taken.has(base) && !isUuid(base)) return base;
  for (let i = 2; ; i++) if (!taken.has(`${base}-${i}`)) return `${base}-${i}`;
}

async function writeSports(db: Db, partnerId: number, sports: number[]): Promise<void> {
  await db.deleteFrom('partner_sports').where('partner_id', '=', partnerId).execute();
  await db
    .insertInto('partner_sports')
    .values(sports.map((sport_id) => ({ partner_id: partnerId, sport_id })))
    .execute();
}

const isUniqueViolation = (e: unknown) => (e as { code?: string }).code === '23505';

/** POST /partners (staff): the partner, with a slug from the title unless one is given. */
export async function createPartnerAs(db: Db, caller: PartnerCaller, input: PartnerInput): Promise<PartnerJson> {
  assertMayModifyPartners(caller);
  const { columns, sports } = await checkInput(db, input, true);
  const explicit = typeof columns.slug === 'string';
  for (let attempt = 0; ; attempt++) {
    const slug = explicit ? (columns.slug as string) : await slugFor(db, columns.title as string);
    try {
      const id = await db.transaction().execute(async (trx) => {
        const row = await trx
          .insertInto('partners')
          .values({ ...columns, slug, created_by: caller.accountId } as never)
          .returning('id')
          .executeTakeFirstOrThrow();
        await writeSports(trx, Number(row.id), sports ?? []);
        return Number(row.id);
      });
      return partnerJson(db, id);
    } catch (e) {
      if (!isUniqueViolation(e)) throw e;
      if (explicit)
        throw conflictError('slug already used', [{ path: `${BASE}.slug`, message: `"${slug}" is already used` }]);
      if (attempt >= 3) throw e; // two creations racing for the same title slug, more than a few times
    }
  }
}

/** PUT /partners/{id} (staff): the fields sent; sports, when sent, replace the list. */
export async function updatePartnerAs(
  db: Db,
  caller: PartnerCaller,
  idOrSlug: string,
  input: PartnerInput,
): Promise<PartnerJson> {
  assertMayModifyPartners(caller);
  const { id } = await findPartnerId(db, idOrSlug);
  if (!Object.values(input).some((v) => v !== undefined))
    throw invalid([{ path: BASE, message: 'send at least one field to change' }]);
  const { columns, sports } = await checkInput(db, input, false);
  await db.transaction().execute(async (trx) => {
    await trx
      .updateTable('partners')
      .set({ ...columns, updated_at: new Date() } as never)
      .where('id', '=', id)
      .execute();
    if (sports) await writeSports(trx, id, sports);
  });
  return partnerJson(db, id);
}

/**
 * DELETE /partners/{id} (staff): the partner and its sports; places that named it lose their
 * `partner` slug in the same transaction (it would name nobody).
 */
export async function deletePartnerAs(db: Db, caller: PartnerCaller, idOrSlug: string): Promise<void> {
  assertMayModifyPartners(caller);
  const { id, slug } = await findPartnerId(db, idOrSlug);
  await db.transaction().execute(async (trx) => {
    await trx.updateTable('places').set({ partner: null }).where('partner', '=', slug).execute();
    await trx.deleteFrom('partners').where('id', '=', id).execute();
  });
}
