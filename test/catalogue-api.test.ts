import { readFileSync } from 'node:fs';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import test from 'ava';
import { startTestApi } from './helpers/app.ts';

// The sports catalogue over HTTP (JSON:API 1.1, spec part A): every document, errors included,
// is checked against the JSON:API 1.1 response schema.

const schema = JSON.parse(readFileSync(new URL('./fixtures/jsonapi/schema-1.1.json', import.meta.url), 'utf8'));
const ajv = new Ajv2020({ strict: false, allErrors: true });
addFormats.default(ajv);
const validDocument = ajv.compile(schema);

const api = await startTestApi(null);
test.after.always(api.close);

// biome-ignore lint/suspicious/noExplicitAny: documents are checked member by member
type Doc = any;
interface Answer {
  status: number;
  headers: Headers;
  body: Doc;
}

/** GET a catalogue path; every answer with a body must be a valid JSON:API 1.1 document. */
async function get(t: { fail: (m: string) => void }, path: string, headers: Record<string, string> = {}) {
  const res = await api.fetch(path, { headers });
  const text = await res.text();
  const answer: Answer = { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : undefined };
  if (text) {
    if (!/^application\/vnd\.api\+json/.test(res.headers.get('content-type') ?? ''))
      t.fail(`${path}: content-type ${res.headers.get('content-type')}`);
    if (!validDocument(answer.body)) t.fail(`${path}: not JSON:API 1.1: ${ajv.errorsText(validDocument.errors)}`);
  }
  return answer;
}

const ids = (data: { id: string }[]) => data.map((r) => r.id);

test('the schema check itself rejects a broken document', (t) => {
  t.false(validDocument({ data: { type: 'sport', id: 1 } }));
  t.false(validDocument({ data: [], errors: [] }));
  t.true(validDocument({ jsonapi: { version: '1.1' }, data: [] }));
});

test('GET /sports/{id}: a parent sport with its children, parent null, jsonapi member and links', async (t) => {
  const res = await get(t, '/sports/121');
  t.is(res.status, 200);
  t.deepEqual(res.body.jsonapi, { version: '1.1' });
  t.is(res.body.links.self, `${api.config.PUBLIC_URL}/sports/121`);
  const d = res.body.data;
  t.like(d, {
    type: 'sport',
    id: '121',
    attributes: { name: 'Running', slug: 'running', parent_id: null, locale: 'en' },
  });
  t.is(d.attributes.description, null);
  t.deepEqual(d.relationships.parent, { data: null });
  t.true(d.relationships.children.data.length > 5);
  t.deepEqual(d.relationships.children.data[0], { type: 'sport', id: '122' });
  t.is(d.links.self, `${api.config.PUBLIC_URL}/sports/121`);
});

test('GET /sports/{slug}: a child has its parent and a null children relationship', async (t) => {
  const res = await get(t, '/sports/trail');
  t.is(res.status, 200);
  t.like(res.body.data, { id: '126', attributes: { slug: 'trail', parent_id: 121 } });
  t.deepEqual(res.body.data.relationships.parent, { data: { type: 'sport', id: '121' } });
  t.deepEqual(res.body.data.relationships.children, { data: null });
  const lone = await get(t, '/sports/basketball');
  t.deepEqual(lone.body.data.relationships, { children: { data: null }, parent: { data: null } });
});

test('legacy vendor ids and catalogue tags come from the catalogue samples', async (t) => {
  const swimming = await get(t, '/sports/274');
  t.like(swimming.body.data.attributes, { slug: 'swimming', vendor_id: 224 });
  t.true(swimming.body.data.attributes.tags.includes('breaststroke'));
  const byVendor = await get(t, '/sports?vendor_id=66');
  t.deepEqual(ids(byVendor.body.data), ['174']);
  const byTag = await get(t, '/sports?tag=slalom');
  t.deepEqual(ids(byTag.body.data), ['174']);
  const none = await get(t, '/sports?vendor_id=999999');
  t.is(none.status, 200);
  t.deepEqual(none.body.data, []);
  t.is(none.body.meta.total, 0);
});

