import test from 'ava';
import fc from 'fast-check';
import { issueApiKey } from '../shared/accounts/api-keys.ts';
import { startTestApi } from './helpers/app.ts';
import { placeBody } from './helpers/places.ts';
import { testClientId } from './helpers/tokens.ts';

// Every route the OpenAPI document lists gets hostile input from a staff caller: NUL, an
// unpaired surrogate and a 100,000-character string in each path parameter, query value and
// body string (member names too); 1e309, -0 and 2^63 in each body number; 100,000 items in each
// body array; whole bodies nested 10,000 deep; then random input. Whatever a client sends, the
// answer is never a 5xx, every error is in the called service's own format, and the server
// still serves afterwards. The seed is random per run (SEED=n replays one).

const seed = process.env.SEED ? Number(process.env.SEED) : Math.floor(Math.random() * 2 ** 31);
const ctx = await startTestApi(null, { env: { RATE_LIMIT_ENABLED: 'false' } });
test.after.always(ctx.close);

interface Schema {
  $ref?: string;
  type?: string | string[];
  properties?: Record<string, Schema>;
  items?: Schema;
  anyOf?: Schema[];
  oneOf?: Schema[];
  allOf?: Schema[];
  enum?: unknown[];
  const?: unknown;
  format?: string;
  minimum?: number;
  maximum?: number;
  minLength?: number;
}

interface Operation {
  method: string;
  path: string;
  pathParams: string[];
  queryParams: string[];
  bodyType: string | undefined;
  bodySchema: Schema | undefined;
  /** Media types the operation documents per status (`/oauth/accessToken` answers OAuth's JSON errors). */
  documented: Record<string, string[]>;
  /** A browser endpoint (it answers with a redirect): its errors may be HTML pages. */
  browser: boolean;
}

interface OpenApi {
  paths: Record<
    string,
    Record<
      string,
      {
        parameters?: { in: string; name: string }[];
        requestBody?: { content: Record<string, { schema: Schema }> };
        responses?: Record<string, { content?: Record<string, unknown> }>;
      }
    >
  >;
  components?: { schemas?: Record<string, Schema> };
}

const NUL = 'a\u0000b';
const LONE_SURROGATE = '\ud800';
const LONG = 'x'.repeat(100_000);
const HOSTILE_STRINGS = { NUL, 'lone surrogate': LONE_SURROGATE, '100,000 chars': LONG } as const;
type HostileName = keyof typeof HOSTILE_STRINGS;
/** In a URL: a lone surrogate can only travel as its (invalid) UTF-8 bytes; encodeURIComponent refuses it. */
const inUrl = (name: HostileName) =>
  name === 'lone surrogate' ? '%ED%A0%80' : encodeURIComponent(HOSTILE_STRINGS[name]);
const HOSTILE_NUMBERS = ['1e309', '-0', '9223372036854775808'];
const deep = (n: number) => `${'['.repeat(n)}${']'.repeat(n)}`;
const SPECIAL_BODIES: Record<string, string> = {
  'array nested 10,000 deep': deep(10_000),
  'object nested 10,000 deep': `${'{"a":'.repeat(10_000)}1${'}'.repeat(10_000)}`,
  '1e309': '1e309',
  '-0': '-0',
  '2^63': '9223372036854775808',
  '100,000 numbers': JSON.stringify(new Array(100_000).fill(0)),
  '100,000 strings': JSON.stringify(new Array(100_000).fill('x')),
  '100,000 strings with NUL': JSON.stringify(new Array(100_000).fill(NUL)),
  'a __proto__ member': '{"__proto__":{"staff":true}}',
};

/**
 * The error dialect each path must answer in (README, Services), once resolved as the client
 * sends it (`/sports/..` is `/`).
 */
function expectedFormat(raw: string): 'problem' | 'jsonapi' | 'hydra' {
  const path = new URL(raw, 'http://api.test').pathname;
  if (/^\/v2(\/|$)/.test(path)) return 'hydra';
  if (/^\/(sports|groups)(\/|$)/.test(path)) return 'jsonapi';
  return 'problem';
}

interface Answer {
  status: number;
  contentType: string;
  text: string;
}

/**
 * Why an error answer is in none of its formats, if so: the service's (by path), what the
 * operation documents for that status, or an HTML page from a browser endpoint.
 */
