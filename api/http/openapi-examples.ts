/**
 * Request and response examples for /openapi.json, built from the schemas themselves: each
 * field's own `example` (set where it is declared), else its default, constant or first allowed
 * value, else a value of its type and format. Built, not written beside the schema, so an example
 * cannot drift from what it shows (test/openapi-client.test.ts validates each against its schema).
 */

type Schema = Record<string, unknown>;
type Components = Record<string, Schema>;

const FORMAT_EXAMPLES: Record<string, unknown> = {
  'date-time': '2026-05-01T06:30:00+00:00',
  date: '2026-05-01',
  email: 'runner@example.com',
  uri: 'https://sports.example/',
  uuid: '0b5c4a8e-6a53-4c1e-9a8b-3f2d1c0e9b7a',
  binary: undefined,
};

/** Deeper than any document of ours; stops a recursive schema from looping. */
const MAX_DEPTH = 8;

function own(schema: Schema): { found: boolean; value?: unknown } {
  if ('example' in schema) return { found: true, value: schema.example };
  if (Array.isArray(schema.examples) && schema.examples.length) return { found: true, value: schema.examples[0] };
  if ('const' in schema) return { found: true, value: schema.const };
  if ('default' in schema) return { found: true, value: schema.default };
  if (Array.isArray(schema.enum) && schema.enum.length) return { found: true, value: schema.enum[0] };
  return { found: false };
}

/** An example of `schema`, or undefined when none can be told (a binary body). */
export function exampleOf(schema: unknown, components: Components, depth = 0): unknown {
  if (typeof schema !== 'object' || schema === null || depth > MAX_DEPTH) return undefined;
  let s = schema as Schema;
  if (typeof s.$ref === 'string') s = components[s.$ref.split('/').pop() as string] ?? {};
  const given = own(s);
  if (given.found) return given.value;
  for (const key of ['anyOf', 'oneOf'] as const) {
    const options = s[key];
    if (Array.isArray(options)) {
      const chosen = options.find((o) => (o as Schema).type !== 'null') ?? options[0];
      return exampleOf(chosen, components, depth + 1);
    }
  }
  if (Array.isArray(s.allOf))
    return Object.assign({}, ...s.allOf.map((part) => exampleOf(part, components, depth + 1) ?? {}));
  const types = Array.isArray(s.type) ? s.type : [s.type];
  const type = types.find((t) => t !== 'null') ?? types[0];
  switch (type) {
    case 'object': {
      const properties = (s.properties ?? {}) as Record<string, Schema>;
      const required = new Set((s.required ?? []) as string[]);
      const out: Record<string, unknown> = {};
      for (const [name, property] of Object.entries(properties)) {
        // Optional members show only when they carry their own example: the example stays readable.
        if (!required.has(name) && !own(property).found) continue;
        const value = exampleOf(property, components, depth + 1);
        if (value !== undefined) out[name] = value;
      }
      return out;
    }
    case 'array': {
      const item = exampleOf(s.items, components, depth + 1);
      const min = typeof s.minItems === 'number' ? s.minItems : 1;
      return item === undefined ? [] : Array.from({ length: Math.max(1, min) }, () => item);
    }
    case 'string':
      return typeof s.format === 'string' && s.format in FORMAT_EXAMPLES
        ? FORMAT_EXAMPLES[s.format]
        : 'x'.repeat(Math.max(1, typeof s.minLength === 'number' ? s.minLength : 6));
    case 'integer':
    case 'number':
      return typeof s.minimum === 'number'
        ? s.minimum
        : typeof s.exclusiveMinimum === 'number'
          ? s.exclusiveMinimum + 1
          : 1;
    case 'boolean':
      return true;
    default:
      // A member that may hold anything (`{}`): null is one of its values.
      return s.type === undefined ? null : undefined;
  }
}

const members = (o: unknown): Record<string, unknown> =>
  typeof o === 'object' && o !== null ? (o as Record<string, unknown>) : {};

/** Gives every JSON request body and answer of the document an example, unless it has one. */
export function addExamples(document: { paths?: object; components?: object }): void {
  const components = members(members(document.components).schemas) as Components;
  const fill = (content: unknown) => {
    for (const [type, value] of Object.entries(members(content))) {
      const media = members(value);
      if (!/json/.test(type) || !media.schema || 'example' in media || 'examples' in media) continue;
      const example = exampleOf(media.schema, components);
      if (example !== undefined) media.example = example;
    }
  };
  for (const item of Object.values(members(document.paths)))
    for (const operation of Object.values(members(item))) {
      fill(members(members(operation).requestBody).content);
      for (const response of Object.values(members(members(operation).responses))) fill(members(response).content);
    }
}
