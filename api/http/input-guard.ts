import type { Context, Middleware } from 'koa';
import { type FieldError, HttpError } from './errors.ts';
import { readRawBody, requestCopy } from './raw-body.ts';

/**
 * JSON deeper than any document of ours (GeoJSON polygons are 5 levels). Far below the depth
 * where recursive code overflows the stack (JSON.stringify fails near 4,000 levels).
 */
export const MAX_JSON_DEPTH = 64;
/** Enough to say what is wrong; a 100,000-item array of bad strings is not echoed back. */
const MAX_REPORTED = 10;
const FORM_TYPE = 'application/x-www-form-urlencoded';
const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

/**
 * Why no field may hold this text, if so. PostgreSQL text cannot store U+0000 (the query fails
 * with "invalid byte sequence"), and an unpaired surrogate is not Unicode: the pg driver would
 * silently store U+FFFD instead.
 */
export function textProblem(text: string): string | undefined {
  if (text.includes('\0')) return 'must not contain the NUL character (U+0000)';
  if (!text.isWellFormed()) return 'must be well-formed Unicode (it has an unpaired surrogate)';
  return undefined;
}

/** A member name as it may be shown in an error path: visible, well-formed, short. */
function displayKey(key: string): string {
  const shown = key.replaceAll('\0', '\\u0000').toWellFormed();
  return shown.length > 40 ? `${shown.slice(0, 40)}…` : shown;
}

interface Node {
  value: unknown;
  parent: Node | undefined;
  key: string | number | undefined;
  depth: number;
  /** Set when the member name itself is refused: reported when the node's turn comes. */
  keyProblem?: string;
}

/**
 * Every problem in a parsed JSON document: strings (member names too) that no field may hold,
 * numbers JSON.parse turned into ±Infinity (1e309), nesting deeper than MAX_JSON_DEPTH.
 * Iterative, so a document nested 100,000 deep costs a loop, not the stack.
 */
export function jsonProblems(document: unknown, root = 'body', maxDepth = MAX_JSON_DEPTH): FieldError[] {
  if (!hasJsonProblem(document, maxDepth)) return [];
  const errors: FieldError[] = [];
  // The root node's value is the location name; nodes point to their parent for the path.
  const top: Node = { value: root, parent: undefined, key: undefined, depth: 0 };
  const stack: Node[] = [{ value: document, parent: top, key: undefined, depth: 0 }];
  const report = (node: Node, message: string) => errors.push({ path: pathOf(node), message });
  while (stack.length > 0 && errors.length < MAX_REPORTED) {
    const node = stack.pop() as Node;
    const { value } = node;
    if (node.keyProblem) {
      report(node, `the member name ${node.keyProblem}`);
    } else if (typeof value === 'string') {
      const problem = textProblem(value);
      if (problem) report(node, problem);
    } else if (typeof value === 'number') {
      if (!Number.isFinite(value)) report(node, 'is a number too large to represent (beyond ±1.8e308)');
    } else if (typeof value === 'object' && value !== null) {
      if (node.depth >= maxDepth) {
        report(node, `is nested deeper than ${maxDepth} levels`);
        continue;
      }
      const depth = node.depth + 1;
      if (Array.isArray(value)) {
        // Reverse order on the stack: problems are found, and reported, in document order.
        for (let i = value.length - 1; i >= 0; i--) stack.push({ value: value[i], parent: node, key: i, depth });
      } else {
        const entries = Object.entries(value);
        for (let i = entries.length - 1; i >= 0; i--) {
          const [key, member] = entries[i] as [string, unknown];
          const keyProblem = textProblem(key);
          stack.push({ value: member, parent: node, key, depth, ...(keyProblem ? { keyProblem } : {}) });
        }
      }
    }
  }
  return errors.slice(0, MAX_REPORTED);
}

/**
 * Whether `jsonProblems` would find anything: the same checks without the paths, primitives
 * checked in place rather than pushed. A valid body (nearly all of them, and an activity's streams
 * are hundreds of thousands of values) costs one pass without an allocation per value; only a
 * body with a problem is walked again to name it.
 */
function hasJsonProblem(document: unknown, maxDepth: number): boolean {
  const bad = (v: unknown) =>
    typeof v === 'string' ? textProblem(v) !== undefined : typeof v === 'number' && !Number.isFinite(v);
  if (typeof document !== 'object' || document === null) return bad(document);
  const objects: object[] = [document];
  const depths: number[] = [0];
  while (objects.length > 0) {
    const value = objects.pop() as object;
    const depth = depths.pop() as number;
    if (depth >= maxDepth) return true;
    if (Array.isArray(value)) {
      for (const member of value) {
        if (typeof member === 'object' && member !== null) {
          objects.push(member);
          depths.push(depth + 1);
        } else if (bad(member)) return true;
      }
    } else {
      const record = value as Record<string, unknown>;
      for (const key of Object.keys(record)) {
        if (textProblem(key) !== undefined) return true;
        const member = record[key];
        if (typeof member === 'object' && member !== null) {
          objects.push(member);
          depths.push(depth + 1);
        } else if (bad(member)) return true;
      }
    }
  }
  return false;
}

