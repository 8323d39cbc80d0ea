import test from 'ava';
import { sql } from 'kysely';
import { z } from 'zod';
import type { AppContext } from '../api/context.ts';
import type { HydraView, JsonApiView } from '../api/http/formats/format.ts';
import { Compound, related } from '../api/http/formats/jsonapi.ts';
import { negotiate } from '../api/http/negotiation.ts';
import { Resource } from '../api/http/resource.ts';
import { ApiRouter } from '../api/http/route.ts';
import type { ServiceModule } from '../api/service-module.ts';
import type { Db } from '../shared/db/database.ts';
import { notFoundError } from '../shared/errors.ts';
import { startTestApi } from './helpers/app.ts';

// Two small resources over the seeded sports referential, one per document format, declared the
// way a service declares its own: the test checks what the declaration alone produces.

interface Sport {
  id: number;
  slug: string;
  name: string;
  parent_id: number | null;
  active: boolean;
}

const sportQuery = (db: Db) =>
  db
    .selectFrom('sports')
    .select(['id', 'slug', sql<string>`names->>'en'`.as('name'), 'parent_id', 'active'])
    .orderBy('id');

async function sportPage(db: Db, page: number, limit: number, active?: boolean) {
  let q = sportQuery(db);
  if (active !== undefined) q = q.where('active', '=', active);
  const [items, total] = await Promise.all([
    q
      .limit(limit)
      .offset((page - 1) * limit)
      .execute(),
    q
      .clearSelect()
      .clearOrderBy()
      .select((eb) => eb.fn.countAll<string>().as('n'))
      .executeTakeFirstOrThrow(),
  ]);
  return { items, page, limit, total: Number(total.n) };
}

async function sportById(db: Db, id: number): Promise<Sport> {
  const sport = await sportQuery(db).where('id', '=', id).executeTakeFirst();
  if (!sport) throw notFoundError(`Unknown sport ${id}`);
  return sport;
}

const sportView: JsonApiView<Sport & { children: number[] }> = {
  type: 'sports',
  path: '/jsonapi/sports',
  id: (s) => String(s.id),
  attributes: (s) => ({ slug: s.slug, name: s.name }),
  relationships: (s) => ({
    parent: s.parent_id === null ? null : { type: 'sports', id: String(s.parent_id) },
    children: s.children.map((id) => ({ type: 'sports', id: String(id) })),
  }),
};

const hydraItem = z.object({ id: z.number(), name: z.string(), active: z.boolean() });
const hydraView: HydraView<Sport, typeof hydraItem> = {
  type: 'Sport',
  path: '/v2/demo_sports',
  id: (s) => String(s.id),
  fields: (s) => ({ id: s.id, name: s.name, active: s.active }),
};

const params = z.object({ id: z.coerce.number().int().positive() });
const paging = z.object({
  page: z.coerce.number().int().min(1).default(1),
  limit: z.coerce.number().int().min(1).max(50).default(10),
});

