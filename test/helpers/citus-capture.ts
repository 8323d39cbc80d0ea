import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { type CompiledQuery, DefaultQueryExecutor, sql } from 'kysely';
import pg from 'pg';
import type { Db } from '../../shared/db/database.ts';

/**
 * Records every statement this process sends to PostgreSQL while a capture is on: those Kysely
 * compiled (from the builders or `sql` templates, as executed: SQL text, parameters) and the few
 * the code sends straight through the driver (prepared statements by name, binary COPY), each
 * with the place in the project's code that issued it. For test/scale-citus-routing.test.ts.
 *
 * Kysely's own hooks (plugins, `log`) belong to one Kysely instance, and the API and the workers
 * make theirs inside startApi/startWorkers; so the capture wraps the two doors every instance's
 * statements pass through: Kysely's executor base class (executeQuery, stream; not exported, it is
 * the prototype of DefaultQueryExecutor's) and pg.Client's query.
 */

type Executor = Pick<DefaultQueryExecutor, 'executeQuery' | 'stream'>;

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

export interface CapturedStatement {
  sql: string;
  parameters: readonly unknown[];
  /** `kysely`: compiled by Kysely; `driver`: text sent through pg directly. */
  via: 'kysely' | 'driver';
  /** Project frames (relative file:line:col), innermost first, outside node_modules and this helper. */
  frames: string[];
}

export interface Capture {
  statements: CapturedStatement[];
  stop: () => void;
}

/** Frames of the project's code on the current stack (the statement's call site comes first). */
function projectFrames(): string[] {
  const previous = Error.stackTraceLimit;
  Error.stackTraceLimit = 80;
  const stack = new Error('call site').stack ?? '';
  Error.stackTraceLimit = previous;
  const frames: string[] = [];
  for (const line of stack.split('\n').slice(1)) {
    const match = /\(?(?:file:\/\/)?(\/[^()\s]+):(\d+):(\d+)\)?\s*$/.exec(line);
    if (!match) continue;
    const [, file = '', row, column] = match;
    if (!file.startsWith(ROOT) || file.includes('/node_modules/')) continue;
    const relative = path.relative(ROOT, file);
    if (relative.startsWith('test/helpers/citus-')) continue;
    frames.push(`${relative}:${row}:${column}`);
  }
  return frames;
}

type ExecuteQuery = Executor['executeQuery'];
type Stream = Executor['stream'];
type ClientQuery = (this: pg.Client, ...args: unknown[]) => unknown;

/** Starts recording; `stop` puts the original methods back. One capture at a time. */
export function captureStatements(): Capture {
  const statements: CapturedStatement[] = [];
  const executor: Executor = Object.getPrototypeOf(DefaultQueryExecutor.prototype);
  const originalExecute = executor.executeQuery;
  const originalStream = executor.stream;
  const client = pg.Client.prototype as unknown as { query: ClientQuery };
  const originalQuery = client.query;
  // pool.query reaches client.query after the checkout, with the caller gone from the stack:
  // it is recorded at the pool, and the client skips what the pool recorded.
  const pool = pg.Pool.prototype as unknown as { query: ClientQuery };
  const originalPoolQuery = pool.query;
  const recorded = new WeakSet<object>();
  const driverStatement = (args: unknown[]): { text: string; values?: unknown[] } | undefined => {
    const [first] = args;
    if (!first || typeof first !== 'object' || recorded.has(first)) return undefined;
    const { text } = first as { text?: unknown };
    return typeof text === 'string' ? (first as { text: string; values?: unknown[] }) : undefined;
  };
  const record = (query: CompiledQuery) =>
    statements.push({ sql: query.sql, parameters: query.parameters, via: 'kysely', frames: projectFrames() });

  executor.executeQuery = function (this: Executor, query, options) {
    record(query);
    return originalExecute.call(this, query, options);
  } as ExecuteQuery;
  executor.stream = function (this: Executor, query, chunkSize, options) {
    record(query);
    return originalStream.call(this, query, chunkSize, options);
  } as Stream;
  // Kysely's connection calls query(text, parameters); an object with `text` is a statement
  // written for the driver (a named prepared statement, or a COPY stream of pg-copy-streams).
  const recordDriver = (args: unknown[]) => {
    const statement = driverStatement(args);
    if (!statement) return;
    recorded.add(statement);
    statements.push({
      sql: statement.text,
      parameters: statement.values ?? [],
      via: 'driver',
      frames: projectFrames(),
    });
  };
  client.query = function (this: pg.Client, ...args: unknown[]) {
    recordDriver(args);
    return originalQuery.apply(this, args);
  };
  pool.query = function (this: pg.Client, ...args: unknown[]) {
    recordDriver(args);
    return originalPoolQuery.apply(this, args);
  };
  return {
    statements,
    stop: () => {
      executor.executeQuery = originalExecute;
      executor.stream = originalStream;
      client.query = originalQuery;
      pool.query = originalPoolQuery;
    },
  };
}

/** Columns of every table (not view) of the database `db` reaches, to resolve unqualified column names. */
export async function tableColumns(db: Db): Promise<Map<string, Set<string>>> {
  const { rows } = await sql<{ table_name: string; column_name: string }>`
    select c.table_name, c.column_name from information_schema.columns c
    join information_schema.tables t using (table_schema, table_name)
    where c.table_schema = 'public' and t.table_type = 'BASE TABLE'`.execute(db);
  const columns = new Map<string, Set<string>>();
  for (const row of rows) {
    const set = columns.get(row.table_name) ?? new Set<string>();
    set.add(row.column_name);
    columns.set(row.table_name, set);
  }
  return columns;
}
