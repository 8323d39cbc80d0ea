import { parseHydraDocumentation } from '@api-platform/api-doc-parser';
import test from 'ava';
import { z } from 'zod';
import type { HydraClass } from '../api/http/formats/hydra-classes.ts';
import { classNamedIn, classOfIriIn, classProperties } from '../api/http/formats/hydra-properties.ts';
import { SERVICES } from '../api/services.ts';
import { type Doc, hydraClient } from './helpers/hydra-client.ts';
import { trackingWithDemoSports } from './helpers/hydra-demo-sports.ts';
import { startTrackingApi } from './helpers/tracking.ts';

// The real /v2 service, whatever resources it has when the test runs (the walks below find them
// through the entrypoint), plus one throwaway Hydra resource over the seeded sports. The
// documentation is parsed by API Platform's own api-doc-parser.
const api = await startTrackingApi({
  publicUrl: true,
  services: SERVICES.map((s) => (s.name === 'tracking' ? trackingWithDemoSports : s)),
});
test.after.always(() => api.close());

const { DOCS, VOCAB, get, entrypointCollections } = hydraClient(api);

test("API Platform's api-doc-parser builds a client: every collection a resource with fields, operations and filters", async (t) => {
  const u = await api.user();
  const headers = { authorization: `Bearer ${u.token}`, 'x-api-key': api.apiKey };
  let parsed: Awaited<ReturnType<typeof parseHydraDocumentation>>;
  try {
    parsed = await parseHydraDocumentation(`${api.url}/v2/`, { headers });
  } catch (failure) {
    // The parser throws a plain object {error, response, status}.
    t.fail(`parseHydraDocumentation: ${String((failure as { error?: unknown }).error ?? failure)}`);
    return;
  }
  t.is(parsed.status, 200);
  t.is(parsed.api.title, 'Sports tracking data');
  const resources = parsed.api.resources ?? [];
  const collections = await entrypointCollections();
  t.deepEqual(resources.map((r) => r.url).sort(), collections.map((c) => `${api.url}/v2${c.path}`).sort());
  for (const resource of resources) {
    t.regex(resource.id ?? '', new RegExp(`^${VOCAB}[A-Z]\\w*$`), resource.name);
    t.true((resource.readableFields ?? []).length > 0, resource.name);
    const types = (resource.operations ?? []).map((o) => o.type);
    t.true(types.includes('list'), resource.name);
    if (types.includes('create') || types.includes('edit'))
      t.true((resource.writableFields ?? []).length > 0, `${resource.name} has writable fields`);
    for (const field of resource.fields ?? [])
      t.true(field.name.length > 0 && !field.name.includes('/'), resource.name);
  }
  const demo = resources.find((r) => r.name === 'demo_sports');
  t.truthy(demo);
  const field = (name: string) => demo?.fields?.find((f) => f.name === name);
  t.like(field('id'), { type: 'integer', range: 'http://www.w3.org/2001/XMLSchema#integer' });
  t.like(field('slug'), { type: 'string', description: 'the English name, slugified' });
  t.like(field('active'), { type: 'boolean' });
  t.is(field('parent')?.maxCardinality, 1);
  t.is((field('parent')?.reference as { name?: string } | null)?.name, 'demo_sports');
  t.deepEqual(
    demo?.operations?.map((o) => [o.type, o.method]),
    [
      ['list', 'GET'],
      ['show', 'GET'],
    ],
  );
  const parameters = (await demo?.getParameters?.()) ?? [];
  t.deepEqual(
    parameters.map((p) => [p.variable, p.range]),
    [
      ['id', 'http://www.w3.org/2001/XMLSchema#integer'],
      ['id[]', 'http://www.w3.org/2001/XMLSchema#integer'],
      ['active', 'http://www.w3.org/2001/XMLSchema#boolean'],
      ['order[id]', 'http://www.w3.org/2001/XMLSchema#integer'],
      ['order[slug]', 'http://www.w3.org/2001/XMLSchema#string'],
    ],
  );
});