function demoServices(): ServiceModule[] {
  const withChildren = async (db: Db, s: Sport) => ({
    ...s,
    children: (await db.selectFrom('sports').select('id').where('parent_id', '=', s.id).orderBy('id').execute()).map(
      (r) => r.id,
    ),
  });
  return [
    {
      name: 'catalogue',
      errorFormat: 'jsonapi',
      prefixes: ['/jsonapi'],
      routers: (app: AppContext) => {
        const router = new ApiRouter({
          prefix: '/jsonapi',
          errorFormat: 'jsonapi',
          registry: app.registry,
          bodyLimitBytes: app.config.bodyLimitBytes,
          tag: 'demo',
        });
        new Resource(router, app, {
          path: '/sports',
          itemPath: '/:id',
          itemParams: params,
          format: 'jsonapi',
          item: z.object({ slug: z.string(), name: z.string() }),
          jsonapi: sportView,
          access: { read: 'public', write: 'bearer' },
        })
          .list({
            summary: 'Sports',
            query: paging.extend({ 'page[number]': z.coerce.number().int().min(1).optional() }),
            handler: async ({ query }) => {
              const page = await sportPage(app.db, query['page[number]'] ?? query.page, query.limit);
              return {
                ...page,
                items: await Promise.all(page.items.map((s) => withChildren(app.db, s))),
                pageParam: 'page[number]',
              };
            },
          })
          .get({
            summary: 'One sport; include=children',
            query: z.object({ include: z.enum(['children']).optional() }),
            handler: async ({ params, query }) => {
              const sport = await withChildren(app.db, await sportById(app.db, params.id));
              if (query.include !== 'children') return sport;
              const children = await Promise.all(
                sport.children.map(async (id) => withChildren(app.db, await sportById(app.db, id))),
              );
              return new Compound(sport, [related(sportView, children)]);
            },
          });
        return [router.router];
      },
    },
    {
      name: 'tracking',
      errorFormat: 'hydra',
      prefixes: ['/v2'],
      routers: (app: AppContext) => {
        const router = new ApiRouter({
          prefix: '/v2',
          errorFormat: 'hydra',
          registry: app.registry,
          bodyLimitBytes: app.config.bodyLimitBytes,
          tag: 'demo',
        });
        new Resource(router, app, {
          path: '/demo_sports',
          itemPath: '/:id',
          itemParams: params,
          format: 'hydra',
          item: hydraItem,
          hydra: hydraView,
          access: { read: 'bearer', write: 'bearer' },
        })
          .list({
            summary: 'Sports',
            query: paging.extend({ active: z.enum(['true', 'false']).optional() }),
            handler: ({ query }) =>
              sportPage(
                app.db,
                query.page,
                query.limit,
                query.active === undefined ? undefined : query.active === 'true',
              ),
          })
          .get({
            summary: 'One sport',
            handler: ({ params }) => sportById(app.db, params.id),
            representations: {
              // An operation's own representation beside JSON-LD and JSON (as an activity's GPX).
              'text/csv': (s: Sport) => `id,name\n${s.id},${s.name}\n`,
              // One of the format's own types, written by the operation (as a faster writer would).
              'application/json': (s: Sport, ctx) => {
                ctx.set('X-Written-By', 'representation');
                return JSON.stringify({ id: s.id, name: s.name, active: s.active });
              },
            },
          });
        return [router.router];
      },
    },
  ];
}

const api = await startTestApi(null, { services: demoServices(), env: { SERVICES: 'all' } });
test.after.always(api.close);

// biome-ignore lint/suspicious/noExplicitAny: documents are checked member by member
type Doc = any;
const json = async (res: Response): Promise<{ status: number; type: string; body: Doc }> => ({
  status: res.status,
  type: res.headers.get('content-type') ?? '',
  body: await res.json(),
});

test('JSON:API item: resource object with relationships (null when none), links, jsonapi member', async (t) => {
  const running = await json(await api.fetch('/jsonapi/sports/121'));
  t.is(running.status, 200);
  t.regex(running.type, /^application\/vnd\.api\+json/);
  t.deepEqual(running.body.jsonapi, { version: '1.1' });
  t.is(running.body.links.self, `${api.config.PUBLIC_URL}/jsonapi/sports/121`);
  const data = running.body.data;
  t.like(data, { type: 'sports', id: '121', attributes: { slug: 'running' } });
  t.deepEqual(data.relationships.parent, { data: null });
  t.true(data.relationships.children.data.length > 0);
  t.is(data.links.self, `${api.config.PUBLIC_URL}/jsonapi/sports/121`);
  t.false('included' in running.body);
});

test('JSON:API compound document: include=children adds each child once, sparse fieldsets trim members', async (t) => {
  const res = await json(await api.fetch('/jsonapi/sports/121?include=children&fields[sports]=name,parent'));
  t.deepEqual(Object.keys(res.body.data.attributes), ['name']);
  t.deepEqual(Object.keys(res.body.data.relationships), ['parent']);
  const included = res.body.included as { type: string; id: string; relationships: { parent: unknown } }[];
  t.true(included.length > 0);
  t.is(new Set(included.map((r) => r.id)).size, included.length);
  for (const child of included) t.deepEqual(child.relationships.parent, { data: { type: 'sports', id: '121' } });
});

test('JSON:API list: paging links carry the other parameters, meta.total counts every match', async (t) => {
  const res = await json(await api.fetch('/jsonapi/sports?limit=5&page[number]=2'));
  t.is(res.status, 200);
  t.is(res.body.data.length, 5);
  const total = res.body.meta.total as number;
  t.true(total > 10);
  const { links } = res.body;
  t.true(links.prev.includes('page%5Bnumber%5D=1'));
  t.true(links.next.includes('page%5Bnumber%5D=3'));
  t.true(links.last.includes(`page%5Bnumber%5D=${Math.ceil(total / 5)}`));
  t.true(links.next.includes('limit=5'));
});

