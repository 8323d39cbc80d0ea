import type { HydraClass, HydraOperation } from './hydra-classes.ts';
import {
  classContext,
  ENTRYPOINT,
  ERROR_TYPES,
  entrypointContext,
  errorContext,
  HYDRA,
  vocabulary,
} from './hydra-context.ts';
import { classNamedIn, classOfIriIn, classProperties, type HydraProperty } from './hydra-properties.ts';

/** One Hydra API: a service prefix, its public URL, and the classes declared under it. */
export interface HydraApi {
  /** `/v2`: the entrypoint is `/v2/`, the documentation `/v2/docs.jsonld`, contexts `/v2/contexts/{Type}`. */
  prefix: string;
  /** Absolute base URL (PUBLIC_URL): `@vocab` and the documentation's `@base` are absolute, as in API Platform. */
  publicUrl: string;
  title: string;
  description: string;
  classes: readonly HydraClass[];
}

/** A collection the entrypoint links to: a class's list on a path without parameters. */
export interface HydraCollection {
  /** The entrypoint member (API Platform's lcfirst of the type: `userDevice`). */
  name: string;
  iri: string;
  cls: HydraClass;
  list: HydraOperation;
}

export function collections(classes: readonly HydraClass[]): HydraCollection[] {
  return classes.flatMap((cls) => {
    const list = cls.operations.find((o) => o.kind === 'list' && documented(o, cls));
    if (!list) return [];
    return [{ name: cls.type.charAt(0).toLowerCase() + cls.type.slice(1), iri: list.path, cls, list }];
  });
}

function propertiesOf(cls: HydraClass, classes: readonly HydraClass[]): HydraProperty[] {
  return classProperties(cls, classOfIriIn(classes), classNamedIn(classes));
}

/** `GET {prefix}/`: one IRI per collection. */
export function entrypoint(api: HydraApi) {
  return {
    '@context': `${api.prefix}/contexts/${ENTRYPOINT}`,
    '@id': `${api.prefix}/`,
    '@type': ENTRYPOINT,
    ...Object.fromEntries(collections(api.classes).map((c) => [c.name, c.iri])),
  };
}

/** The JSON-LD context document of a type the API serves, or undefined for an unknown type. */
export function contextDocument(api: HydraApi, type: string): object | undefined {
  const vocab = vocabulary(api.publicUrl, api.prefix);
  if (type === ENTRYPOINT)
    return entrypointContext(
      collections(api.classes).map((c) => c.name),
      vocab,
    );
  const errorType = ERROR_TYPES.find((t) => t === type);
  if (errorType) return errorContext(errorType, vocab);
  const cls = api.classes.find((c) => c.type === type);
  return cls ? classContext(cls.type, propertiesOf(cls, api.classes), vocab) : undefined;
}

const SCHEMA_ACTIONS: Record<Exclude<HydraOperation['kind'], 'action'>, string> = {
  list: 'schema:FindAction',
  get: 'schema:FindAction',
  create: 'schema:CreateAction',
  update: 'schema:ReplaceAction',
  remove: 'schema:DeleteAction',
};

/**
 * Operations a Hydra client runs on an item's IRI, or on the collection's to create one. Custom
 * actions and operations at other paths (`/v2/me` beside `/v2/users/{id}`) cannot be named by a
 * Hydra operation, which is bound to those IRIs: /openapi.json has them. An update answering a
 * spec alias (POST on an item) is documented under its PUT/PATCH only.
 */
function documented(op: HydraOperation, cls: HydraClass): boolean {
  if (op.kind === 'action') return false;
  if (op.kind === 'list' || op.kind === 'create') return op.path === cls.path;
  const itemPath = op.path.startsWith(`${cls.path}/:`) && !op.path.slice(cls.path.length + 1).includes('/');
  return itemPath && (op.kind !== 'update' || op.method === 'put' || op.method === 'patch');
}

function operationNode(op: HydraOperation, type: string) {
  const action =
    op.kind === 'update' && op.method === 'patch' ? 'schema:UpdateAction' : SCHEMA_ACTIONS[op.kind as 'get'];
  const returns = op.kind === 'list' ? 'hydra:Collection' : op.kind === 'remove' ? 'owl:Nothing' : `#${type}`;
  return {
    '@type': ['hydra:Operation', action],
    'hydra:method': op.method.toUpperCase(),
    'hydra:title': op.summary,
    'rdfs:label': op.summary,
    ...(op.description ? { 'hydra:description': op.description } : {}),
    ...(op.kind === 'create' || op.kind === 'update' ? { expects: `#${type}` } : {}),
    returns,
  };
}

function supportedProperty(type: string, p: HydraProperty) {
  const range = p.range && ('class' in p.range ? `#${p.range.class}` : p.range.datatype);
  return {
    '@type': 'hydra:SupportedProperty',
    'hydra:property': {
      '@id': `#${type}/${p.name}`,
      '@type': p.link ? 'hydra:Link' : 'rdf:Property',
      'rdfs:label': p.name,
      domain: `#${type}`,
      ...(range ? { range } : {}),
      ...(p.link && !p.many ? { 'owl:maxCardinality': 1 } : {}),
    },
    'hydra:title': p.name,
    'hydra:required': p.required,
    'hydra:readable': p.readable,
    'hydra:writeable': p.writeable,
    ...(p.description ? { 'hydra:description': p.description } : {}),
  };
}