/** `body.activities[0].tags[1]`: the location name, then each key from the root down. */
function pathOf(node: Node): string {
  const keys: (string | number)[] = [];
  let n: Node = node;
  while (n.parent) {
    if (n.key !== undefined) keys.push(n.key);
    n = n.parent;
  }
  let out = String(n.value);
  for (let i = keys.length - 1; i >= 0; i--) {
    const key = keys[i] as string | number;
    out += typeof key === 'number' ? `[${key}]` : `.${displayKey(key)}`;
    // Enough to find the member in a document nested thousands deep.
    if (out.length > 200) return `${out.slice(0, 200)}…`;
  }
  return out;
}

/** Problems in query parameters (names and values), as Koa parsed them (`ctx.query`). */
export function queryProblems(query: Record<string, string | string[] | undefined>): FieldError[] {
  const errors: FieldError[] = [];
  for (const [name, value] of Object.entries(query)) {
    // The shown name is only worked out for a parameter that has a problem (most have none).
    const path = () => `query.${displayKey(name)}`;
    const nameProblem = textProblem(name);
    if (nameProblem) errors.push({ path: path(), message: `the parameter name ${nameProblem}` });
    for (const v of Array.isArray(value) ? value : [value ?? '']) {
      const problem = textProblem(v);
      if (problem) {
        errors.push({ path: path(), message: problem });
        break;
      }
    }
    if (errors.length >= MAX_REPORTED) break;
  }
  return errors.slice(0, MAX_REPORTED);
}

/**
 * Problems in the request path, still percent-encoded (`ctx.path`). Routes decode their
 * parameters, so `%00` would reach them as U+0000; an unpaired surrogate can only arrive as
 * invalid UTF-8 (`%ED%A0%80`), which does not decode.
 */
export function pathProblems(rawPath: string): FieldError[] {
  let decoded: string;
  try {
    decoded = decodeURIComponent(rawPath);
  } catch {
    return [{ path: 'path', message: 'is not valid percent-encoded UTF-8' }];
  }
  const problem = textProblem(decoded);
  return problem ? [{ path: 'path', message: problem }] : [];
}

/** Problems in an application/x-www-form-urlencoded body (field names and values). */
export function formProblems(form: string): FieldError[] {
  const errors: FieldError[] = [];
  for (const [name, value] of new URLSearchParams(form)) {
    const path = `body.${displayKey(name)}`;
    const nameProblem = textProblem(name);
    if (nameProblem) errors.push({ path, message: `the field name ${nameProblem}` });
    const problem = textProblem(value);
    if (problem) errors.push({ path, message: problem });
    if (errors.length >= MAX_REPORTED) break;
  }
  return errors.slice(0, MAX_REPORTED);
}

export function hostileInput(errors: FieldError[]): HttpError {
  return new HttpError(400, 'Bad Request', 'The request has text or numbers that no field accepts', errors);
}

/**
 * Hands the form's bytes on to whoever reads the request next (the login pages, the OpenID
 * provider's token endpoint): a request stream can be read once, so the context gets a copy of
 * the request carrying the same headers and these bytes.
 */
function replayBody(ctx: Context, raw: Buffer): void {
  const original = ctx.req;
  const copy = requestCopy(original);
  copy.push(raw);
  copy.push(null);
  copy.complete = true;
  ctx.req = copy;
  ctx.request.req = copy;
  ctx.response.req = copy;
}

/**
 * The one check every service gets before any route: text that no field may hold (U+0000,
 * unpaired surrogates) in the path, the query (names and values) or a form body (every field) is
 * refused with 400, each problem named (`path`, `query.name`, `body.notes`), in the called
 * service's error format. JSON bodies get the same check (`jsonProblems`) from their operation's
 * input (api/http/inputs.ts), which reads them.
 */
export function inputGuard(options: { bodyLimitBytes: number }): Middleware {
  return async (ctx, next) => {
    const errors = [...pathProblems(ctx.path), ...queryProblems(ctx.query)];
    if (BODY_METHODS.has(ctx.method) && ctx.request.type === FORM_TYPE) {
      const raw = await readRawBody(ctx, { limit: options.bodyLimitBytes });
      errors.push(...formProblems(raw.toString('utf8')));
      replayBody(ctx, raw);
    }
    if (errors.length > 0) throw hostileInput(errors.slice(0, MAX_REPORTED));
    await next();
  };
}
