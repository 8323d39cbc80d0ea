import { z } from 'zod';
import type { HydraClass } from './hydra-classes.ts';

/** One property of a Hydra class, as its context and the API documentation describe it. */
export interface HydraProperty {
  name: string;
  /** An XML Schema datatype (`xmls:integer`), or for a link the `@type` of the class it points to. */
  range?: { datatype: string } | { class: string };
  /** Its values are IRIs of other resources (`@type: @id` in the context, `hydra:Link` in the docs). */
  link: boolean;
  /** An array of values (or of links). */
  many: boolean;
  readable: boolean;
  writeable: boolean;
  /** Required when creating (in the create body's required members). */
  required: boolean;
  description?: string;
}

interface JsonSchema {
  type?: string | string[];
  format?: string;
  pattern?: string;
  description?: string;
  example?: unknown;
  examples?: unknown[];
  items?: JsonSchema;
  properties?: Record<string, JsonSchema>;
  required?: string[];
  anyOf?: JsonSchema[];
  oneOf?: JsonSchema[];
  allOf?: JsonSchema[];
  $ref?: string;
  $defs?: Record<string, JsonSchema>;
}

/** The JSON Schema of a zod schema; what JSON Schema cannot say (transforms' outputs) is left open. */
function jsonSchema(schema: z.ZodType, io: 'input' | 'output'): JsonSchema {
  try {
    return z.toJSONSchema(schema, { io, unrepresentable: 'any' }) as JsonSchema;
  } catch {
    // A schema JSON Schema cannot express at all (a cycle without an id): documented without members.
    return {};
  }
}

function resolve(node: JsonSchema, root: JsonSchema): JsonSchema {
  const ref = node.$ref && /^#\/\$defs\/(.+)$/.exec(node.$ref)?.[1];
  return ref ? (root.$defs?.[ref] ?? {}) : node;
}

/** The members of an object schema (of every branch of a union), with those always required. */
function members(schema: JsonSchema, root: JsonSchema): { props: Map<string, JsonSchema>; required: Set<string> } {
  const node = resolve(schema, root);
  const props = new Map<string, JsonSchema>(Object.entries(node.properties ?? {}));
  const required = new Set(node.required ?? []);
  for (const branch of [...(node.anyOf ?? []), ...(node.oneOf ?? []), ...(node.allOf ?? [])]) {
    const inner = members(branch, root);
    for (const [name, prop] of inner.props) if (!props.has(name)) props.set(name, prop);
    // A member required by one branch of a union only is not required; allOf branches all apply.
    if (node.allOf?.includes(branch)) for (const name of inner.required) required.add(name);
  }
  return { props, required };
}

/** The schema without its `null` alternative (a nullable member is described by its values). */
function nonNull(schema: JsonSchema, root: JsonSchema): JsonSchema {
  const node = resolve(schema, root);
  const alternatives = (node.anyOf ?? node.oneOf)?.filter((s) => resolve(s, root).type !== 'null');
  if (alternatives?.length === 1 && alternatives[0]) return nonNull(alternatives[0], root);
  if (Array.isArray(node.type)) {
    const types = node.type.filter((t) => t !== 'null');
    if (types.length === 1) return { ...node, type: types[0] };
  }
  return node;
}

const DATE = /^\^\\d\{4\}-\\d\{2\}-\\d\{2\}\$$/;

/** API Platform's ranges: XML Schema datatypes for scalars, none for arrays of values and objects. */
function datatype(schema: JsonSchema): string | undefined {
  switch (schema.type) {
    case 'integer':
      return 'xmls:integer';
    case 'number':
      return 'xmls:decimal';
    case 'boolean':
      return 'xmls:boolean';
    case 'string':
      if (schema.format === 'date-time') return 'xmls:dateTime';
      if (schema.format === 'date' || (schema.pattern && DATE.test(schema.pattern))) return 'xmls:date';
      if (schema.format === 'time') return 'xmls:time';
      if (schema.format === 'duration') return 'xmls:duration';
      return 'xmls:string';
    default:
      return undefined;
  }
}