function resourceClass(cls: HydraClass, classes: readonly HydraClass[]) {
  const description = cls.items.find((s) => s.description)?.description;
  return {
    '@id': `#${cls.type}`,
    '@type': 'hydra:Class',
    'rdfs:label': cls.type,
    'hydra:title': cls.type,
    ...(description ? { 'hydra:description': description } : {}),
    'hydra:supportedProperty': propertiesOf(cls, classes).map((p) => supportedProperty(cls.type, p)),
    'hydra:supportedOperation': cls.operations
      .filter((op) => op.kind !== 'list' && documented(op, cls))
      .map((op) => operationNode(op, cls.type)),
  };
}

function entrypointClass(api: HydraApi) {
  return {
    '@id': `#${ENTRYPOINT}`,
    '@type': 'hydra:Class',
    'hydra:title': 'The API entrypoint',
    'hydra:supportedProperty': collections(api.classes).map((c) => {
      const label = `The collection of ${c.cls.type} resources`;
      return {
        '@type': 'hydra:SupportedProperty',
        'hydra:property': {
          '@id': `#${ENTRYPOINT}/${c.name}`,
          '@type': 'hydra:Link',
          domain: `#${ENTRYPOINT}`,
          'rdfs:label': label,
          'rdfs:range': [
            { '@id': 'hydra:Collection' },
            {
              'owl:equivalentClass': {
                'owl:onProperty': { '@id': 'hydra:member' },
                'owl:allValuesFrom': { '@id': `#${c.cls.type}` },
              },
            },
          ],
          'hydra:supportedOperation': [operationNode(c.list, c.cls.type)],
        },
        'hydra:title': label,
        'hydra:readable': true,
        'hydra:writeable': false,
      };
    }),
    'hydra:supportedOperation': {
      '@type': 'hydra:Operation',
      'hydra:method': 'GET',
      'rdfs:label': 'The API entrypoint.',
      returns: `#${ENTRYPOINT}`,
    },
  };
}

function errorProperty(type: string, name: string, range: string, description: string) {
  return {
    '@type': 'hydra:SupportedProperty',
    'hydra:property': {
      '@id': `#${type}/${name}`,
      '@type': 'rdf:Property',
      'rdfs:label': name,
      domain: `#${type}`,
      range,
    },
    'hydra:title': name,
    'hydra:description': description,
    'hydra:required': false,
    'hydra:readable': true,
    'hydra:writeable': false,
  };
}

const VIOLATION_CLASSES = [
  {
    '@id': '#ConstraintViolation',
    '@type': 'hydra:Class',
    'hydra:title': 'A constraint violation',
    'hydra:supportedProperty': [
      errorProperty('ConstraintViolation', 'propertyPath', 'xmls:string', 'The property path of the violation'),
      errorProperty('ConstraintViolation', 'message', 'xmls:string', 'The message associated with the violation'),
    ],
  },
  {
    '@id': '#ConstraintViolationList',
    '@type': 'hydra:Class',
    subClassOf: 'hydra:Error',
    'hydra:title': 'A constraint violation list',
    'hydra:supportedProperty': [
      errorProperty('ConstraintViolationList', 'violations', '#ConstraintViolation', 'The violations'),
    ],
  },
];

/**
 * `GET {prefix}/docs.jsonld`: the Hydra API documentation in API Platform's shape, enough for its
 * api-doc-parser and Admin to build a client: every class with its properties (range, readable,
 * writeable, required) and operations (method, expects, returns), the entrypoint's collections,
 * and the constraint violations. Class ids are `#Type`, resolved against the documentation's
 * absolute URL (`@base`), so they equal the `@vocab` terms of the contexts wherever the document is fetched from.
 */
export function apiDocumentation(api: HydraApi) {
  const docs = `${api.publicUrl}${api.prefix}/docs.jsonld`;
  return {
    '@context': {
      '@vocab': vocabulary(api.publicUrl, api.prefix),
      '@base': docs,
      hydra: HYDRA,
      rdf: 'http://www.w3.org/1999/02/22-rdf-syntax-ns#',
      rdfs: 'http://www.w3.org/2000/01/rdf-schema#',
      xmls: 'http://www.w3.org/2001/XMLSchema#',
      owl: 'http://www.w3.org/2002/07/owl#',
      schema: 'https://schema.org/',
      domain: { '@id': 'rdfs:domain', '@type': '@id' },
      range: { '@id': 'rdfs:range', '@type': '@id' },
      subClassOf: { '@id': 'rdfs:subClassOf', '@type': '@id' },
      expects: { '@id': 'hydra:expects', '@type': '@id' },
      returns: { '@id': 'hydra:returns', '@type': '@id' },
    },
    '@id': `${api.prefix}/docs.jsonld`,
    'hydra:title': api.title,
    'hydra:description': api.description,
    'hydra:entrypoint': `${api.prefix}/`,
    'hydra:supportedClass': [
      ...api.classes.map((cls) => resourceClass(cls, api.classes)),
      entrypointClass(api),
      ...VIOLATION_CLASSES,
    ],
  };
}
