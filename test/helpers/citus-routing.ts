import { loadModule, parseSync } from 'libpg-query';
import { DISTRIBUTION, type Placement } from './citus-distribution.ts';

/**
 * Whether one statement, as sent to PostgreSQL, would run on one shard of the Citus layout of
 * citus-distribution.ts. The SQL text is parsed by PostgreSQL's own parser (libpg-query), so
 * what Kysely compiled from a builder, a raw `sql` fragment inside it and a statement written
 * for the driver are all read alike.
 *
 * The rule is Citus's router planner's: every distributed table the statement reads or writes
 * (in any CTE, subquery, EXISTS, UNION branch) has its distribution column equal to one value,
 * the same for all of them, with no coordinator-only table beside them. Equalities count from
 * the AND-ed conditions of WHERE and JOIN ... ON (`col = $n`, `col = 'literal'`, `col in ($n)`,
 * `col = any($n)` with a one-element array, `a.col = b.col`, as equivalence classes), and from
 * the values an INSERT puts in the column or that a CTE or subquery passes on as an output
 * column. Conditions under OR or NOT do not count.
 */

export interface TableUse {
  table: string;
  placement: Placement;
  /** The values its distribution column is pinned to (empty: not pinned). */
  values: string[];
}

export interface Routing {
  /** Distributed tables the statement touches, once per mention. */
  distributed: TableUse[];
  /** Coordinator-only tables it touches. */
  local: string[];
  /** Runs on one shard: every distributed mention pinned, one value in all, no local table. */
  oneShard: boolean;
}

type Node = Record<string, unknown>;
type Columns = Map<string, Set<string>>;

interface Range {
  id: number;
  /** A table's name; null for a CTE, a subquery or a function in FROM. */
  table: string | null;
  /** Known column names (null: unknown). */
  columns: Set<string> | null;
}

interface Scope {
  parent: Scope | null;
  ranges: Map<string, Range>;
  ctes: Map<string, Range>;
}

let loaded: Promise<void> | undefined;
/** Loads the parser (WebAssembly) once; routingOf needs it. */
export const loadSqlParser = (): Promise<void> => {
  loaded ??= loadModule();
  return loaded;
};

const child = (node: unknown, key: string): Node | undefined => {
  if (!node || typeof node !== 'object') return undefined;
  const value = (node as Node)[key];
  return value && typeof value === 'object' ? (value as Node) : undefined;
};
const list = (node: unknown, key: string): Node[] => {
  const value = node && typeof node === 'object' ? (node as Node)[key] : undefined;
  return Array.isArray(value) ? (value as Node[]) : [];
};
const str = (node: Node): string | undefined => child(node, 'String')?.sval as string | undefined;