test('JSON:API errors: unknown item and bad parameter in its own format, naming the parameter', async (t) => {
  const missing = await json(await api.fetch('/jsonapi/sports/999999'));
  t.is(missing.status, 404);
  t.regex(missing.type, /^application\/vnd\.api\+json/);
  t.like(missing.body.errors[0], { status: '404', detail: 'Unknown sport 999999' });
  const bad = await json(await api.fetch('/jsonapi/sports?limit=500'));
  t.is(bad.status, 422);
  t.deepEqual(bad.body.errors[0].source, { parameter: 'limit' });
});

test('Hydra: the declared access is enforced, in the Hydra error format', async (t) => {
  const res = await json(await api.fetch('/v2/demo_sports'));
  t.is(res.status, 401);
  t.regex(res.type, /^application\/ld\+json/);
  t.is(res.body['@type'], 'hydra:Error');
});

test('Hydra collection: @context, @id, @type, members, totalItems, view and search template', async (t) => {
  const { token } = await api.account();
  const res = await json(
    await api.fetch('/v2/demo_sports?active=true&limit=3&page=2', { headers: { authorization: `Bearer ${token}` } }),
  );
  t.is(res.status, 200);
  t.regex(res.type, /^application\/ld\+json/);
  const body = res.body;
  t.is(body['@context'], '/v2/contexts/Sport');
  t.is(body['@id'], '/v2/demo_sports');
  t.is(body['@type'], 'hydra:Collection');
  t.is(body['hydra:member'].length, 3);
  t.like(body['hydra:member'][0], { '@type': 'Sport', active: true });
  t.regex(body['hydra:member'][0]['@id'], /^\/v2\/demo_sports\/\d+$/);
  t.true(body['hydra:totalItems'] > 3);
  const view = body['hydra:view'];
  t.is(view['@type'], 'hydra:PartialCollectionView');
  t.is(view['@id'], '/v2/demo_sports?active=true&limit=3&page=2');
  t.is(view['hydra:previous'], '/v2/demo_sports?active=true&limit=3&page=1');
  t.is(view['hydra:next'], '/v2/demo_sports?active=true&limit=3&page=3');
  t.regex(view['hydra:last'], /page=\d+$/);
  // Filters only, as API Platform announces them: paging parameters are not search variables.
  t.is(body['hydra:search']['hydra:template'], '/v2/demo_sports{?active}');
  t.deepEqual(body['hydra:search']['hydra:mapping'], [
    { '@type': 'IriTemplateMapping', variable: 'active', property: 'active', required: false },
  ]);
});

test('Hydra item: @context, @id and @type with the fields', async (t) => {
  const { token } = await api.account();
  const res = await json(await api.fetch('/v2/demo_sports/121', { headers: { authorization: `Bearer ${token}` } }));
  t.like(res.body, { '@context': '/v2/contexts/Sport', '@id': '/v2/demo_sports/121', '@type': 'Sport', id: 121 });
});

test('the declarations document their operations with the standard errors in the service dialect', async (t) => {
  const doc = (await (await api.fetch('/openapi.json')).json()) as {
    paths: Record<
      string,
      Record<string, { responses: Record<string, { content?: Record<string, { schema?: unknown }> }> }>
    >;
  };
  const hydraGet = doc.paths['/v2/demo_sports/{id}']?.get;
  t.truthy(hydraGet);
  t.deepEqual(Object.keys(hydraGet?.responses ?? {}).sort(), ['200', '401', '404', '406']);
  t.truthy(hydraGet?.responses['404']?.content?.['application/ld+json']);
  t.deepEqual(Object.keys(hydraGet?.responses['200']?.content ?? {}), [
    'application/ld+json',
    'application/json',
    'text/csv',
  ]);
  // The JSON the operation writes itself is documented with the format's schema.
  t.truthy(hydraGet?.responses['200']?.content?.['application/json']?.schema);
  const hydraList = doc.paths['/v2/demo_sports']?.get;
  t.deepEqual(Object.keys(hydraList?.responses['200']?.content ?? {}), ['application/ld+json', 'application/json']);
  const jsonApiList = doc.paths['/jsonapi/sports']?.get;
  t.deepEqual(Object.keys(jsonApiList?.responses ?? {}).sort(), ['200', '422']);
  t.truthy(jsonApiList?.responses['422']?.content?.['application/vnd.api+json']);
});

