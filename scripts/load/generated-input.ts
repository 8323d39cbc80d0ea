import fc from 'fast-check';
import { leaves, replaced, sampleBody } from './hostile-input.ts';
import type { OpenApi, Operation } from './openapi-operations.ts';

// Random requests of one operation, from fast-check: path values, query strings and JSON bodies,
// valid and invalid (documented values, plausible bodies with one member changed, anything).

export interface GeneratedInput {
  /** The operation's path with its parameters filled in, URL-encoded. */
  path: string;
  /** A query string, URL-encoded ('' for none). */
  query: string;
  /** The JSON body; undefined sends none (GET and DELETE). */
  body: unknown;
}

const PLACE_GEOMETRY = { type: 'Point', coordinates: [3.0573, 50.6292] };

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
    '3f1c9a52-5d3e-4c7b-9a51-0d6b1e2f4a10',
  ),
  fc.string({ minLength: 1, maxLength: 12, unit: 'binary' }).map((s) => encodeURIComponent(s.toWellFormed())),
);

/** Query members any operation may get, besides its own: the searches' and the pagers'. */
const COMMON_QUERY_KEYS = [
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
];

const queryValue = fc.oneof(
  fc.string({ maxLength: 20, unit: 'binary' }),
  fc.constantFrom('1', '10', '1,2', '200,95', 'NaN', '-0', '1e308', '3.06,50.63', '121', 'true', ''),
);

const placeLike = fc.oneof(
  fc.record({ geometry: fc.jsonValue({ maxDepth: 3 }), activities: fc.jsonValue({ maxDepth: 2 }) }),
  fc.record({
    geometry: fc.constant(PLACE_GEOMETRY),
    country: fc.constant('FR'),
    name: fc.string({ unit: 'binary' }),
    activities: fc.array(fc.record({ sport_id: fc.integer(), tags: fc.array(fc.string()) })),
  }),
);

/**
 * The arbitrary of one operation's requests. A path parameter is its valid value (`pathValues`,
 * else '1') a third of the time; a body is the documented schema's plausible sample, that sample
 * with one member replaced or removed, a place-like object or any JSON value.
 */
export function requestArbitrary(
  document: OpenApi,
  op: Operation,
  pathValues: Record<string, string>,
): fc.Arbitrary<GeneratedInput> {
  const names = [...op.path.matchAll(/\{([^}]+)\}/g)].map(([, name]) => name ?? '');
  const values = names.map((name) =>
    fc.oneof({ arbitrary: fc.constant(pathValues[name] ?? '1'), weight: 1 }, { arbitrary: pathValue, weight: 2 }),
  );
  const path = fc.tuple(...values).map((chosen) => {
    const next = chosen.values();
    return op.path.replace(/\{[^}]+\}/g, () => next.next().value ?? '1');
  });
  const query = fc
    .dictionary(fc.constantFrom(...new Set([...op.queryParams, ...COMMON_QUERY_KEYS])), queryValue, { maxKeys: 6 })
    .map((d) =>
      new URLSearchParams(Object.entries(d).map(([k, v]): [string, string] => [k, v.toWellFormed()])).toString(),
    );
  return fc.record({ path, query, body: bodyArbitrary(document, op) });
}

function bodyArbitrary(document: OpenApi, op: Operation): fc.Arbitrary<unknown> {
  if (op.method === 'GET' || op.method === 'DELETE') return fc.constant(undefined);
  const options: fc.WeightedArbitrary<unknown>[] = [
    { arbitrary: fc.jsonValue({ maxDepth: 3 }), weight: 1 },
    { arbitrary: placeLike, weight: 1 },
  ];
  const sample = op.bodySchema ? sampleBody(document, op.bodySchema) : undefined;
  if (sample !== undefined) {
    options.push({ arbitrary: fc.constant(sample), weight: 1 });
    const { strings, numbers, arrays, objects } = leaves(sample);
    const members = [...strings, ...numbers, ...arrays, ...objects].filter((at) => at.length > 0);
    if (members.length > 0) {
      const change = fc.option(fc.jsonValue({ maxDepth: 2 }), { nil: undefined });
      options.push({
        arbitrary: fc
          .tuple(fc.constantFrom(...members), change)
          .map(([at, value]) => replaced(sample, at, () => value)),
        weight: 3,
      });
    }
  }
  return fc.oneof(...options);
}
