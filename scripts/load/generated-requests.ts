import fc from 'fast-check';
import { createDb, type Db } from '../../shared/db/database.ts';
import { type Answer, expectedFormat, formatProblem } from './error-formats.ts';
import { type GeneratedInput, requestArbitrary } from './generated-input.ts';
import { type Case, hostileCases } from './hostile-input.ts';
import { needsCredentials, type OpenApi, type Operation, operationsAt, operationsOf } from './openapi-operations.ts';
import {
  CREDENTIAL_KINDS,
  type Credential,
  type CredentialKind,
  credentialHeaders,
  makeCredentials,
} from './request-credentials.ts';

// Requests generated from the API's own /openapi.json, each answer checked: never a 5xx, every
// 4xx in its service's error format, a 401 wherever the caller's credentials are not enough.
// test/robustness-hostile-input.test.ts runs it in-process; the soak against a running API.

/** fetch relative to the API base URL (`/api/v1/places?...`). */
export type FetchPath = (path: string, init?: RequestInit) => Promise<Response>;

export interface Fixtures {
  /** Valid values of path parameters, by name (others get '1'), so other values reach the handlers. */
  pathValues: Record<string, string>;
}

export interface PreparedRequests {
  document: OpenApi;
  credentials: Record<CredentialKind, Credential>;
  fixtures: Fixtures;
}

export interface RequestsReport {
  /** Requests sent (answered or not). */
  sent: number;
  /** Requests sent per kind of caller. */
  byCredentials: Record<string, number>;
  /** Answers per kind of caller and status (`"none": {"401": 160, ...}`); "no answer" when the request failed. */
  statuses: Record<string, Record<string, number>>;
  /** What went wrong, one line per request. */
  failures: string[];
  /** Requests Node's HTTP parser refused (a request line over 16 KB: 431 with no body) before the app. */
  transport: string[];
}

const newReport = (): RequestsReport => ({ sent: 0, byCredentials: {}, statuses: {}, failures: [], transport: [] });
const clip = (text: string, length: number) => (text.length > length ? `${text.slice(0, length)}…` : text);

/**
 * What the requests need in the API's database and through the API: a first-party client with
 * an API key, a staff+partner account and an ordinary one with their tokens (signed with the
 * API's key from `db`, as `npm run account` does), the invalid credentials, and a place. The
 * issuer (the API's AUTH_ISSUER or PUBLIC_URL) is read from its OpenID configuration unless given.
 * Throws when the API refuses the valid credentials (another issuer or audience, most likely).
 */
export async function prepareGeneratedRequests(options: {
  fetch: FetchPath;
  /** The API's database. */
  db: Db;
  issuer?: string;
  /** The API's AUTH_AUDIENCE (default: its default, sports-api). */
  audience?: string;
  /** Lifetime of the valid tokens, seconds (default 3600). */
  ttlSeconds?: number;
}): Promise<PreparedRequests> {
  const { fetch } = options;
  const document = (await (await fetch('/openapi.json')).json()) as OpenApi;
  const issuer = options.issuer ?? (await discoveredIssuer(fetch));
  const { credentials, clientId, targetAccountId } = await makeCredentials(options.db, {
    issuer,
    audience: options.audience ?? 'sports-api',
    ttlSeconds: options.ttlSeconds ?? 3600,
  });
  for (const kind of ['staff', 'user'] as const) {
    const res = await fetch('/v2/me', { headers: bearerHeaders(credentials[kind]) });
    if (res.status !== 200)
      throw new Error(
        `the API refuses the ${kind} token minted for issuer ${issuer}: ${res.status} ${await res.text()}`,
      );
  }
  const created = await fetch('/api/v1/places', {
    method: 'POST',
    headers: { ...bearerHeaders(credentials.staff), 'content-type': 'application/json' },
    body: JSON.stringify(placeBody()),
  });
  if (created.status !== 201) throw new Error(`creating a place answered ${created.status}: ${await created.text()}`);
  const placeId = ((await created.json()) as { properties: { uuid: string } }).properties.uuid;
  return {
    document,
    credentials,
    fixtures: {
      pathValues: {
        place_id: placeId,
        sport_id: '357',
        activity_id: '357',
        slug: 'floodlight',
        client_id: clientId,
        id: targetAccountId,
      },
    },
  };
}

/**
 * The hostile requests of every operation (test/robustness-hostile-input.test.ts lists them), as
 * staff: how many depends on the document, not on a count.
 */
export async function runHostileRequests(options: PreparedRequests & { fetch: FetchPath }): Promise<RequestsReport> {
  const { fetch, document, credentials, fixtures } = options;
  const report = newReport();
  const fillPath = (op: Operation, name?: string, value?: string) =>
    op.path.replace(/\{([^}]+)\}/g, (_, param: string) =>
      param === name ? (value as string) : (fixtures.pathValues[param] ?? '1'),
    );
  for (const op of operationsOf(document))
    for (const c of hostileCases(document, op, fillPath))
      await send(fetch, op, c, { kind: 'staff', headers: credentialHeaders(credentials.staff, op) }, report);
  return report;
}

