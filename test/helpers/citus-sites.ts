import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

/**
 * The places in the code that send a statement, found with TypeScript's parser: calls of
 * `.execute()`, `.executeTakeFirst()`, `.executeTakeFirstOrThrow()`, `.stream()` (a builder or an
 * `sql` template; not `transaction().execute`, which only opens a transaction), and the
 * statements written for the driver (`copyBinaryRows(...)`, pg's `query({ text, values })`). Each is
 * named `file#function` after the named function around it. The routing test checks that each
 * of them sent at least one statement during its run: the proof that its scenario covers them.
 */

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const STATEMENT_METHODS = new Set(['execute', 'executeTakeFirst', 'executeTakeFirstOrThrow', 'stream']);

export interface QuerySite {
  /** Relative to the repository. */
  file: string;
  /** 1-based line of the method name (where V8 places the call in a stack trace). */
  line: number;
  /** The first line of the statement holding the call (where an awaiting caller's frame points). */
  from: number;
  /** `kysely`: a builder or `sql` template; `driver`: a statement written for pg. */
  kind: 'kysely' | 'driver';
  /** `file#function`. */
  name: string;
}

function filesUnder(dir: string): string[] {
  return readdirSync(path.join(ROOT, dir), { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.ts'))
    .map((f) => path.join(dir, f));
}

/** Whether `expr` is, or is called on, `db.transaction()` (Kysely's transaction builder). */
function opensTransaction(expr: ts.Expression): boolean {
  let node: ts.Node = expr;
  while (ts.isCallExpression(node) || ts.isPropertyAccessExpression(node)) {
    if (ts.isPropertyAccessExpression(node) && node.name.text === 'transaction') return true;
    node = node.expression;
  }
  return false;
}

/** The name of the function around `node`: a declaration's, or the variable or member an anonymous one is given to. */
function enclosingName(node: ts.Node): string {
  for (let n: ts.Node | undefined = node.parent; n; n = n.parent) {
    if ((ts.isFunctionDeclaration(n) || ts.isMethodDeclaration(n)) && n.name) return n.name.getText();
    if (ts.isArrowFunction(n) || ts.isFunctionExpression(n)) {
      const holder = n.parent;
      if (ts.isVariableDeclaration(holder) && ts.isIdentifier(holder.name)) return holder.name.text;
      if (ts.isPropertyAssignment(holder)) return holder.name.getText();
    }
  }
  return '(module)';
}

/** The first line of the statement holding `node` (an `await` of several calls reports that line). */
function statementLine(node: ts.Node, source: ts.SourceFile): number {
  let n: ts.Node = node;
  while (n.parent && !ts.isBlock(n.parent) && !ts.isSourceFile(n.parent)) n = n.parent;
  return source.getLineAndCharacterOfPosition(n.getStart(source)).line + 1;
}

/** Every statement-sending call site of the `.ts` files under `dirs` (and of the `files`). */
export function querySites(dirs: string[], files: string[] = []): QuerySite[] {
  const sites: QuerySite[] = [];
  for (const file of [...dirs.flatMap(filesUnder), ...files]) {
    const source = ts.createSourceFile(file, readFileSync(path.join(ROOT, file), 'utf8'), ts.ScriptTarget.Latest, true);
    const visit = (node: ts.Node): void => {
      if (ts.isCallExpression(node)) {
        const callee = node.expression;
        let at: ts.Node | undefined;
        let kind: QuerySite['kind'] = 'kysely';
        if (ts.isPropertyAccessExpression(callee)) {
          const method = callee.name.text;
          if (STATEMENT_METHODS.has(method) && !opensTransaction(callee.expression)) at = callee.name;
          // The driver's own calls: pg's `query({ name, text, values })`.
          if (method === 'query' && node.arguments[0] && ts.isObjectLiteralExpression(node.arguments[0])) {
            at = callee.name;
            kind = 'driver';
          }
        } else if (ts.isIdentifier(callee) && callee.text === 'copyBinaryRows') {
          at = callee;
          kind = 'driver';
        }
        if (at) {
          const line = source.getLineAndCharacterOfPosition(at.getStart(source)).line + 1;
          sites.push({ file, line, from: statementLine(node, source), kind, name: `${file}#${enclosingName(node)}` });
        }
      }
      ts.forEachChild(node, visit);
    };
    visit(source);
  }
  return sites;
}

const parsed = new Map<string, ts.SourceFile>();

/** `file#function` of the named function around `line` of `file` (for statements sent outside a site). */
export function functionAt(file: string, line: number): string {
  let source = parsed.get(file);
  if (!source) {
    source = ts.createSourceFile(file, readFileSync(path.join(ROOT, file), 'utf8'), ts.ScriptTarget.Latest, true);
    parsed.set(file, source);
  }
  const position = source.getPositionOfLineAndCharacter(line - 1, 0);
  let innermost: ts.Node = source;
  const visit = (node: ts.Node): void => {
    if (node.getStart(source) <= position && position < node.getEnd()) {
      innermost = node;
      ts.forEachChild(node, visit);
    }
  };
  visit(source);
  return `${file}#${enclosingName(innermost)}`;
}
