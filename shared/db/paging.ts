import { type SelectQueryBuilder, type StringReference, sql } from 'kysely';

/** A page of a list: 1-based `page` of `limit` rows. */
export interface PageRequest {
  page: number;
  limit: number;
}

/** One page of rows and the number of rows matching the filters. */
export interface Found<T> {
  items: T[];
  total: number;
}

/**
 * One page of `query` (filtered and ordered) and how many rows it matches in all, both read
 * together. The count replaces the selection and drops the order, so `query` must not group or
 * use distinct: its row count is then the count of its filtered table expression.
 */
export async function pageOf<DB, TB extends keyof DB, O>(
  query: SelectQueryBuilder<DB, TB, O>,
  paging: PageRequest,
): Promise<Found<O>> {
  const [items, count] = await Promise.all([
    query
      .limit(paging.limit)
      .offset((paging.page - 1) * paging.limit)
      .execute(),
    query
      .clearSelect()
      .clearOrderBy()
      .select((eb) => eb.fn.countAll().as('n'))
      // Kysely cannot resolve a selection's type over a generic database; it is the one column above.
      .$castTo<{ n: number | string }>()
      .executeTakeFirstOrThrow(),
  ]);
  // count(*) is a bigint, which pg returns as a string unless a type parser turns it into a number.
  return { items, total: Number(count.n) };
}

/** `after` and `before` include the bound, the `strictly_` forms exclude it (API Platform's DateFilter). */
export interface DateBounds {
  after?: Date;
  before?: Date;
  strictly_after?: Date;
  strictly_before?: Date;
}

/** `query` keeping the rows whose `column` is within `bounds` (each bound optional; none: all rows). */
export function whereDateBounds<DB, TB extends keyof DB, O>(
  query: SelectQueryBuilder<DB, TB, O>,
  column: StringReference<DB, TB>,
  bounds: DateBounds | undefined,
): SelectQueryBuilder<DB, TB, O> {
  if (!bounds) return query;
  // A raw reference: Kysely cannot relate a Date to a column of a generic database.
  const ref = sql.ref<Date>(column);
  let q = query;
  if (bounds.after) q = q.where(ref, '>=', bounds.after);
  if (bounds.before) q = q.where(ref, '<=', bounds.before);
  if (bounds.strictly_after) q = q.where(ref, '>', bounds.strictly_after);
  if (bounds.strictly_before) q = q.where(ref, '<', bounds.strictly_before);
  return q;
}

/**
 * pageOf in one statement: the page's rows carry the count of every match (a window over the
 * filtered rows, before the limit). A page past the end has no row to carry it: counted apart.
 */
export async function pageWithTotal<DB, TB extends keyof DB, O>(
  query: SelectQueryBuilder<DB, TB, O>,
  paging: PageRequest,
): Promise<Found<O>> {
  // Kysely cannot resolve a selection's type over a generic database: the rows and the count.
  const rows = (await query
    .select(sql<string>`count(*) over ()`.as('matching_rows'))
    .limit(paging.limit)
    .offset((paging.page - 1) * paging.limit)
    .execute()) as (O & { matching_rows: string })[];
  const items = rows.map(({ matching_rows: _, ...row }) => row as O);
  const first = rows[0];
  if (first) return { items, total: Number(first.matching_rows) };
  if (paging.page === 1) return { items, total: 0 };
  const count = await query
    .clearSelect()
    .clearOrderBy()
    .select((eb) => eb.fn.countAll().as('n'))
    .$castTo<{ n: number | string }>()
    .executeTakeFirstOrThrow();
  return { items, total: Number(count.n) };
}