function formatProblem(op: Operation, path: string, answer: Answer): string | undefined {
  const mediaType = answer.contentType.split(';')[0]?.trim() ?? '';
  if (op.documented[String(answer.status)]?.includes(mediaType)) {
    if (!mediaType.endsWith('json')) return undefined;
    try {
      JSON.parse(answer.text);
      return undefined;
    } catch {
      return `not JSON: ${answer.text.slice(0, 80)}`;
    }
  }
  if (op.browser && mediaType === 'text/html') return undefined;
  let body: Record<string, unknown>;
  try {
    body = JSON.parse(answer.text);
  } catch {
    return `not JSON (${answer.contentType}): ${answer.text.slice(0, 80)}`;
  }
  switch (expectedFormat(path)) {
    case 'problem': {
      if (!answer.contentType.startsWith('application/problem+json')) return `content type ${answer.contentType}`;
      const errors = body.errors as { path?: unknown; message?: unknown }[] | undefined;
      if (body.status !== answer.status || typeof body.title !== 'string') return 'no status/title';
      if (!Array.isArray(errors) || !errors.every((e) => typeof e.path === 'string' && typeof e.message === 'string'))
        return 'errors is not a list of {path, message}';
      return undefined;
    }
    case 'jsonapi': {
      if (!answer.contentType.startsWith('application/vnd.api+json')) return `content type ${answer.contentType}`;
      const errors = body.errors as { status?: unknown }[] | undefined;
      if (!Array.isArray(errors) || errors.length === 0 || !errors.every((e) => e.status === String(answer.status)))
        return 'no JSON:API errors with the status';
      return undefined;
    }
    case 'hydra': {
      if (!answer.contentType.startsWith('application/ld+json')) return `content type ${answer.contentType}`;
      const type = answer.status === 422 ? 'ConstraintViolationList' : 'hydra:Error';
      if (body['@type'] !== type) return `@type ${String(body['@type'])}`;
      return undefined;
    }
  }
}

/** A plausible body from the documented schema: hostile values then replace one member at a time. */
function sampleBody(document: OpenApi, schema: Schema | undefined, name = '', depth = 0): unknown {
  if (!schema || depth > 6) return null;
  if (schema.$ref)
    return sampleBody(document, document.components?.schemas?.[schema.$ref.split('/').pop() ?? ''], name, depth);
  // Members whose schema says little, given values that pass validation, so hostile ones go deeper.
  if (name === 'geometry') return { type: 'Point', coordinates: [3.0573, 50.6292] };
  if (name === 'country') return 'FR';
  if (name === 'sport_id') return 357;
  if (name === 'tags') return ['floodlight'];
  if (name === 'slug') return 'floodlight';
  if (name === 'redirect_uris') return ['https://example.test/callback'];
  if (schema.const !== undefined) return schema.const;
  if (schema.enum) return schema.enum[0];
  const options = schema.anyOf ?? schema.oneOf;
  if (options) return sampleBody(document, options.find((o) => o.type !== 'null') ?? options[0], name, depth);
  if (schema.allOf) return Object.assign({}, ...schema.allOf.map((s) => sampleBody(document, s, name, depth)));
  const type = Array.isArray(schema.type) ? schema.type.find((t) => t !== 'null') : schema.type;
  switch (type) {
    case 'object':
      return Object.fromEntries(
        Object.entries(schema.properties ?? {}).map(([key, s]) => [key, sampleBody(document, s, key, depth + 1)]),
      );
    case 'array':
      return [sampleBody(document, schema.items, name, depth + 1)];
    case 'integer':
    case 'number':
      return Math.min(Math.max(1, schema.minimum ?? 1), schema.maximum ?? 1);
    case 'boolean':
      return true;
    case 'string':
      if (schema.format === 'email') return 'someone@example.test';
      if (schema.format === 'uri') return 'https://example.test/callback';
      if (schema.format === 'uuid') return crypto.randomUUID();
      if (schema.format === 'date') return '2024-05-01';
      if (schema.format === 'date-time') return '2024-05-01T10:00:00Z';
      return 'x'.repeat(Math.max(4, schema.minLength ?? 0));
    default:
      return 'x';
  }
}

type Key = string | number;
interface Leaves {
  strings: Key[][];
  numbers: Key[][];
  arrays: Key[][];
  objects: Key[][];
}