test('docs.jsonld: each class with its properties and operations, the entrypoint class, the violations', async (t) => {
  const res = await get('/docs.jsonld', null);
  t.is(res.status, 200);
  const docs = res.body;
  t.like(docs, { '@id': '/v2/docs.jsonld', 'hydra:entrypoint': '/v2/', 'hydra:title': 'Sports tracking data' });
  t.is(docs['@context']['@vocab'], VOCAB);
  t.is(docs['@context']['@base'], DOCS);
  const classes = new Map<string, Doc>(docs['hydra:supportedClass'].map((c: Doc) => [c['@id'], c]));
  for (const id of ['#Entrypoint', '#ConstraintViolation', '#ConstraintViolationList', '#DemoSport'])
    t.true(classes.has(id), id);
  t.is(classes.get('#ConstraintViolationList').subClassOf, 'hydra:Error');
  const entrypointClass = classes.get('#Entrypoint');
  const collections = await entrypointCollections();
  t.deepEqual(
    entrypointClass['hydra:supportedProperty'].map((p: Doc) => p['hydra:property']['@id']),
    collections.map((c) => `#Entrypoint/${c.name}`),
  );
  for (const p of entrypointClass['hydra:supportedProperty']) {
    const property = p['hydra:property'];
    const [collection, members] = property['rdfs:range'];
    t.deepEqual(collection, { '@id': 'hydra:Collection' });
    const type = members['owl:equivalentClass']['owl:allValuesFrom']['@id'];
    t.true(classes.has(type), type);
    t.like(property['hydra:supportedOperation'][0], { 'hydra:method': 'GET', returns: 'hydra:Collection' });
  }
  for (const [id, cls] of classes) {
    if (id === '#Entrypoint') continue;
    t.is(cls['@type'], 'hydra:Class', id);
    t.truthy(cls['hydra:title'], id);
    const type = id.slice(1);
    const properties = cls['hydra:supportedProperty'] as Doc[];
    for (const p of properties) {
      t.is(p['@type'], 'hydra:SupportedProperty', id);
      t.regex(p['hydra:property']['@id'], new RegExp(`^#${type}/\\w+$`), id);
      t.is(p['hydra:property'].domain, id);
      t.is(p['hydra:title'], p['hydra:property']['rdfs:label'], id);
      for (const flag of ['hydra:readable', 'hydra:writeable', 'hydra:required'])
        t.is(typeof p[flag], 'boolean', `${id} ${flag}`);
      t.true(p['hydra:readable'] || p['hydra:writeable'], id);
      if (p['hydra:property']['@type'] === 'hydra:Link' && p['hydra:property'].range)
        t.regex(p['hydra:property'].range, /^#[A-Z]\w*$/, id);
    }
    for (const op of cls['hydra:supportedOperation'] ?? []) {
      t.true(['GET', 'POST', 'PUT', 'PATCH', 'DELETE'].includes(op['hydra:method']), id);
      t.truthy(op['hydra:title'], id);
      t.truthy(op.returns, id);
      if (op['hydra:method'] === 'POST' || op['hydra:method'] === 'PUT') t.is(op.expects, id);
      if (op['hydra:method'] === 'DELETE') t.is(op.returns, 'owl:Nothing');
    }
    // The class's properties are the members its context maps.
    if (!id.startsWith('#ConstraintViolation')) {
      const context = (await get(`/contexts/${type}`, null)).body['@context'];
      t.deepEqual(
        properties.map((p) => p['hydra:title']).sort(),
        Object.keys(context)
          .filter((k) => k !== '@vocab' && k !== 'hydra')
          .sort(),
        id,
      );
    }
  }
  const demo = classes.get('#DemoSport');
  t.deepEqual(
    demo['hydra:supportedProperty'].map((p: Doc) => [
      p['hydra:title'],
      p['hydra:property']['@type'],
      p['hydra:property'].range,
      p['hydra:readable'],
      p['hydra:writeable'],
    ]),
    [
      ['id', 'rdf:Property', 'xmls:integer', true, false],
      ['slug', 'rdf:Property', 'xmls:string', true, false],
      ['active', 'rdf:Property', 'xmls:boolean', true, false],
      ['parent', 'hydra:Link', '#DemoSport', true, false],
    ],
  );
  t.deepEqual(
    demo['hydra:supportedOperation'].map((o: Doc) => [o['@type'], o['hydra:method'], o.returns]),
    [[['hydra:Operation', 'schema:FindAction'], 'GET', '#DemoSport']],
  );
});

test('class properties from the declarations: readable, writeable, required, links and their classes', (t) => {
  const user = z.string().meta({ format: 'iri-reference', example: '/v2/people/ab12' });
  const cls: HydraClass = {
    type: 'Thing',
    path: '/v2/things',
    items: [
      z.object({
        id: z.string(),
        owner: user,
        sport: z.string().meta({ format: 'iri-reference' }),
        tags: z.array(z.string()).nullable(),
        friends: z.array(user),
        when: z.string().meta({ format: 'date-time' }).nullable(),
        born: z.string().regex(/^\d{4}-\d{2}-\d{2}$/),
        size: z.number(),
      }),
    ],
    operations: [
      {
        kind: 'create',
        method: 'post',
        path: '/v2/things',
        summary: 'Create',
        body: z.looseObject({
          owner: z
            .string()
            .transform((v) => v)
            .meta({ format: 'iri-reference', example: '/v2/people/x' }),
          size: z.number().optional(),
          secret: z.string(),
          '@context': z.unknown().optional(),
          id: z.unknown().optional().meta({ description: 'read-only: ignored' }),
        }),
      },
      {
        kind: 'update',
        method: 'put',
        path: '/v2/things/:id',
        summary: 'Replace',
        body: z.object({ when: z.string() }),
      },
      { kind: 'action', method: 'post', path: '/v2/things/:id/x', summary: 'X', body: z.object({ other: z.string() }) },
    ],
  };
  const classes: HydraClass[] = [
    cls,
    { type: 'Person', path: '/v2/people', items: [], operations: [] },
    { type: 'Sport', path: '/v2/sports', items: [], operations: [] },
  ];
  const props = classProperties(cls, classOfIriIn(classes), classNamedIn(classes));
  const by = Object.fromEntries(props.map((p) => [p.name, p]));
  t.deepEqual(Object.keys(by), ['id', 'owner', 'sport', 'tags', 'friends', 'when', 'born', 'size', 'secret']);
  t.like(by.id, { readable: true, writeable: false, required: false, link: false, range: { datatype: 'xmls:string' } });
  t.like(by.owner, {
    readable: true,
    writeable: true,
    required: true,
    link: true,
    many: false,
    range: { class: 'Person' },
  });
  t.like(by.sport, { link: true, range: { class: 'Sport' } }); // from its name: no example IRI
  t.like(by.tags, { link: false, many: true });
  t.is(by.tags?.range, undefined);
  t.like(by.friends, { link: true, many: true, range: { class: 'Person' } });
  t.like(by.when, { range: { datatype: 'xmls:dateTime' }, writeable: true, required: false });
  t.like(by.born, { range: { datatype: 'xmls:date' } });
  t.like(by.size, { range: { datatype: 'xmls:decimal' }, writeable: true, required: false });
  t.like(by.secret, { readable: false, writeable: true, required: true });
});
