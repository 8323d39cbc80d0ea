import { type Selectable, sql } from 'kysely';
import { type Db, poolOf } from '../../db/database.ts';
import type { Found, PageRequest } from '../../db/paging.ts';
import type { UserSumupsTable } from '../../db/schema/sumups.ts';
import { Params, type Statement, statement, statementNames } from '../../db/statement.ts';
import { type FieldError, invalid, notFoundError } from '../../errors.ts';
import { sqlDateTime } from '../dates.ts';
import type { SumupType } from './periods.ts';

/**
 * Reading the statistics by period (table user_sumups, kept by the records job). Each read is one
 * statement over the index user_sumups_key (user, type, period, sport, datatype).
 */
/**
 * A row as the API shows it (how many activities add to it stays internal), its instants written
 * as the tracking service writes them (formatDateTime, by the statement).
 */
export type UserSumup = Omit<Selectable<UserSumupsTable>, 'activities' | 'created_at' | 'updated_at'> & {
  created_at: string;
  updated_at: string;
};

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

const ORDER_COLUMNS = { period: 's.period', id: 's.id', 'datatype.id': 's.datatype_id' };

/** What a read selects: the period and the instants already written as the API writes them. */
const COLUMNS = `s.id, s.user_id, s.type, to_char(s.period, 'YYYY-MM-DD') as period, s.sport_id, s.datatype_id,
  s.value, ${sqlDateTime('s.created_at')} as created_at, ${sqlDateTime('s.updated_at')} as updated_at`;

const names = statementNames('tracking_sumups');

/**
 * The caller's rows matching `filter`, ordered, one page of them with how many match in all (a
 * window over the matches): the statement listSumups runs (bench/tracking-sumups.ts runs it bare).
 * Each filter's values are one array parameter, so the text depends only on which filters are
 * present and the order asked.
 */
export function sumupsStatement(callerId: string, filter: SumupFilter, paging: PageRequest): Statement {
  const ps = new Params();
  const where = [`s.user_id = ${ps.add(callerId)}`];
  if (filter.users && !filter.users.includes(callerId)) where.push('false');
  if (filter.types) where.push(`s.type = any(${ps.add(filter.types)}::text[])`);
  if (filter.periods) where.push(`s.period = any(${ps.add(filter.periods)}::date[])`);
  const bounds = filter.period ?? {};
  if (bounds.between)
    where.push(`s.period >= ${ps.add(bounds.between[0])}::date`, `s.period <= ${ps.add(bounds.between[1])}::date`);
  if (bounds.gt) where.push(`s.period > ${ps.add(bounds.gt)}::date`);
  if (bounds.gte) where.push(`s.period >= ${ps.add(bounds.gte)}::date`);
  if (bounds.lt) where.push(`s.period < ${ps.add(bounds.lt)}::date`);
  if (bounds.lte) where.push(`s.period <= ${ps.add(bounds.lte)}::date`);
  if (filter.sports) where.push(`s.sport_id = any(${ps.add(filter.sports)}::int[])`);
  if (filter.hasSport !== undefined) where.push(`s.sport_id is ${filter.hasSport ? 'not ' : ''}null`);
  if (filter.datatypes) where.push(`s.datatype_id = any(${ps.add(filter.datatypes)}::int[])`);
  const order = (filter.order ?? []).map((o) => `${ORDER_COLUMNS[o.prop]} ${o.direction}`);
  const given = new Set((filter.order ?? []).map((o) => o.prop));
  if (!given.has('period')) order.push('s.period');
  order.push("array_position(array['week', 'month', 'year'], s.type)", 's.sport_id nulls first');
  if (!given.has('datatype.id')) order.push('s.datatype_id');
  if (!given.has('id')) order.push('s.id');
  const text = `select ${COLUMNS}, count(*) over () as total from user_sumups s
    where ${where.join(' and ')}
    order by ${order.join(', ')}
    limit ${ps.add(paging.limit)} offset ${ps.add((paging.page - 1) * paging.limit)}`;
  return statement(names, text, ps.values);
}

/**
 * One page of the caller's rows and how many match in all, in one statement (the count is a
 * window over the matches); a page past the end counts them again. A `datatype` filter naming a
 * datatype that is not summed is a 422 (it would only ever list nothing). `db` must be one
 * createDb made (the statement goes straight to its pool, prepared).
 */
export async function listSumups(
  db: Db,
  callerId: string,
  filter: SumupFilter,
  paging: PageRequest,
): Promise<Found<UserSumup>> {
  const { name, text, values } = sumupsStatement(callerId, filter, paging);
  const [refused, { rows }] = await Promise.all([
    unsummedDatatypes(db, filter.datatypes ?? [], 'query.datatype'),
    poolOf(db).query<UserSumup & { total: number }>({ name, text, values }),
  ]);
  if (refused.length) throw invalid(refused);
  if (rows.length === 0 && paging.page > 1) {
    const counted = await countSumups(db, callerId, filter);
    return { items: [], total: counted };
  }
  const total = Number(rows[0]?.total ?? 0);
  return { items: rows.map(({ total: _, ...row }) => row), total };
}

/** How many of the caller's rows match `filter` (a page past the end). */
async function countSumups(db: Db, callerId: string, filter: SumupFilter): Promise<number> {
  // The page's own statement counts them in its window: its first row is enough.
  const { name, text, values } = sumupsStatement(callerId, filter, { page: 1, limit: 1 });
  const { rows } = await poolOf(db).query<{ total: number }>({ name, text, values });
  return Number(rows[0]?.total ?? 0);
}

const findStatement = `select ${COLUMNS} from user_sumups s where s.id = $1 and s.user_id = $2`;

/** The caller's row `id`; another user's or a missing one is a 404 (no existence leak). */
export async function findSumup(db: Db, callerId: string, id: string): Promise<UserSumup> {
  const { rows } = await poolOf(db).query<UserSumup>({
    name: 'tracking_sumup',
    text: findStatement,
    values: [id, callerId],
  });
  const row = rows[0];
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