function leaves(
  value: unknown,
  at: Key[] = [],
  out: Leaves = { strings: [], numbers: [], arrays: [], objects: [] },
): Leaves {
  if (typeof value === 'string') out.strings.push(at);
  else if (typeof value === 'number') out.numbers.push(at);
  else if (Array.isArray(value)) {
    out.arrays.push(at);
    for (const [i, v] of value.entries()) leaves(v, [...at, i], out);
  } else if (typeof value === 'object' && value !== null) {
    out.objects.push(at);
    for (const [k, v] of Object.entries(value)) leaves(v, [...at, k], out);
  }
  return out;
}

function replaced(root: unknown, at: Key[], change: (value: unknown) => unknown): unknown {
  if (at.length === 0) return change(root);
  const copy = structuredClone(root) as Record<Key, unknown>;
  let parent = copy;
  for (const key of at.slice(0, -1)) parent = parent[key] as Record<Key, unknown>;
  const last = at[at.length - 1] as Key;
  parent[last] = change(parent[last]);
  return copy;
}

const fieldPath = (at: Key[]) => `body${at.map((k) => (typeof k === 'number' ? `[${k}]` : `.${k}`)).join('')}`;
const RAW = '__raw_number__';

interface Case {
  label: string;
  path: string;
  query?: string;
  body?: string;
  /** The guard's 400 naming this field is the expected answer. */
  refusedAt?: string;
}

