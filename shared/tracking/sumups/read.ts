import { type Selectable, sql } from 'kysely';
import type { Db } from '../../db/database.ts';
import type { Found, PageRequest } from '../../db/paging.ts';
import type { UserSumupsTable } from '../../db/schema/sumups.ts';
import { type FieldError, invalid, notFoundError } from '../../errors.ts';
import type { SumupType } from './periods.ts';

/**
 * Reading the statistics by period (table user_sumups, kept by the records job). Each read is one
 * statement over the index user_sumups_key (user, type, period, sport, datatype).
 */
/** A row as the API shows it (how many activities add to it stays internal). */
export type UserSumup = Omit<Selectable<UserSumupsTable>, 'activities'>;

export const SUMUP_ORDERS = ['period', 'id', 'datatype.id'] as const;
export type SumupOrder = { prop: (typeof SUMUP_ORDERS)[number]; direction: 'asc' | 'desc' };

/** Bounds on a period's first day (`YYYY-MM-DD`), API Platform's range filter: each optional, `between` inclusive. */
export interface PeriodBounds {
  between?: [string, string];
  gt?: string;
  gte?: string;
  lt?: string;
  lte?: string;
}

/** Each member, when given, keeps the rows matching one of its values. */
export interface SumupFilter {
  /** Only the caller's rows are ever listed, so naming only other users lists nothing. */
  users?: string[];
  types?: SumupType[];
  /** Exact first days of periods. */
  periods?: string[];
  period?: PeriodBounds;
  sports?: number[];
  /** `exists[sport]`: false keeps the every-sport rows (sport null), true the per-sport rows. */
  hasSport?: boolean;
  datatypes?: number[];
  /** In priority order; then period, type (week, month, year), every sport first, datatype, id. */
  order?: SumupOrder[];
}

const ORDER_COLUMNS = { period: 'user_sumups.period', id: 'user_sumups.id', 'datatype.id': 'user_sumups.datatype_id' };

const COLUMNS = [
  'user_sumups.id',
  'user_sumups.user_id',
  'user_sumups.type',
  sql<string>`to_char(user_sumups.period, 'YYYY-MM-DD')`.as('period'),
  'user_sumups.sport_id',
  'user_sumups.datatype_id',
  // numeric as text: exact; the API turns it into a JSON number.
  'user_sumups.value',
  'user_sumups.created_at',
  'user_sumups.updated_at',
] as const;

/** The caller's rows matching `filter`, ordered, without paging. */
export function sumupsQuery(db: Db, callerId: string, filter: SumupFilter) {
  let q = db.selectFrom('user_sumups').select(COLUMNS).where('user_sumups.user_id', '=', callerId);
  if (filter.users && !filter.users.includes(callerId)) q = q.where(sql<boolean>`false`);
  if (filter.types) q = q.where('user_sumups.type', 'in', filter.types);
  if (filter.periods) q = q.where('user_sumups.period', 'in', filter.periods);
  const bounds = filter.period ?? {};
  if (bounds.between)
    q = q.where('user_sumups.period', '>=', bounds.between[0]).where('user_sumups.period', '<=', bounds.between[1]);
  if (bounds.gt) q = q.where('user_sumups.period', '>', bounds.gt);
  if (bounds.gte) q = q.where('user_sumups.period', '>=', bounds.gte);
  if (bounds.lt) q = q.where('user_sumups.period', '<', bounds.lt);
  if (bounds.lte) q = q.where('user_sumups.period', '<=', bounds.lte);
  if (filter.sports) q = q.where('user_sumups.sport_id', 'in', filter.sports);
  if (filter.hasSport !== undefined) q = q.where('user_sumups.sport_id', filter.hasSport ? 'is not' : 'is', null);
  if (filter.datatypes) q = q.where('user_sumups.datatype_id', 'in', filter.datatypes);
  const order = filter.order ?? [];
  // Qualified: the bare `period` of an ORDER BY would be the text of the selection.
  for (const o of order) q = q.orderBy(sql.ref(ORDER_COLUMNS[o.prop]), o.direction);
  const given = new Set(order.map((o) => o.prop));
  if (!given.has('period')) q = q.orderBy(sql.ref('user_sumups.period'));
  q = q
    .orderBy(sql`array_position(array['week', 'month', 'year'], user_sumups.type)`)
    .orderBy(sql`user_sumups.sport_id nulls first`);
  if (!given.has('datatype.id')) q = q.orderBy('user_sumups.datatype_id');
  if (!given.has('id')) q = q.orderBy('user_sumups.id');
  return q;
}

