import { type Compilable, CompiledQuery, type RawBuilder, sql } from 'kysely';
import { type Db, poolOf } from '../db/database.ts';

/**
 * The credentials of every authenticated request are read by statements of a fixed text: they are
 * built with Kysely once, with numbered placeholders instead of values, and run as named prepared
 * statements, so PostgreSQL plans them once per connection instead of once per request (their
 * joins cost more to plan than to run). DATABASE_PREPARED_STATEMENTS=false drops the name in the
 * pool (shared/db/database.ts) and they run unnamed.
 */

/** `$n` in a statement built once: its value comes with each run, in position n. */
export function placeholder<T>(n: number): RawBuilder<T> {
  return sql.raw<T>(`$${n}`);
}

/** A statement built once by `build` (its values all placeholders), run with `values` in order. */
export function preparedStatement<Row>(
  name: string,
  build: (db: Db) => Compilable<Row>,
): (db: Db, values: readonly unknown[]) => Promise<Row[]> {
  let text: string | undefined;
  return async (db, values) => {
    text ??= build(db).compile().sql;
    const pool = poolOrUndefined(db);
    if (!pool) return (await db.executeQuery<Row>(CompiledQuery.raw(text, [...values]))).rows;
    return (await pool.query({ name, text, values: [...values] })).rows as Row[];
  };
}

/** The pool behind `db`, or undefined for a transaction (which runs the statement unnamed). */
function poolOrUndefined(db: Db) {
  try {
    return poolOf(db);
  } catch {
    return undefined;
  }
}