test('no route answers 5xx or leaves its error format, whatever the input', async (t) => {
  t.log(`seed ${seed} (replay: SEED=${seed} npx ava test/robustness.test.ts)`);
  const document = (await (await ctx.fetch('/openapi.json')).json()) as OpenApi;
  const operations: Operation[] = Object.entries(document.paths).flatMap(([path, item]) =>
    Object.entries(item).map(([method, op]) => {
      const [bodyType, media] = Object.entries(op.requestBody?.content ?? {})[0] ?? [];
      return {
        method: method.toUpperCase(),
        path,
        pathParams: (op.parameters ?? []).filter((p) => p.in === 'path').map((p) => p.name),
        queryParams: (op.parameters ?? []).filter((p) => p.in === 'query').map((p) => p.name),
        bodyType,
        bodySchema: media?.schema,
        documented: Object.fromEntries(
          Object.entries(op.responses ?? {}).map(([status, r]) => [status, Object.keys(r.content ?? {})]),
        ),
        browser: Object.keys(op.responses ?? {}).some((status) => status.startsWith('3')),
      };
    }),
  );
  t.true(operations.length >= 20, `routes documented: ${operations.length}`);

  const { token } = await ctx.account(['staff', 'partner']);
  // The tracking routes also need an API key of the token's own client: with one, hostile input
  // reaches their handlers (a body is read only once the credentials pass).
  const { api_key: apiKey } = await issueApiKey(ctx.database.db, await testClientId(ctx.database.db), 'robustness');
  const auth = { authorization: `Bearer ${token}`, 'x-api-key': apiKey };
  const created = await ctx.fetch('/api/v1/places', {
    method: 'POST',
    headers: { ...auth, 'content-type': 'application/json' },
    body: JSON.stringify(placeBody()),
  });
  const placeId = ((await created.json()) as { properties: { uuid: string } }).properties.uuid;
  const client = await ctx.fetch('/api/v1/clients', {
    method: 'POST',
    headers: { ...auth, 'content-type': 'application/json' },
    body: JSON.stringify({ client_name: 'robustness', redirect_uris: ['https://example.test/cb'] }),
  });
  const { client_id: clientId = 'none', client_secret: clientSecret = '' } = (await client.json()) as {
    client_id?: string;
    client_secret?: string;
  };
  /** A client's own routes authenticate it with HTTP Basic. */
  const clientAuth = { authorization: `Basic ${Buffer.from(`${clientId}:${clientSecret}`).toString('base64')}` };
  /** Valid values for the path parameters not under test, so hostile ones reach the handlers. */
  const valid: Record<string, string> = {
    place_id: placeId,
    sport_id: '357',
    activity_id: '357',
    slug: 'floodlight',
    client_id: clientId,
  };
  const fillPath = (op: Operation, name?: string, value?: string) =>
    op.path.replace(/\{([^}]+)\}/g, (_, param: string) => (param === name ? (value as string) : (valid[param] ?? '1')));

  const failures: string[] = [];
  const transport: string[] = [];
  let sent = 0;
  async function send(op: Operation, c: Case): Promise<void> {
    const init: RequestInit = {
      method: op.method,
      headers: op.path.includes('{client_id}') ? { ...clientAuth } : { ...auth },
    };
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
    const res = await ctx.fetch(c.query ? `${c.path}?${c.query}` : c.path, init);
    const answer = { status: res.status, contentType: res.headers.get('content-type') ?? '', text: await res.text() };
    sent++;
    const where = `${op.method} ${op.path} [${c.label}]`;
    if (answer.status >= 500) {
      failures.push(`${where} → ${answer.status} ${answer.text.slice(0, 200)}`);
      return;
    }
    if (c.refusedAt !== undefined) {
      if (answer.status !== 400) failures.push(`${where} → ${answer.status}, expected 400 naming ${c.refusedAt}`);
      else if (expectedFormat(c.path) === 'problem' && !answer.text.includes(JSON.stringify(c.refusedAt)))
        failures.push(`${where} → 400 not naming ${c.refusedAt}: ${answer.text.slice(0, 200)}`);
    }
    if (answer.status < 400) return;
    // Node's HTTP parser refuses a request line over 16 KB (431) before any middleware runs: with
    // no body unless the server answers parser errors with api/http/client-error.ts (then checked below).
    if (answer.status === 431 && answer.text === '') {
      transport.push(where);
      return;
    }
    const problem = formatProblem(op, c.path, answer);
    if (problem) failures.push(`${where} → ${answer.status} not in the ${expectedFormat(c.path)} format: ${problem}`);
  }

  for (const op of operations) {
    const base = fillPath(op);
    for (const name of Object.keys(HOSTILE_STRINGS) as HostileName[]) {
      const refused = name !== '100,000 chars';
      for (const param of op.pathParams) {
        await send(op, {
          label: `path ${param}: ${name}`,
          path: fillPath(op, param, inUrl(name)),
          ...(refused ? { refusedAt: 'path' } : {}),
        });
      }
      // A search needs a location: hostile values then reach the search itself.
      const location = op.queryParams.includes('origin') ? { origin: '3.06,50.63', radius: '10' } : {};
      for (const param of op.queryParams) {
        const others = new URLSearchParams(Object.entries(location).filter(([k]) => k !== param)).toString();
        const query = `${others ? `${others}&` : ''}${param}=${inUrl(name)}`;
        // Query strings are decoded leniently: invalid UTF-8 (the surrogate's bytes) becomes U+FFFD.
        await send(op, {
          label: `query ${param}: ${name}`,
          path: base,
          query,
          ...(name === 'NUL' ? { refusedAt: `query.${param}` } : {}),
        });
      }
    }
    if (!op.bodySchema) continue;
    const sample = sampleBody(document, op.bodySchema);
    const { strings, numbers, arrays, objects } = leaves(sample);
    for (const name of Object.keys(HOSTILE_STRINGS) as HostileName[]) {
      const value = HOSTILE_STRINGS[name];
      // The guard reads JSON bodies; a file body (GPX, FIT...) may hold any byte.
      const refused = name !== '100,000 chars' && /json/.test(op.bodyType ?? 'application/json');
      for (const at of strings) {
        const body = JSON.stringify(replaced(sample, at, () => value));
        await send(op, {
          label: `${fieldPath(at)}: ${name}`,
          path: base,
          body,
          ...(refused ? { refusedAt: fieldPath(at) } : {}),
        });
      }
      for (const at of objects) {
        const body = JSON.stringify(replaced(sample, at, (o) => ({ ...(o as object), [value]: 'x' })));
        await send(op, { label: `member name in ${fieldPath(at)}: ${name}`, path: base, body });
      }
    }
    for (const number of HOSTILE_NUMBERS) {
      for (const at of numbers) {
        const body = JSON.stringify(replaced(sample, at, () => RAW)).replace(`"${RAW}"`, number);
        await send(op, { label: `${fieldPath(at)}: ${number}`, path: base, body });
      }
    }
    for (const at of arrays) {
      const body = JSON.stringify(
        replaced(sample, at, (a) => {
          const first = (a as unknown[])[0];
          return new Array(100_000).fill(typeof first === 'object' ? {} : first);
        }),
      );
      await send(op, { label: `${fieldPath(at)}: 100,000 items`, path: base, body });
    }
    for (const [label, body] of Object.entries(SPECIAL_BODIES))
      await send(op, { label: `body: ${label}`, path: base, body });
  }
  const hostileSent = sent;

  // Then random paths, queries and bodies.
  const pathValue = fc.oneof(
    fc.constantFrom(
      '121',
      '0',
      '-1',
      '99999999999999999999',
      'null',
      '%00',
      '..',
      'a'.repeat(300),
      crypto.randomUUID(),
      placeId,
    ),
    fc.string({ minLength: 1, maxLength: 12, unit: 'binary' }).map((s) => encodeURIComponent(s.toWellFormed())),
  );
  const queryString = fc
    .dictionary(
      fc.constantFrom(
        'sw',
        'ne',
        'origin',
        'radius',
        'limit',
        'page',
        'sports',
        'tags',
        'min_difficulty',
        'days',
        'all',
        'q',
        'after',
      ),
      fc.oneof(
        fc.string({ maxLength: 20, unit: 'binary' }),
        fc.constantFrom('1,2', '200,95', 'NaN', '-0', '1e308', '3.06,50.63'),
      ),
    )
    .map((d) =>
      new URLSearchParams(Object.entries(d).map(([k, v]): [string, string] => [k, v.toWellFormed()])).toString(),
    );
  const body = fc.oneof(
    fc.jsonValue({ maxDepth: 3 }),
    fc.record({ geometry: fc.jsonValue({ maxDepth: 3 }), activities: fc.jsonValue({ maxDepth: 2 }) }),
    fc.record({
      geometry: fc.constant(placeBody().geometry),
      country: fc.constant('FR'),
      name: fc.string({ unit: 'binary' }),
      activities: fc.array(fc.record({ sport_id: fc.integer(), tags: fc.array(fc.string()) })),
    }),
  );
  for (const op of operations) {
    await fc
      .assert(
        fc.asyncProperty(pathValue, queryString, body, async (value, qs, payload) => {
          const path = op.path.replace(/\{[^}]+\}/g, value);
          const before = failures.length;
          await send(op, {
            label: `random ${JSON.stringify(payload).slice(0, 100)}`,
            path,
            query: qs,
            ...(op.method !== 'GET' && op.method !== 'DELETE' ? { body: JSON.stringify(payload) } : {}),
          });
          return failures.length === before;
        }),
        // No shrinking: the first failing input is recorded as sent, and the run stays short.
        { numRuns: 30, seed, endOnFailure: true },
      )
      .catch(() => {});
  }
  t.log(`${operations.length} operations, ${hostileSent} hostile requests then ${sent - hostileSent} random ones`);
  if (transport.length > 0)
    t.log(
      `${transport.length} requests over the 16 KB request-line limit answered 431 by Node's HTTP parser (no body)`,
    );
  t.deepEqual(failures, [], `seed ${seed}`);

  // Still healthy: liveness, readiness, a write and a search that finds it.
  t.is((await ctx.fetch('/health')).status, 200);
  t.is((await ctx.fetch('/ready')).status, 200);
  const place = placeBody({ geometry: { type: 'Point', coordinates: [2.3522, 48.8566] } });
  const write = await ctx.fetch('/api/v1/places', {
    method: 'POST',
    headers: { ...auth, 'content-type': 'application/json' },
    body: JSON.stringify(place),
  });
  t.is(write.status, 201);
  const search = await ctx.fetch('/api/v1/places?origin=2.3522,48.8566&radius=1');
  t.is(search.status, 200);
  const found = (await search.json()) as { data: { features: { properties: { name: string } }[] } };
  t.true(found.data.features.some((f) => f.properties.name === place.name));
});

test('the full /openapi.json (every service) is a valid OpenAPI 3.1 document', async (t) => {
  const { Validator } = await import('@seriousme/openapi-schema-validator');
  const document = (await (await ctx.fetch('/openapi.json')).json()) as { openapi: string };
  const result = await new Validator().validate(document);
  t.true(result.valid, JSON.stringify(result.errors));
});