const withToken = async (accept?: string) => {
  const { token } = await api.account();
  return (path: string) =>
    api.fetch(path, { headers: { authorization: `Bearer ${token}`, ...(accept === undefined ? {} : { accept }) } });
};

test('Hydra negotiation: JSON-LD without Accept, for */*, application/* and ld+json with a profile', async (t) => {
  for (const accept of [
    undefined,
    '',
    '*/*',
    'application/*',
    'application/ld+json; profile="http://www.w3.org/ns/json-ld#compacted"',
    'text/html, */*;q=0.8',
  ]) {
    const get = await withToken(accept);
    const res = await json(await get('/v2/demo_sports/121'));
    t.is(res.status, 200, String(accept));
    t.regex(res.type, /^application\/ld\+json/, String(accept));
    t.is(res.body['@id'], '/v2/demo_sports/121', String(accept));
  }
});

test("Hydra negotiation: application/json is API Platform's plain JSON (no JSON-LD members, lists as arrays)", async (t) => {
  const get = await withToken('application/json');
  const item = await get('/v2/demo_sports/121');
  t.regex(item.headers.get('content-type') ?? '', /^application\/json/);
  t.regex(item.headers.get('vary') ?? '', /accept/i);
  t.is(item.headers.get('x-written-by'), 'representation');
  t.deepEqual(await item.json(), { id: 121, name: 'Running', active: true });
  const list = await json(await get('/v2/demo_sports?limit=3&page=2'));
  t.true(Array.isArray(list.body));
  t.is(list.body.length, 3);
  t.false(Object.keys(list.body[0]).some((k) => k.startsWith('@')));
  // The client's preference decides between the two.
  const preferJson = await withToken('application/ld+json;q=0.5, application/json');
  t.regex((await preferJson('/v2/demo_sports/121')).headers.get('content-type') ?? '', /^application\/json/);
});

test("Hydra negotiation: an operation's own representation, and 406 in the Hydra format for anything else", async (t) => {
  const csv = await (await withToken('text/csv'))('/v2/demo_sports/121');
  t.is(csv.status, 200);
  t.regex(csv.headers.get('content-type') ?? '', /^text\/csv/);
  t.is(await csv.text(), 'id,name\n121,Running\n');
  // The list does not declare CSV: 406, naming what it serves.
  const refused = await json(await (await withToken('text/csv'))('/v2/demo_sports'));
  t.is(refused.status, 406);
  t.regex(refused.type, /^application\/ld\+json/);
  t.like(refused.body, { '@type': 'hydra:Error' });
  t.regex(refused.body['hydra:description'], /"application\/ld\+json", "application\/json"/);
  // Negotiation comes before credentials, as in API Platform.
  const anonymous = await api.fetch('/v2/demo_sports/121', { headers: { accept: 'image/png' } });
  t.is(anonymous.status, 406);
  t.is((await (await withToken('application/json;q=0, text/html'))('/v2/demo_sports/121')).status, 406);
});

test('formats without alternates do not negotiate: JSON:API answers whatever the Accept', async (t) => {
  const res = await api.fetch('/jsonapi/sports/121', { headers: { accept: 'text/html' } });
  t.is(res.status, 200);
  t.regex(res.headers.get('content-type') ?? '', /^application\/vnd\.api\+json/);
  t.notRegex(res.headers.get('vary') ?? '', /accept/i);
});

test('negotiate: quality, specificity and order (RFC 9110), parameters other than q ignored', (t) => {
  const offered = ['application/ld+json', 'application/json', 'application/gpx+xml'];
  t.is(negotiate(undefined, offered), 'application/ld+json');
  t.is(negotiate('application/gpx+xml', offered), 'application/gpx+xml');
  t.is(negotiate('application/json, application/ld+json', offered), 'application/json');
  t.is(negotiate('*/*;q=0.1, application/gpx+xml;q=0.2', offered), 'application/gpx+xml');
  t.is(negotiate('application/*;q=0.5, application/json;q=0', offered), 'application/ld+json');
  t.is(negotiate('application/json;q=0, application/ld+json;q=0, application/gpx+xml;q=0', offered), undefined);
  t.is(negotiate('APPLICATION/JSON', offered), 'application/json');
  t.is(negotiate('text/html', offered), undefined);
  t.is(negotiate('garbage', offered), 'application/ld+json');
});