/**
 * One page of the caller's rows and how many match in all, in one statement (the count is a
 * window over the matches); a page past the end counts them again. A `datatype` filter naming a
 * datatype that is not summed is a 422 (it would only ever list nothing).
 */
export async function listSumups(
  db: Db,
  callerId: string,
  filter: SumupFilter,
  paging: PageRequest,
): Promise<Found<UserSumup>> {
  const query = sumupsQuery(db, callerId, filter);
  const [refused, rows] = await Promise.all([
    unsummedDatatypes(db, filter.datatypes ?? [], 'query.datatype'),
    query
      .select(sql<number>`count(*) over ()`.as('total'))
      .limit(paging.limit)
      .offset((paging.page - 1) * paging.limit)
      .execute(),
  ]);
  if (refused.length) throw invalid(refused);
  if (rows.length === 0 && paging.page > 1) {
    const counted = await query
      .clearSelect()
      .clearOrderBy()
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .executeTakeFirstOrThrow();
    return { items: [], total: Number(counted.n) };
  }
  const total = Number(rows[0]?.total ?? 0);
  return { items: rows.map(({ total: _, ...row }) => row), total };
}

/** The caller's row `id`; another user's or a missing one is a 404 (no existence leak). */
export async function findSumup(db: Db, callerId: string, id: string): Promise<UserSumup> {
  const row = await db
    .selectFrom('user_sumups')
    .select(COLUMNS)
    .where('user_sumups.id', '=', id)
    .where('user_sumups.user_id', '=', callerId)
    .executeTakeFirst();
  if (!row) throw notFoundError(`No user sumup ${id}`);
  return row;
}

/** How long the API keeps the set of summed datatypes: the referential changes only with a seed. */
const SUMMED_TTL_MS = 60_000;
const summedCache = new WeakMap<Db, { until: number; ids: Promise<ReadonlySet<number>> }>();

/** The cumulable datatypes (the ones the rollup sums), kept SUMMED_TTL_MS per process: no query per request. */
function summedDatatypeIds(db: Db): Promise<ReadonlySet<number>> {
  const cached = summedCache.get(db);
  if (cached && cached.until > Date.now()) return cached.ids;
  const ids = db
    .selectFrom('datatypes')
    .select('id')
    .where('cumulable', '=', true)
    .execute()
    .then((rows) => new Set(rows.map((r) => r.id)) as ReadonlySet<number>);
  // A failed read is not kept.
  ids.catch(() => summedCache.delete(db));
  summedCache.set(db, { until: Date.now() + SUMMED_TTL_MS, ids });
  return ids;
}

/** The `datatype` filter's values that are not summed (not cumulable, or no such datatype): a 422 each. */
export async function unsummedDatatypes(db: Db, ids: readonly number[], path: string): Promise<FieldError[]> {
  if (ids.length === 0) return [];
  const known = await summedDatatypeIds(db);
  return [...new Set(ids)]
    .filter((id) => !known.has(id))
    .map((id) => ({
      path,
      message: `datatype ${id} is not summed in the statistics (only the cumulable datatypes of /v2/datatypes are)`,
    }));
}

/** A user's totals over all time: per datatype, for every sport (sport null) and per sport. */
export interface UserTotals {
  sportId: number | null;
  datatypeId: number;
  /** Decimal text, exact. */
  value: string;
}

/**
 * The user's totals, summed from their yearly rows (each activity is in exactly one year): one
 * statement over the index range of (user, 'year'), whatever the history's length.
 */
export async function userTotals(db: Db, userId: string): Promise<UserTotals[]> {
  const rows = await db
    .selectFrom('user_sumups')
    .select(['sport_id', 'datatype_id', sql<string>`sum(value)::text`.as('value')])
    .where('user_id', '=', userId)
    .where('type', '=', 'year')
    .groupBy(['sport_id', 'datatype_id'])
    .orderBy(sql`sport_id nulls first`)
    .orderBy('datatype_id')
    .execute();
  return rows.map((r) => ({ sportId: r.sport_id, datatypeId: r.datatype_id, value: r.value }));
}