test('GET /sports?q=: case- and accent-insensitive, in the served language, prefix matches first', async (t) => {
  const en = await get(t, '/sports?q=SKI');
  t.is(en.status, 200);
  t.true(en.body.data.length >= 1);
  t.is(en.body.data[0].attributes.slug, 'skiing');
  for (const s of en.body.data) t.regex(s.attributes.name.toLowerCase(), /ski/);
  // "Course à pied" (Running in French): found without its accent, only when French is served.
  const fr = await get(t, '/sports?q=course%20a%20PIED', { 'accept-language': 'fr-CA,fr;q=0.9,en;q=0.5' });
  t.true(ids(fr.body.data).includes('121'));
  t.is(fr.body.data.find((s: Doc) => s.id === '121').attributes.locale, 'fr');
  const enOnly = await get(t, '/sports?q=course%20a%20pied');
  t.false(ids(enOnly.body.data).includes('121'));
  // LIKE wildcards are literal text.
  t.deepEqual((await get(t, '/sports?q=%25')).body.data, []);
});

test('Accept-Language: French names, q-values ordering, English fallback per item', async (t) => {
  const fr = await get(t, '/sports/121', { 'accept-language': 'fr-CA' });
  t.like(fr.body.data.attributes, { name: 'Course à pied', locale: 'fr' });
  const de = await get(t, '/sports/10', { 'accept-language': 'fr;q=0.5, de' });
  t.like(de.body.data.attributes, { name: 'Basketball', locale: 'de' });
  // 121 has no German name: the next listed language it has is served.
  const deRunning = await get(t, '/sports/121', { 'accept-language': 'de, fr;q=0.4' });
  t.like(deRunning.body.data.attributes, { locale: 'fr' });
  const unknown = await get(t, '/sports/121', { 'accept-language': 'ja, *;q=0.1' });
  t.like(unknown.body.data.attributes, { name: 'Running', locale: 'en' });
  const group = await get(t, '/groups/athletics', { 'accept-language': 'fr' });
  t.like(group.body.data.attributes, { name: 'Athlétisme', locale: 'fr' });
});

test('GET /sports: parents_only, paging with page[number]/page[size], meta.total', async (t) => {
  const all = await get(t, '/sports');
  t.is(all.status, 200);
  t.true(all.body.data.length > 90);
  t.is(all.body.meta.total, all.body.data.length);
  t.is(all.body.links.next, null);
  const parents = await get(t, '/sports?parents_only=true');
  t.true(parents.body.data.every((s: Doc) => s.attributes.parent_id === null));
  t.true(parents.body.data.length < all.body.data.length);
  const page = await get(t, '/sports?parents_only=true&page[size]=10&page[number]=2');
  t.is(page.body.data.length, 10);
  t.deepEqual(ids(page.body.data), ids(parents.body.data).slice(10, 20));
  t.is(page.body.meta.total, parents.body.data.length);
  t.true(page.body.links.next.includes('page%5Bnumber%5D=3'));
  t.true(page.body.links.next.includes('parents_only=true'));
  const beyond = await get(t, '/sports?page[size]=10&page[number]=50');
  t.deepEqual(beyond.body.data, []);
  t.is(beyond.body.meta.total, all.body.meta.total);
});

test('include=children,parent: compound documents, each resource once, never the primary data', async (t) => {
  const one = await get(t, '/sports/121?include=children');
  const included = one.body.included as Doc[];
  t.deepEqual(
    included.map((r) => r.id),
    one.body.data.relationships.children.data.map((r: Doc) => r.id),
  );
  for (const c of included) t.deepEqual(c.relationships.parent, { data: { type: 'sport', id: '121' } });
  const child = await get(t, '/sports/126?include=parent,children');
  t.deepEqual(ids(child.body.included), ['121']);
  const list = await get(t, '/sports?q=trail&include=parent');
  t.true(ids(list.body.data).includes('126'));
  t.deepEqual(ids(list.body.included), ['121']);
  const noInclude = await get(t, '/sports/121');
  t.false('included' in noInclude.body);
});

test('sparse fieldsets trim attributes and relationships per type', async (t) => {
  const res = await get(t, '/sports/121?include=children&fields[sport]=name,parent');
  t.deepEqual(Object.keys(res.body.data.attributes), ['name']);
  t.deepEqual(Object.keys(res.body.data.relationships), ['parent']);
  t.deepEqual(Object.keys(res.body.included[0].attributes), ['name']);
  const groups = await get(t, '/groups?include=sports&fields[group]=slug&fields[sport]=slug');
  t.deepEqual(Object.keys(groups.body.data[0].attributes), ['slug']);
  t.false('relationships' in groups.body.data[0]);
  t.deepEqual(Object.keys(groups.body.included[0].attributes), ['slug']);
});