/**
 * Sends exactly `count` generated requests (fast-check, from `seed`: the same seed sends the same
 * values), over the document's operations in turn and over the kinds of caller in turn, shifted
 * by one each round of the operations: every operation meets every kind once the count reaches
 * six times the operations. `concurrency` requests are in flight at once (default 1).
 */
export async function runGeneratedRequests(
  options: PreparedRequests & {
    fetch: FetchPath;
    count: number;
    seed: number;
    concurrency?: number;
    /** Called after each answer with the number sent so far. */
    onProgress?: (sent: number) => void;
  },
): Promise<RequestsReport> {
  const { fetch, document, credentials, fixtures, count, seed } = options;
  const operations = operationsOf(document);
  const kinds = CREDENTIAL_KINDS;
  if (!Number.isInteger(count) || count < 0) throw new RangeError(`count must be a whole number, not ${count}`);
  const report = newReport();
  if (operations.length === 0) return report;
  // Each operation's values are drawn at once from its own seed: request i is the same whatever the concurrency.
  const inputs = operations.map((op, j) => {
    const numRuns = Math.max(0, Math.ceil((count - j) / operations.length));
    return numRuns
      ? fc.sample(requestArbitrary(document, op, fixtures.pathValues), { seed: (seed + j) | 0, numRuns })
      : [];
  });
  let next = 0;
  const worker = async () => {
    while (next < count) {
      const i = next++;
      const j = i % operations.length;
      const round = Math.floor(i / operations.length);
      const op = operations[j] as Operation;
      const input = inputs[j]?.[round] as GeneratedInput;
      const kind = kinds[(j + round) % kinds.length] as CredentialKind;
      const credential = credentials[kind];
      const routed = operationsAt(operations, op.method, input.path);
      const held = new Set(credential.holds);
      const body = input.body === undefined ? undefined : JSON.stringify(input.body);
      const c: Case = {
        label: `${kind}: ${clip(input.query ? `${input.path}?${input.query}` : input.path, 160)}${body === undefined ? '' : ` ${clip(body, 100)}`}`,
        path: input.path,
        query: input.query,
        ...(body === undefined ? {} : { body }),
      };
      await send(
        fetch,
        op,
        c,
        {
          kind,
          headers: credentialHeaders(credential, op, i),
          mustRefuse: routed.length > 0 && routed.every((o) => needsCredentials(o, held)),
        },
        report,
      );
      options.onProgress?.(report.sent);
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, options.concurrency ?? 1) }, worker));
  return report;
}

/** Why the API does not look healthy, if so: liveness, readiness, a staff write and a search that finds it. */
export async function healthProblems(fetch: FetchPath, staff: Credential): Promise<string[]> {
  const problems: string[] = [];
  for (const path of ['/health', '/ready']) {
    const res = await fetch(path);
    if (res.status !== 200) problems.push(`${path} answered ${res.status}`);
  }
  const place = placeBody([2.3522, 48.8566]);
  const write = await fetch('/api/v1/places', {
    method: 'POST',
    headers: { ...bearerHeaders(staff), 'content-type': 'application/json' },
    body: JSON.stringify(place),
  });
  if (write.status !== 201)
    problems.push(`creating a place answered ${write.status}: ${clip(await write.text(), 200)}`);
  const search = await fetch('/api/v1/places?origin=2.3522,48.8566&radius=1');
  if (search.status !== 200) problems.push(`the search answered ${search.status}`);
  else {
    const found = (await search.json()) as { data: { features: { properties: { name: string } }[] } };
    if (!found.data.features.some((f) => f.properties.name === place.name))
      problems.push('the search does not find the place just created');
  }
  return problems;
}

/**
 * For the soak: the generated requests against an API running in another process, its base URL
 * (`http://127.0.0.1:3000`) and its database (DATABASE_URL, where the accounts, client, API key
 * and tokens are made). Prepares, sends the hostile cases first when `hostile` is set, then
 * `count` generated requests from `seed` (random when not given), and checks health after.
 * Nothing throws for a failed check: the caller reads `failures` and `health`. Run the API with
 * RATE_LIMIT_ENABLED=false (429s are accepted but then test little).
 */