/** What one member schema says: a link (to which class, from its example IRI), many values, a datatype. */
function describe(
  schema: JsonSchema,
  root: JsonSchema,
  classOf: (exampleIri: string | undefined) => string | undefined,
) {
  const node = nonNull(schema, root);
  const many = node.type === 'array';
  const value = many && node.items ? nonNull(node.items, root) : node;
  const link = value.format === 'iri-reference';
  const example = [value.example, ...(value.examples ?? [])].find((e): e is string => typeof e === 'string');
  const linked = link ? classOf(example) : undefined;
  const scalar = many ? undefined : datatype(value);
  const range = linked ? { class: linked } : !link && scalar ? { datatype: scalar } : undefined;
  return { link, many, range, description: schema.description ?? node.description };
}

/**
 * The properties of a class, from its declarations: readable ones from the item schemas (the
 * list's items included), writeable ones from the create and update bodies, required ones from
 * the create body. A link is a member of format `iri-reference`; its class comes from the
 * example IRI of its schema (`iriOf` sets one), else from its name.
 */
export function classProperties(
  cls: HydraClass,
  classOfIri: (iri: string) => string | undefined,
  classNamed: (property: string) => string | undefined = () => undefined,
): HydraProperty[] {
  const out = new Map<string, HydraProperty>();
  const add = (schema: z.ZodType, io: 'input' | 'output', mode: 'readable' | 'writeable', required: boolean) => {
    const root = jsonSchema(schema, io);
    const m = members(root, root);
    for (const [name, prop] of m.props) {
      // JSON-LD keywords are not properties; a body member accepting anything is one the body
      // tolerates and ignores (a read-only field sent back), not one a client writes.
      if (name.startsWith('@') || (io === 'input' && unconstrained(resolve(prop, root)))) continue;
      const d = describe(prop, root, (example) => (example && classOfIri(example)) || classNamed(name));
      let entry = out.get(name);
      // The first schema describes the member, unless a later one knows it is a link (an output
      // schema may type an IRI as a bare string where the body's `iriOf` says more).
      if (!entry || (d.link && (!entry.link || !entry.range))) {
        const { readable = false, writeable = false, required = false, description = d.description } = entry ?? {};
        entry = {
          name,
          link: d.link,
          many: d.many,
          ...(d.range ? { range: d.range } : {}),
          readable,
          writeable,
          required,
          ...(description ? { description } : {}),
        };
        out.set(name, entry);
      }
      entry[mode] = true;
      if (required && m.required.has(name)) entry.required = true;
    }
  };
  const readable = [...cls.items, ...cls.operations.flatMap((o) => (o.kind === 'list' && o.item ? [o.item] : []))];
  for (const schema of readable) add(schema, 'output', 'readable', false);
  for (const op of cls.operations)
    if ((op.kind === 'create' || op.kind === 'update') && op.body)
      add(op.body, 'input', 'writeable', op.kind === 'create');
  return [...out.values()];
}

const STRUCTURAL = [
  'type',
  'format',
  'pattern',
  'properties',
  'items',
  'anyOf',
  'oneOf',
  'allOf',
  '$ref',
  'enum',
  'const',
];

function unconstrained(schema: JsonSchema): boolean {
  return !STRUCTURAL.some((k) => k in schema);
}

/** The `@type` of the class whose items an IRI names (`/v2/sports/121` → `Sport`). */
export function classOfIriIn(classes: readonly HydraClass[]): (iri: string) => string | undefined {
  return (iri) => {
    const path = iri.replace(/^https?:\/\/[^/]+/i, '');
    return classes.find((c) => path.startsWith(`${c.path}/`) && !path.slice(c.path.length + 1).includes('/'))?.type;
  };
}

/** The class a link property is named after (`sport` → `Sport`, `userDevice` → `UserDevice`), when its schema gives no example IRI. */
export function classNamedIn(classes: readonly HydraClass[]): (property: string) => string | undefined {
  return (property) => classes.find((c) => c.type.toLowerCase() === property.toLowerCase())?.type;
}
