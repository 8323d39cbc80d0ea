import { type Answer, formatProblem } from '../../scripts/load/error-formats.ts';
import { needsCredentials, type OpenApi, type Operation, operationsOf } from '../../scripts/load/openapi-operations.ts';
import type { TestApi } from './app.ts';

// The ownership matrices (test/ownership-matrix*.test.ts), generated from /openapi.json: for
// every operation on one object (a path with an id), a service's matrix names the object it acts
// on and what another user and a caller without credentials get, or names the route public with
// its reason. An operation its matrix does not name fails that matrix, and a path no matrix
// answers for fails the tracking one: a new route with an id cannot be forgotten.

/** The path prefixes whose operations each matrix file answers for. */
export const MATRIX_PREFIXES = {
  tracking: ['/v2/'],
  places: ['/api/v1/places/', '/v1/places/', '/api/v1/sports/', '/media/'],
  partners: ['/api/v1/partners/'],
  catalogue: ['/sports/', '/groups/'],
  accounts: ['/api/v1/clients/', '/api/v1/accounts/'],
} as const;

export type MatrixService = keyof typeof MATRIX_PREFIXES;

/** Operations with an id that no service serves, with the reason they hold no one's object. */
export const OUTSIDE_SERVICES: Readonly<Record<string, string>> = {
  'GET /docs/assets/{file}': "the /docs page's own files (swagger-ui), the same for everyone",
};

export interface MatrixOperation extends Operation {
  /** `METHOD /path`, as the matrices name it. */
  name: string;
  /** Whether the operation needs credentials (no `security` alternative is anonymous): without them, 401. */
  secured: boolean;
}

/** Every operation of /openapi.json whose path holds an id (`{param}`). */
export async function operationsWithIds(api: Pick<TestApi, 'fetch'>): Promise<MatrixOperation[]> {
  const doc = (await (await api.fetch('/openapi.json')).json()) as OpenApi;
  return operationsOf(doc)
    .filter((op) => op.path.includes('{'))
    .map((op) => ({ ...op, name: `${op.method} ${op.path}`, secured: needsCredentials(op, new Set()) }));
}

/** The matrix a path belongs to, if any. */
export function serviceOf(path: string): MatrixService | undefined {
  const entries = Object.entries(MATRIX_PREFIXES) as [MatrixService, readonly string[]][];
  return entries.find(([, prefixes]) => prefixes.some((p) => path.startsWith(p)))?.[0];
}

/** The operations with an id one service's matrix answers for. */
export async function matrixOperations(api: Pick<TestApi, 'fetch'>, service: MatrixService) {
  return (await operationsWithIds(api)).filter((op) => serviceOf(op.path) === service);
}

/**
 * What a matrix misses: its operations it names neither with an object nor as public, names
 * that are no operation any more (a renamed route must be named again), and operations that
 * need credentials without documenting their 401.
 */
export function namingProblems(operations: readonly MatrixOperation[], named: Iterable<string>): string[] {
  const names = new Set(named);
  const exist = new Set(operations.map((op) => op.name));
  return [
    ...operations
      .filter((op) => !names.has(op.name))
      .map((op) => `${op.name}: not in the matrix (name the object it acts on, or name it public with its reason)`),
    ...[...names].filter((name) => !exist.has(name)).map((name) => `${name}: in the matrix but not in /openapi.json`),
    ...operations
      .filter((op) => op.secured && !op.documented['401'])
      .map((op) => `${op.name}: needs credentials but /openapi.json does not document its 401`),
  ];
}

/** One request of a matrix and the status it must get. */
export interface MatrixCase {
  op: MatrixOperation;
  /** The concrete path (ids filled in). */
  path: string;
  /** Who calls, for the failure message ("another user", "without credentials"). */
  who: string;
  /** The Authorization header, none when absent. */
  authorization?: string | undefined;
  /** Other headers (the tracking API's `x-api-key`). */
  headers?: Record<string, string>;
  /** A JSON body, or a FormData sent as multipart. */
  body?: unknown;
  expected: number;
}

/** Sends the case's request; the answer as the error-format checks read it. */
export async function send(api: Pick<TestApi, 'fetch'>, c: Omit<MatrixCase, 'expected' | 'who'>): Promise<Answer> {
  const headers: Record<string, string> = { ...c.headers };
  if (c.authorization) headers.authorization = c.authorization;
  let body: RequestInit['body'] | undefined;
  if (c.body instanceof FormData) body = c.body;
  else if (c.body !== undefined) {
    headers['content-type'] = 'application/json';
    body = JSON.stringify(c.body);
  }
  const res = await api.fetch(c.path, { method: c.op.method, headers, ...(body === undefined ? {} : { body }) });
  return { status: res.status, contentType: res.headers.get('content-type') ?? '', text: await res.text() };
}

/**
 * Runs the cases one after the other (in order: later cases may rely on earlier writes) and
 * returns what went wrong: an unexpected status, or an error answer out of the service's format.
 */
export async function runCases(api: Pick<TestApi, 'fetch'>, cases: readonly MatrixCase[]): Promise<string[]> {
  const failures: string[] = [];
  for (const c of cases) {
    const answer = await send(api, c);
    const where = `${c.op.name} (${c.path}) ${c.who}`;
    if (answer.status !== c.expected)
      failures.push(`${where}: ${answer.status}, expected ${c.expected}: ${answer.text.slice(0, 160)}`);
    else if (answer.status >= 400) {
      const problem = formatProblem(c.op, c.path, answer);
      if (problem) failures.push(`${where}: ${answer.status} out of the service's error format: ${problem}`);
    }
  }
  return failures;
}

/** A caller without credentials: 401 where the operation needs them, else what anyone gets. */
export const anonymousExpectation = (op: MatrixOperation, public_: number): number => (op.secured ? 401 : public_);

/** Fills a path's `{param}`s; a missing value throws (the matrix forgot one). */
export function fillPath(path: string, values: Readonly<Record<string, string>>): string {
  return path.replace(/\{([^}]+)\}/g, (_, name: string) => {
    const value = values[name];
    if (value === undefined) throw new Error(`${path}: no value for {${name}}`);
    return encodeURIComponent(value);
  });
}