export async function generatedRequestsAgainst(options: {
  baseUrl: string;
  databaseUrl: string;
  count: number;
  seed?: number;
  concurrency?: number;
  hostile?: boolean;
  issuer?: string;
  audience?: string;
  onProgress?: (sent: number) => void;
}): Promise<{ seed: number; hostile?: RequestsReport; generated: RequestsReport; health: string[] }> {
  const base = options.baseUrl.replace(/\/$/, '');
  const fetchPath: FetchPath = (path, init) => fetch(`${base}${path}`, init);
  const seed = options.seed ?? Math.floor(Math.random() * 2 ** 31);
  const { db } = createDb(options.databaseUrl, 2);
  let prepared: PreparedRequests;
  try {
    prepared = await prepareGeneratedRequests({
      fetch: fetchPath,
      db,
      ...(options.issuer ? { issuer: options.issuer } : {}),
      ...(options.audience ? { audience: options.audience } : {}),
    });
  } finally {
    await db.destroy();
  }
  const hostile = options.hostile ? await runHostileRequests({ fetch: fetchPath, ...prepared }) : undefined;
  const generated = await runGeneratedRequests({
    fetch: fetchPath,
    ...prepared,
    count: options.count,
    seed,
    ...(options.concurrency ? { concurrency: options.concurrency } : {}),
    ...(options.onProgress ? { onProgress: options.onProgress } : {}),
  });
  const health = await healthProblems(fetchPath, prepared.credentials.staff);
  return { seed, ...(hostile ? { hostile } : {}), generated, health };
}

interface Caller {
  kind: CredentialKind;
  headers: Record<string, string>;
  /** The operation needs credentials this caller lacks: 401 is the answer. */
  mustRefuse?: boolean;
}

/** Sends one request and records what is wrong with its answer. */
async function send(fetch: FetchPath, op: Operation, c: Case, caller: Caller, report: RequestsReport): Promise<void> {
  const init: RequestInit = { method: op.method, headers: { ...caller.headers } };
  if (c.body !== undefined) {
    if (op.bodyType === 'multipart/form-data') {
      const form = new FormData();
      form.set('file', c.body);
      init.body = form;
    } else {
      init.body = c.body;
      (init.headers as Record<string, string>)['content-type'] = op.bodyType ?? 'application/json';
    }
  }
  report.sent++;
  report.byCredentials[caller.kind] = (report.byCredentials[caller.kind] ?? 0) + 1;
  const statuses = report.statuses[caller.kind] ?? {};
  report.statuses[caller.kind] = statuses;
  const where = `${op.method} ${op.path} [${c.label}]`;
  let answer: Answer;
  try {
    const res = await fetch(c.query ? `${c.path}?${c.query}` : c.path, init);
    answer = { status: res.status, contentType: res.headers.get('content-type') ?? '', text: await res.text() };
  } catch (error) {
    statuses['no answer'] = (statuses['no answer'] ?? 0) + 1;
    report.failures.push(`${where} → no answer: ${(error as Error).message}`);
    return;
  }
  statuses[answer.status] = (statuses[answer.status] ?? 0) + 1;
  if (answer.status >= 500) {
    report.failures.push(`${where} → ${answer.status} ${clip(answer.text, 200)}`);
    return;
  }
  if (c.refusedAt !== undefined) {
    if (answer.status !== 400) report.failures.push(`${where} → ${answer.status}, expected 400 naming ${c.refusedAt}`);
    else if (expectedFormat(c.path) === 'problem' && !answer.text.includes(JSON.stringify(c.refusedAt)))
      report.failures.push(`${where} → 400 not naming ${c.refusedAt}: ${clip(answer.text, 200)}`);
  }
  // The input guard refuses unreadable input (400) before any credentials are read; a rate limit may answer first.
  if (caller.mustRefuse && answer.status !== 401 && answer.status !== 400 && answer.status !== 429)
    report.failures.push(`${where} → ${answer.status} without valid credentials, expected 401`);
  if (answer.status < 400) return;
  // Node's HTTP parser refuses a request line over 16 KB (431) before any middleware runs: with
  // no body unless the server answers parser errors with api/http/client-error.ts (then checked below).
  if (answer.status === 431 && answer.text === '') {
    report.transport.push(where);
    return;
  }
  const problem = formatProblem(op, c.path, answer);
  if (problem)
    report.failures.push(`${where} → ${answer.status} not in the ${expectedFormat(c.path)} format: ${problem}`);
}

/** A caller's bearer and API key headers. */
function bearerHeaders(credential: Credential): Record<string, string> {
  return {
    ...(credential.authorization[0] ? { authorization: credential.authorization[0] } : {}),
    ...(credential.apiKey ? { 'x-api-key': credential.apiKey } : {}),
  };
}

async function discoveredIssuer(fetch: FetchPath): Promise<string> {
  const res = await fetch('/.well-known/openid-configuration');
  const issuer = res.status === 200 ? ((await res.json()) as { issuer?: unknown }).issuer : undefined;
  if (typeof issuer !== 'string')
    throw new Error(`no issuer in /.well-known/openid-configuration (${res.status}): pass the API's issuer`);
  return issuer;
}

/**
 * A tennis place (sport 357), in Lille unless told where. No tag: the generated requests may
 * delete the sport's tags (DELETE /api/v1/sports/357/tags/floodlight is one of them).
 */
function placeBody(coordinates: [number, number] = [3.0573, 50.6292]) {
  return {
    geometry: { type: 'Point', coordinates },
    name: `Generated requests ${Math.random().toString(36).slice(2, 8)}`,
    country: 'FR',
    activities: [{ sport_id: 357 }],
  };
}