/** The routing of `sql` run with `parameters`; `columns`: the database's tables and their columns. */
export function routingOf(sql: string, parameters: readonly unknown[], columns: Columns): Routing {
  const parent = new Map<string, string>();
  const find = (key: string): string => {
    let root = key;
    while (parent.has(root)) root = parent.get(root) as string;
    return root;
  };
  const union = (a: string | null, b: string | null) => {
    if (!a || !b) return;
    const [ra, rb] = [find(a), find(b)];
    if (ra !== rb) parent.set(ra, rb);
  };
  const ranges: Range[] = [];
  let next = 0;
  const newRange = (table: string | null, cols: Set<string> | null): Range => {
    const range = { id: next++, table, columns: cols };
    ranges.push(range);
    return range;
  };
  const newScope = (up: Scope | null): Scope => ({ parent: up, ranges: new Map(), ctes: new Map() });

  const cteOf = (scope: Scope | null, name: string): Range | undefined => {
    for (let s = scope; s; s = s.parent) {
      const found = s.ctes.get(name);
      if (found) return found;
    }
    return undefined;
  };

  const valueKey = (value: unknown): string => `v:${JSON.stringify(value)}`;
  const constant = (node: Node): string | null => {
    for (const kind of ['ival', 'sval', 'fval', 'boolval'] as const) {
      const holder = child(node, kind);
      if (holder) return valueKey(Object.values(holder)[0] ?? 0);
    }
    return null;
  };

  /** The class key of an expression that names one value per row: a column, a parameter, a literal. */
  const term = (expr: Node | undefined, scope: Scope): string | null => {
    if (!expr) return null;
    const cast = child(expr, 'TypeCast');
    if (cast) return term(child(cast, 'arg'), scope);
    const param = child(expr, 'ParamRef');
    if (param) return valueKey(parameters[(param.number as number) - 1]);
    const literal = child(expr, 'A_Const');
    if (literal) return constant(literal);
    const ref = child(expr, 'ColumnRef');
    if (!ref) return null;
    const names = list(ref, 'fields').map(str);
    if (names.some((n) => n === undefined)) return null;
    const column = names.at(-1) as string;
    if (names.length >= 2) {
      const alias = names.at(-2) as string;
      for (let s: Scope | null = scope; s; s = s.parent) {
        const range = s.ranges.get(alias);
        if (range) return `${range.id}.${column}`;
      }
      return null;
    }
    for (let s: Scope | null = scope; s; s = s.parent) {
      const all = [...new Set(s.ranges.values())];
      const having = all.filter((r) => r.columns?.has(column));
      if (having.length === 1) return `${(having[0] as Range).id}.${column}`;
      if (having.length > 1) return null;
      if (all.length === 1 && all[0]?.columns === null) return `${all[0].id}.${column}`;
    }
    return null;
  };

  /** Equalities of the AND-ed conditions of `expr` (a WHERE or a JOIN's ON). */
  const equalities = (expr: Node | undefined, scope: Scope): void => {
    if (!expr) return;
    const bool = child(expr, 'BoolExpr');
    if (bool) {
      if (bool.boolop === 'AND_EXPR') for (const arg of list(bool, 'args')) equalities(arg, scope);
      return;
    }
    const op = child(expr, 'A_Expr');
    if (!op) return;
    const name = list(op, 'name').map(str).join('.');
    const left = term(child(op, 'lexpr'), scope);
    const right = child(op, 'rexpr');
    if (op.kind === 'AEXPR_OP' && name === '=') union(left, term(right, scope));
    else if (op.kind === 'AEXPR_IN' && name === '=') {
      const items = list(child(right, 'List'), 'items');
      if (items.length === 1) union(left, term(items[0], scope));
    } else if (op.kind === 'AEXPR_OP_ANY' && name === '=') {
      const param = child(right, 'ParamRef');
      const value = param ? parameters[(param.number as number) - 1] : undefined;
      if (Array.isArray(value) && value.length === 1) union(left, valueKey(value[0]));
    }
  };

  /** Statements nested anywhere in `node` (sublinks, subqueries), each in a scope under `scope`. */
  const nested = (node: unknown, scope: Scope | null): void => {
    if (!node || typeof node !== 'object') return;
    if (Array.isArray(node)) {
      for (const item of node) nested(item, scope);
      return;
    }
    for (const [key, value] of Object.entries(node as Node)) {
      if (key === 'SelectStmt') select(value as Node, scope);
      else if (['InsertStmt', 'UpdateStmt', 'DeleteStmt'].includes(key)) statement({ [key]: value }, scope);
      else nested(value, scope);
    }
  };

  const withClause = (stmt: Node, scope: Scope): void => {
    for (const cte of list(child(stmt, 'withClause'), 'ctes')) {
      const common = child(cte, 'CommonTableExpr');
      if (!common) continue;
      const range = newRange(null, new Set());
      const out = statement(child(common, 'ctequery'), scope);
      const names = list(common, 'aliascolnames').map(str);
      out.forEach((item, i) => {
        const column = names[i] ?? item.name;
        if (!column) return;
        range.columns?.add(column);
        union(`${range.id}.${column}`, item.key);
      });
      scope.ctes.set(common.ctename as string, range);
    }
  };

  /** What a statement outputs (target list or RETURNING): column name and class key. */
  type Output = { name: string | undefined; key: string | null }[];

  const targets = (items: Node[], scope: Scope): Output =>
    items.map((item) => {
      const target = child(item, 'ResTarget') ?? {};
      const val = child(target, 'val');
      const ref = child(val, 'ColumnRef');
      const refName = ref ? list(ref, 'fields').map(str).at(-1) : undefined;
      return { name: (target.name as string | undefined) ?? refName, key: term(val, scope) };
    });

  const from = (item: Node, scope: Scope): void => {
    const rangeVar = child(item, 'RangeVar');
    if (rangeVar) {
      const name = rangeVar.relname as string;
      const alias = (child(rangeVar, 'alias')?.aliasname as string | undefined) ?? name;
      const cte = rangeVar.schemaname ? undefined : cteOf(scope, name);
      scope.ranges.set(alias, cte ?? newRange(name, columns.get(name) ?? null));
      return;
    }
    const sub = child(item, 'RangeSubselect');
    if (sub) {
      const range = newRange(null, new Set());
      const out = select(child(child(sub, 'subquery'), 'SelectStmt') ?? {}, scope);
      for (const o of out)
        if (o.name) {
          range.columns?.add(o.name);
          union(`${range.id}.${o.name}`, o.key);
        }
      scope.ranges.set((child(sub, 'alias')?.aliasname as string | undefined) ?? `sub${range.id}`, range);
      return;
    }
    const join = child(item, 'JoinExpr');
    if (join) {
      from(child(join, 'larg') ?? {}, scope);
      from(child(join, 'rarg') ?? {}, scope);
      equalities(child(join, 'quals'), scope);
      nested(child(join, 'quals'), scope);
      return;
    }
    const fn = child(item, 'RangeFunction');
    if (fn) {
      const alias = child(fn, 'alias');
      const range = newRange(null, new Set(list(alias, 'colnames').map(str).filter(Boolean) as string[]));
      nested(list(fn, 'functions'), scope);
      scope.ranges.set((alias?.aliasname as string | undefined) ?? `fn${range.id}`, range);
    }
  };

  function select(stmt: Node, up: Scope | null): Output {
    if (stmt.op && stmt.op !== 'SETOP_NONE') {
      const scope = newScope(up);
      withClause(stmt, scope);
      const left = select(child(stmt, 'larg') ?? {}, scope);
      select(child(stmt, 'rarg') ?? {}, scope);
      return left.map((o) => ({ name: o.name, key: null }));
    }
    const scope = newScope(up);
    withClause(stmt, scope);
    for (const item of list(stmt, 'fromClause')) from(item, scope);
    equalities(child(stmt, 'whereClause'), scope);
    nested(child(stmt, 'whereClause'), scope);
    nested(list(stmt, 'targetList'), scope);
    nested(list(stmt, 'valuesLists'), scope);
    nested(child(stmt, 'havingClause'), scope);
    return targets(list(stmt, 'targetList'), scope);
  }

  function statement(node: Node | undefined, up: Scope | null): Output {
    if (!node) return [];
    const selectStmt = child(node, 'SelectStmt');
    if (selectStmt) return select(selectStmt, up);
    const copy = child(node, 'CopyStmt');
    if (copy) return statement(child(copy, 'query'), up);
    const insert = child(node, 'InsertStmt');
    if (insert) {
      const scope = newScope(up);
      withClause(insert, scope);
      const relation = child(insert, 'relation') ?? {};
      const name = relation.relname as string;
      const range = newRange(name, columns.get(name) ?? null);
      const cols = list(insert, 'cols').map((c) => child(c, 'ResTarget')?.name as string);
      const source = child(child(insert, 'selectStmt'), 'SelectStmt');
      const rows = list(source, 'valuesLists');
      if (source && rows.length)
        for (const row of rows) {
          const items = list(child(row, 'List'), 'items');
          items.forEach((item, i) => {
            union(`${range.id}.${cols[i]}`, term(item, scope));
          });
          nested(items, scope);
        }
      else if (source)
        select(source, scope).forEach((o, i) => {
          union(`${range.id}.${cols[i]}`, o.key);
        });
      scope.ranges.set((child(relation, 'alias')?.aliasname as string | undefined) ?? name, range);
      nested(child(insert, 'onConflictClause'), scope);
      return targets(list(insert, 'returningList'), scope);
    }
    const update = child(node, 'UpdateStmt');
    const del = child(node, 'DeleteStmt');
    const change = update ?? del;
    if (change) {
      const scope = newScope(up);
      withClause(change, scope);
      from({ RangeVar: child(change, 'relation') }, scope);
      for (const item of list(change, update ? 'fromClause' : 'usingClause')) from(item, scope);
      equalities(child(change, 'whereClause'), scope);
      nested(child(change, 'whereClause'), scope);
      nested(list(change, 'targetList'), scope);
      return targets(list(change, 'returningList'), scope);
    }
    nested(node, up);
    return [];
  }

  for (const stmt of parseSync(sql).stmts ?? []) statement(stmt.stmt as Node, null);

  const valuesOf = new Map<string, Set<string>>();
  for (const key of [...parent.keys(), ...parent.values()])
    if (key.startsWith('v:')) {
      const root = find(key);
      const set = valuesOf.get(root) ?? new Set<string>();
      set.add(key.slice(2));
      valuesOf.set(root, set);
    }
  const distributed: TableUse[] = [];
  const local: string[] = [];
  for (const range of ranges) {
    if (!range.table) continue;
    const placement = (DISTRIBUTION as Record<string, Placement>)[range.table];
    if (placement?.kind === 'local') local.push(range.table);
    if (placement?.kind !== 'distributed') continue;
    const values = valuesOf.get(find(`${range.id}.${placement.column}`)) ?? new Set();
    distributed.push({ table: range.table, placement, values: [...values] });
  }
  const all = new Set(distributed.flatMap((d) => d.values));
  const oneShard =
    distributed.length > 0 && local.length === 0 && all.size === 1 && distributed.every((d) => d.values.length > 0);
  return { distributed, local: [...new Set(local)], oneShard };
}
