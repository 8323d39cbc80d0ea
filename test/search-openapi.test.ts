import test from 'ava';
import { startTestApi } from './helpers/app.ts';

/**
 * The places and partners searches validate through their declared query schemas, so
 * /openapi.json types their parameters as the API reads them (numbers, arrays, enums, limits).
 */
const api = await startTestApi(null);

interface Parameter {
  name: string;
  in: string;
  style?: string;
  explode?: boolean;
  schema: {
    type?: string;
    items?: { type?: string; enum?: string[] };
    enum?: string[];
    minimum?: number;
    maximum?: number;
    exclusiveMinimum?: number;
    minItems?: number;
    maxItems?: number;
  };
}

const document = (await (await api.fetch('/openapi.json')).json()) as {
  paths: Record<string, { get?: { parameters?: Parameter[] } }>;
};
test.after.always(api.close);
const parameters = (path: string): Record<string, Parameter> =>
  Object.fromEntries(
    (document.paths[path]?.get?.parameters ?? []).filter((p) => p.in === 'query').map((p) => [p.name, p]),
  );

test('GET /api/v1/places: numbers, limits, comma-separated arrays and enums', (t) => {
  const p = parameters('/api/v1/places');
  t.like(p.radius?.schema, { type: 'number', exclusiveMinimum: 0, maximum: 100 });
  t.like(p.limit?.schema, { type: 'integer', minimum: 1, maximum: 100 });
  t.like(p.page?.schema, { type: 'integer', minimum: 1 });
  t.like(p.min_difficulty?.schema, { type: 'integer', minimum: 0, maximum: 2 });
  t.like(p.max_distance?.schema, { type: 'integer', minimum: 0 });
  t.like(p.days?.schema, { type: 'integer', minimum: 1 });
  t.like(p.sports, { style: 'form', explode: false, schema: { type: 'array', items: { type: 'integer' } } });
  t.is(p.tags?.schema.type, 'array');
  t.true(p.tags?.schema.items?.enum?.includes('floodlight'));
  t.true(p.surface?.schema.items?.enum?.includes('clay'));
  t.deepEqual(p.created_at?.schema.enum, ['asc', 'desc']);
  t.is(p.featured?.schema.type, 'boolean');
  t.is(p.origin?.schema.type, 'string', '`lng,lat` stays the documented string');
});

test('GET /api/v1/partners: integer sport and page (25 per page, 4000 pages), nearby[] two numbers', (t) => {
  const p = parameters('/api/v1/partners');
  t.like(p.sport?.schema, { type: 'integer', minimum: 1 });
  t.like(p.page?.schema, { type: 'integer', minimum: 1, maximum: 4000 });
  t.like(p['nearby[]']?.schema, { type: 'array', items: { type: 'number' }, minItems: 2, maxItems: 2 });
  t.is(p.featured?.schema.type, 'boolean');
  t.is(p.partner?.schema.type, 'boolean');
});

test('the API reads the searches with those schemas: typed values pass, each refused one is named', async (t) => {
  const get = async (path: string) => {
    const res = await api.fetch(`/api/v1${path}`);
    return { status: res.status, body: (await res.json()) as { errors?: { path: string }[] } };
  };
  t.is((await get('/partners?nearby[]=50.6&nearby[]=3.05&sport=121&featured=1&page=2')).status, 200);
  const partners = await get('/partners?nearby[]=95,3&sport=tennis&page=0&partner=true&partner=false');
  t.is(partners.status, 422);
  t.deepEqual(partners.body.errors?.map((e) => e.path).sort(), [
    'query.nearby[]',
    'query.page',
    'query.partner',
    'query.sport',
  ]);
  t.is((await get('/places?origin=3.06,50.63&radius=2.5&sports=357,121&min_difficulty=0&featured=false')).status, 200);
  const places = await get('/places?origin=3.06,50.63&radius=101&sports=1,x&limit=1&limit=2');
  t.is(places.status, 422);
  t.deepEqual(places.body.errors?.map((e) => e.path).sort(), ['query.limit', 'query.radius', 'query.sports']);
});
