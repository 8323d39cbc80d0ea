import type { OpenApi, Operation, Schema } from './openapi-operations.ts';

// The robustness walk's input: hostile values, plausible bodies from the documented schemas and
// the hostile requests of each operation (one hostile value at a time).

export const NUL = 'a\u0000b';
export const LONE_SURROGATE = '\ud800';
export const LONG = 'x'.repeat(100_000);
export const HOSTILE_STRINGS = { NUL, 'lone surrogate': LONE_SURROGATE, '100,000 chars': LONG } as const;
export type HostileName = keyof typeof HOSTILE_STRINGS;
/** In a URL: a lone surrogate can only travel as its (invalid) UTF-8 bytes; encodeURIComponent refuses it. */
export const inUrl = (name: HostileName) =>
  name === 'lone surrogate' ? '%ED%A0%80' : encodeURIComponent(HOSTILE_STRINGS[name]);
export const HOSTILE_NUMBERS = ['1e309', '-0', '9223372036854775808'];
export const deep = (n: number) => `${'['.repeat(n)}${']'.repeat(n)}`;
export const SPECIAL_BODIES: Record<string, string> = {
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

/** A plausible body from the documented schema: hostile values then replace one member at a time. */
export function sampleBody(document: OpenApi, schema: Schema | undefined, name = '', depth = 0): unknown {
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

export type Key = string | number;
export interface Leaves {
  strings: Key[][];
  numbers: Key[][];
  arrays: Key[][];
  objects: Key[][];
}

export function leaves(
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

export function replaced(root: unknown, at: Key[], change: (value: unknown) => unknown): unknown {
  if (at.length === 0) return change(root);
  const copy = structuredClone(root) as Record<Key, unknown>;
  let parent = copy;
  for (const key of at.slice(0, -1)) parent = parent[key] as Record<Key, unknown>;
  const last = at[at.length - 1] as Key;
  parent[last] = change(parent[last]);
  return copy;
}

export const fieldPath = (at: Key[]) => `body${at.map((k) => (typeof k === 'number' ? `[${k}]` : `.${k}`)).join('')}`;
export const RAW = '__raw_number__';

export interface Case {
  label: string;
  path: string;
  query?: string;
  body?: string;
  /** The guard's 400 naming this field is the expected answer. */
  refusedAt?: string;
}

/**
 * The hostile requests of an operation, in the order they are sent: each hostile string in each path
 * parameter and query value, then in each body string and member name; each hostile number in each
 * body number; 100,000 items in each body array; the special bodies. `fillPath` gives the operation's
 * path with valid parameters, but `name` set to `value`.
 */
export function* hostileCases(
  document: OpenApi,
  op: Operation,
  fillPath: (op: Operation, name?: string, value?: string) => string,
): Generator<Case> {
  const base = fillPath(op);
  for (const name of Object.keys(HOSTILE_STRINGS) as HostileName[]) {
    const refused = name !== '100,000 chars';
    for (const param of op.pathParams) {
      yield {
        label: `path ${param}: ${name}`,
        path: fillPath(op, param, inUrl(name)),
        ...(refused ? { refusedAt: 'path' } : {}),
      };
    }
    // A search needs a location: hostile values then reach the search itself.
    const location = op.queryParams.includes('origin') ? { origin: '3.06,50.63', radius: '10' } : {};
    for (const param of op.queryParams) {
      const others = new URLSearchParams(Object.entries(location).filter(([k]) => k !== param)).toString();
      const query = `${others ? `${others}&` : ''}${param}=${inUrl(name)}`;
      // Query strings are decoded leniently: invalid UTF-8 (the surrogate's bytes) becomes U+FFFD.
      yield {
        label: `query ${param}: ${name}`,
        path: base,
        query,
        ...(name === 'NUL' ? { refusedAt: `query.${param}` } : {}),
      };
    }
  }
  if (!op.bodySchema) return;
  const sample = sampleBody(document, op.bodySchema);
  const { strings, numbers, arrays, objects } = leaves(sample);
  for (const name of Object.keys(HOSTILE_STRINGS) as HostileName[]) {
    const value = HOSTILE_STRINGS[name];
    // The guard reads JSON bodies; a file body (GPX, FIT...) may hold any byte.
    const refused = name !== '100,000 chars' && /json/.test(op.bodyType ?? 'application/json');
    for (const at of strings) {
      const body = JSON.stringify(replaced(sample, at, () => value));
      yield {
        label: `${fieldPath(at)}: ${name}`,
        path: base,
        body,
        ...(refused ? { refusedAt: fieldPath(at) } : {}),
      };
    }
    for (const at of objects) {
      const body = JSON.stringify(replaced(sample, at, (o) => ({ ...(o as object), [value]: 'x' })));
      yield { label: `member name in ${fieldPath(at)}: ${name}`, path: base, body };
    }
  }
  for (const number of HOSTILE_NUMBERS) {
    for (const at of numbers) {
      const body = JSON.stringify(replaced(sample, at, () => RAW)).replace(`"${RAW}"`, number);
      yield { label: `${fieldPath(at)}: ${number}`, path: base, body };
    }
  }
  for (const at of arrays) {
    const body = JSON.stringify(
      replaced(sample, at, (a) => {
        const first = (a as unknown[])[0];
        return new Array(100_000).fill(typeof first === 'object' ? {} : first);
      }),
    );
    yield { label: `${fieldPath(at)}: 100,000 items`, path: base, body };
  }
  for (const [label, body] of Object.entries(SPECIAL_BODIES)) yield { label: `body: ${label}`, path: base, body };
}