test('GET /groups and /groups/{slug_or_id}: sports relationship, include=sports', async (t) => {
  const list = await get(t, '/groups');
  t.is(list.status, 200);
  t.deepEqual(ids(list.body.data), ['1', '2', '11', '22', '1001', '1002']);
  t.is(list.body.meta.total, 6);
  const skiing = list.body.data.find((g: Doc) => g.attributes.slug === 'skiing');
  t.like(skiing, { type: 'group', id: '22', attributes: { name: 'Skiing', locale: 'en' } });
  t.true(skiing.relationships.sports.data.some((s: Doc) => s.id === '174' && s.type === 'sport'));
  const bySlug = await get(t, '/groups/water-aerobics?include=sports');
  const byId = await get(t, '/groups/1?include=sports');
  t.deepEqual(bySlug.body.data, byId.body.data);
  t.deepEqual(ids(bySlug.body.included), ['260', '274']);
  t.is(bySlug.body.included[0].type, 'sport');
});

test('errors: search errors are 404 naming the parameter; other bad parameters name theirs; unknown items 404', async (t) => {
  for (const [query, parameter] of [
    ['q=', 'q'],
    [`q=${'x'.repeat(101)}`, 'q'],
    ['vendor_id=abc', 'vendor_id'],
    ['parents_only=yes', 'parents_only'],
    ['tag=Not%20A%20Tag', 'tag'],
    ['include=universe', 'include'],
    ['page[size]=1000', 'page[size]'],
  ]) {
    const res = await get(t, `/sports?${query}`);
    t.is(res.status, 404, query);
    t.is(res.body.errors[0].status, '404');
    t.deepEqual(res.body.errors[0].source, { parameter }, query);
  }
  const badInclude = await get(t, '/sports/121?include=group');
  t.is(badInclude.status, 400);
  t.deepEqual(badInclude.body.errors[0].source, { parameter: 'include' });
  const groups = await get(t, '/groups?page[number]=0');
  t.is(groups.status, 400);
  t.deepEqual(groups.body.errors[0].source, { parameter: 'page[number]' });
  const missing = await get(t, '/sports/no-such-sport');
  t.is(missing.status, 404);
  t.like(missing.body.errors[0], { status: '404', detail: 'Unknown sport no-such-sport' });
  t.is((await get(t, '/groups/999')).status, 404);
  const route = await get(t, '/sports/121/nothing/here');
  t.is(route.status, 404);
  t.truthy(route.body.errors);
});

test('caching: ETag and Cache-Control, 304 on If-None-Match, a new tag per language', async (t) => {
  const first = await api.fetch('/sports/121');
  const etag = first.headers.get('etag');
  t.truthy(etag);
  t.is(first.headers.get('cache-control'), 'public, max-age=300');
  t.regex(first.headers.get('vary') ?? '', /Accept-Language/i);
  const again = await api.fetch('/sports/121', { headers: { 'if-none-match': etag ?? '' } });
  t.is(again.status, 304);
  t.is(await again.text(), '');
  const french = await api.fetch('/sports/121', { headers: { 'if-none-match': etag ?? '', 'accept-language': 'fr' } });
  t.is(french.status, 200);
  t.not(french.headers.get('etag'), etag);
  const list = await api.fetch('/groups');
  const listAgain = await api.fetch('/groups', { headers: { 'if-none-match': `"x", ${list.headers.get('etag')}` } });
  t.is(listAgain.status, 304);
  const error = await api.fetch('/sports/999999');
  t.is(error.headers.get('etag'), null);
});

test("the places service's own /api/v1/sports is untouched", async (t) => {
  const res = await api.fetch('/api/v1/sports/121');
  t.is(res.status, 200);
  t.regex(res.headers.get('content-type') ?? '', /^application\/json/);
  t.like(await res.json(), { id: 121, name: 'Running' });
});

test('/openapi.json documents the catalogue with its JSON:API errors', async (t) => {
  const doc = (await (await api.fetch('/openapi.json')).json()) as Doc;
  const list = doc.paths['/sports']?.get;
  t.truthy(list?.responses['200']?.content['application/vnd.api+json']);
  t.truthy(list?.responses['404']?.content['application/vnd.api+json']);
  t.truthy(doc.paths['/sports/{id_or_slug}']?.get);
  t.truthy(doc.paths['/groups/{slug_or_id}']?.get);
  const { Validator } = await import('@seriousme/openapi-schema-validator');
  const result = await new Validator().validate(doc);
  t.true(result.valid, JSON.stringify(result.errors));
});

test('the recommendations routes live on the catalogue router: JSON:API errors and HTTP caching', async (t) => {
  const res = await api.fetch('/sports/121/recommendations');
  t.is(res.status, 200);
  t.truthy(res.headers.get('etag'));
  const bad = await get(t, '/sports/121/recommendations?count=0');
  t.true(bad.status >= 400);
  t.truthy(bad.body.errors);
});
