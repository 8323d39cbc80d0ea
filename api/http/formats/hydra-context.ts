import type { HydraProperty } from './hydra-properties.ts';

export const HYDRA = 'http://www.w3.org/ns/hydra/core#';

/** The types every Hydra service serves besides its resources: the entrypoint and the errors. */
export const ENTRYPOINT = 'Entrypoint';
export const ERROR_TYPES = ['ConstraintViolationList', 'Error'] as const;

/** API Platform's `@vocab`: the API documentation's absolute URL, so each term is `<docs>#Type/property`. */
export function vocabulary(publicUrl: string, prefix: string): string {
  return `${publicUrl}${prefix}/docs.jsonld#`;
}

type TermDefinition = string | { '@id': string; '@type': '@id' };

function term(type: string, name: string, link: boolean): TermDefinition {
  return link ? { '@id': `${type}/${name}`, '@type': '@id' } : `${type}/${name}`;
}

/** The context of a resource class: each property mapped to `Type/property`, links typed `@id`. */
export function classContext(type: string, properties: readonly HydraProperty[], vocab: string) {
  return {
    '@context': {
      '@vocab': vocab,
      hydra: HYDRA,
      ...Object.fromEntries(properties.map((p) => [p.name, term(type, p.name, p.link)])),
    },
  };
}

/** The entrypoint's context: one link per collection. */
export function entrypointContext(names: readonly string[], vocab: string) {
  return {
    '@context': {
      '@vocab': vocab,
      hydra: HYDRA,
      ...Object.fromEntries(names.map((name) => [name, term(ENTRYPOINT, name, true)])),
    },
  };
}

/**
 * The errors' contexts. API Platform serves its base context (`@vocab` and `hydra`) for both; the
 * violation members are also mapped to the properties the documentation gives them.
 */
export function errorContext(type: (typeof ERROR_TYPES)[number], vocab: string) {
  const violations =
    type === 'ConstraintViolationList'
      ? {
          violations: 'ConstraintViolationList/violations',
          propertyPath: 'ConstraintViolation/propertyPath',
          message: 'ConstraintViolation/message',
        }
      : {};
  return { '@context': { '@vocab': vocab, hydra: HYDRA, ...violations } };
}
