import { createServer } from 'node:http';
import test from 'ava';
import { z } from 'zod';
import { answerClientError, clientErrorResponse } from '../api/http/client-error.ts';
import { errorFormatsByPrefix } from '../api/http/error-format.ts';
import {
  formProblems,
  jsonProblems,
  MAX_JSON_DEPTH,
  pathProblems,
  queryProblems,
  textProblem,
} from '../api/http/input-guard.ts';
import { addOperation } from '../api/http/operation.ts';
import { ApiRouter } from '../api/http/route.ts';
import type { ServiceModule } from '../api/service-module.ts';
import { SERVICES } from '../api/services.ts';
import { startTestApi } from './helpers/app.ts';
import { placeBody } from './helpers/places.ts';

/** Echoes its JSON body (read by its declared input), under a prefix of a JSON:API or Hydra service. */
function echo(name: 'catalogue' | 'tracking', prefix: string): ServiceModule {
  const errorFormat = name === 'catalogue' ? 'jsonapi' : 'hydra';
  return {
    name,
    errorFormat,
    prefixes: [prefix],
    routers: (app) => {
      const router = new ApiRouter({
        prefix,
        errorFormat,
        registry: app.registry,
        bodyLimitBytes: app.config.bodyLimitBytes,
        tag: 'echo',
      });
      addOperation(router, app, {
        method: 'post',
        path: '/echo',
        access: 'public',
        success: { 200: { description: 'The body' } },
        spec: { summary: 'Echo', body: z.unknown(), handler: ({ body }) => ({ received: body ?? null }) },
      });
      return [router.router];
    },
  };
}

const api = await startTestApi(null, {
  services: [...SERVICES, echo('catalogue', '/sports'), echo('tracking', '/v2')],
  env: { RATE_LIMIT_ENABLED: 'false' },
});
test.after.always(api.close);

const nested = (depth: number) => {
  let value: unknown = 1;
  for (let i = 0; i < depth; i++) value = [value];
  return value;
};

test('textProblem: U+0000 and unpaired surrogates; every well-formed text passes', (t) => {
  t.regex(textProblem('Parc\u0000x') ?? '', /U\+0000/);
  t.regex(textProblem('\ud800') ?? '', /surrogate/);
  t.regex(textProblem('a\udc00b') ?? '', /surrogate/);
  for (const ok of ['', 'Parc de la Citadelle', 'Čáp 🏃‍♀️ 跑步', '\ufffd', '\u0001\u001f', 'x'.repeat(100_000)])
    t.is(textProblem(ok), undefined, JSON.stringify(ok).slice(0, 40));
});

test('jsonProblems names each field: nested values, member names, numbers beyond a double', (t) => {
  const body = {
    name: 'ok',
    notes: 'a\u0000b',
    activities: [{ tags: ['outdoor', '\ud800'] }],
    'bad\u0000key': 1,
    size: Number.POSITIVE_INFINITY,
  };
  t.deepEqual(jsonProblems(body), [
    { path: 'body.notes', message: 'must not contain the NUL character (U+0000)' },
    { path: 'body.activities[0].tags[1]', message: 'must be well-formed Unicode (it has an unpaired surrogate)' },
    { path: 'body.bad\\u0000key', message: 'the member name must not contain the NUL character (U+0000)' },
    { path: 'body.size', message: 'is a number too large to represent (beyond ±1.8e308)' },
  ]);
  t.deepEqual(jsonProblems('\u0000'), [{ path: 'body', message: 'must not contain the NUL character (U+0000)' }]);
  t.deepEqual(jsonProblems({ a: [1, -0, 2 ** 63, 'x'.repeat(100_000)], b: null, c: true }), []);
});

test('jsonProblems: nesting beyond the limit is one problem, found without recursion; long lists stop at 10', (t) => {
  t.deepEqual(jsonProblems(nested(MAX_JSON_DEPTH)), []);
  const tooDeep = jsonProblems(nested(MAX_JSON_DEPTH + 1));
  t.is(tooDeep.length, 1);
  t.is(tooDeep[0]?.message, `is nested deeper than ${MAX_JSON_DEPTH} levels`);
  // Far deeper than any stack: JSON.parse builds it iteratively, and so is it checked.
  const deep = JSON.parse(`${'['.repeat(200_000)}${']'.repeat(200_000)}`);
  t.is(jsonProblems(deep).length, 1);
  t.true((jsonProblems(deep)[0]?.path.length ?? 0) <= 201, 'the path is cut short');
  const many = jsonProblems(new Array(100_000).fill('\u0000'));
  t.is(many.length, 10);
  t.is(many[9]?.path, 'body[9]');
});

test('queryProblems, pathProblems and formProblems name the parameter', (t) => {
  t.deepEqual(queryProblems({ name: 'a\u0000', tags: ['ok', '\ud800'], fine: 'x' }), [
    { path: 'query.name', message: 'must not contain the NUL character (U+0000)' },
    { path: 'query.tags', message: 'must be well-formed Unicode (it has an unpaired surrogate)' },
  ]);
  t.deepEqual(queryProblems({ 'n\u0000': 'x' }), [
    { path: 'query.n\\u0000', message: 'the parameter name must not contain the NUL character (U+0000)' },
  ]);
  t.deepEqual(pathProblems('/api/v1/places/%00/activities'), [
    { path: 'path', message: 'must not contain the NUL character (U+0000)' },
  ]);
  t.deepEqual(pathProblems('/api/v1/places/%ED%A0%80'), [
    { path: 'path', message: 'is not valid percent-encoded UTF-8' },
  ]);
  t.deepEqual(pathProblems('/api/v1/places/%E2%82'), [{ path: 'path', message: 'is not valid percent-encoded UTF-8' }]);
  t.deepEqual(pathProblems('/api/v1/places/%F0%9F%8F%83%20ok'), []);
  t.deepEqual(formProblems('email=a%00b&password=x'), [
    { path: 'body.email', message: 'must not contain the NUL character (U+0000)' },
  ]);
  t.deepEqual(formProblems('email=a%40b.c&password=x%20y'), []);
});

test('the issue cases answer 400 in problem+json, naming the field', async (t) => {
  const { token } = await api.account(['staff']);
  const post = (body: unknown) =>
    api.fetch('/api/v1/places', {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
  const cases: [Promise<Response>, string][] = [
    [api.fetch('/api/v1/places/%00/activities'), 'path'],
    [post(placeBody({ name: 'Parc\u0000x' })), 'body.name'],
    [post(placeBody({ notes: 'a\u0000b' })), 'body.notes'],
    [
      post(placeBody({ activities: [{ sport_id: 357, tags: ['floodlight', '\ud800'] }] })),
      'body.activities[0].tags[1]',
    ],
    [api.fetch('/api/v1/places?origin=3.06,50.63&radius=10&tags=%00'), 'query.tags'],
  ];
  for (const [request, path] of cases) {
    const res = await request;
    t.is(res.status, 400, path);
    t.regex(res.headers.get('content-type') ?? '', /^application\/problem\+json/);
    const body = (await res.json()) as { status: number; errors: { path: string }[] };
    t.is(body.status, 400);
    t.is(body.errors[0]?.path, path);
  }
  // The same place without the NUL is created: nothing else is refused.
  t.is((await post(placeBody({ name: 'Parc x', notes: 'a b' }))).status, 201);
});

test('hostile input is refused in JSON:API and Hydra formats too, naming the field', async (t) => {
  const send = (path: string) =>
    api.fetch(path, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'a\u0000' }),
    });
  // A request refused for its query is refused before its body is read (each route reads its own).
  const jsonapiErrors = async (path: string) => {
    const res = await send(path);
    t.is(res.status, 400);
    t.regex(res.headers.get('content-type') ?? '', /^application\/vnd\.api\+json/);
    const errors = ((await res.json()) as { errors: { status: string; source?: unknown }[] }).errors;
    return errors.map((e) => [e.status, e.source]);
  };
  t.deepEqual(await jsonapiErrors('/sports/echo?q=%00'), [['400', { parameter: 'q' }]]);
  t.deepEqual(await jsonapiErrors('/sports/echo'), [['400', { pointer: '/name' }]]);
  const hydra = await send('/v2/echo');
  t.is(hydra.status, 400);
  t.regex(hydra.headers.get('content-type') ?? '', /^application\/ld\+json/);
  const description = ((await hydra.json()) as { '@type': string; 'hydra:description': string })['hydra:description'];
  t.regex(description, /body\.name: must not contain the NUL character/);
  const path = await api.fetch('/v2/echo/%00');
  t.is(path.status, 400);
  t.like(await path.json(), { '@type': 'hydra:Error' });
  // Well-formed text, member names included, goes through.
  const ok = await api.fetch('/v2/echo', {
    method: 'POST',
    headers: { 'content-type': 'application/ld+json' },
    body: JSON.stringify({ 'näme 🏃': 'Čáp', n: -0 }),
  });
  t.is(ok.status, 200);
});

test('bodies nested 10,000 deep, numbers beyond a double and __proto__ members answer 400', async (t) => {
  const send = (body: string) =>
    api.fetch('/v2/echo', { method: 'POST', headers: { 'content-type': 'application/json' }, body });
  for (const body of [
    `${'['.repeat(10_000)}${']'.repeat(10_000)}`,
    `${'{"a":'.repeat(10_000)}1${'}'.repeat(10_000)}`,
    '{"distance":1e309}',
    '{"__proto__":{"staff":true}}',
  ]) {
    const res = await send(body);
    t.is(res.status, 400, body.slice(0, 20));
    t.like(await res.json(), { '@type': 'hydra:Error' });
  }
  const list = await send(JSON.stringify({ items: new Array(100_000).fill(0), big: 2 ** 63 }));
  t.is(list.status, 200);
});

test('form bodies are checked, then still read by their route (login pages, OpenID token endpoint)', async (t) => {
  const page = await api.fetch('/register');
  const cookie = (page.headers.get('set-cookie') ?? '').split(';')[0] ?? '';
  const csrf = /name="csrf" value="([^"]+)"/.exec(await page.text())?.[1] ?? '';
  const register = (fields: Record<string, string>) =>
    api.fetch('/register', {
      method: 'POST',
      headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ csrf, ...fields }).toString(),
    });
  const fields = {
    email: `guard-${Date.now()}@example.test`,
    password: 'correct horse battery staple',
    first_name: 'Ann',
    last_name: 'Lee',
  };
  const refused = await register({ ...fields, first_name: 'A\u0000nn' });
  t.is(refused.status, 400);
  t.like(((await refused.json()) as { errors: unknown[] }).errors[0], { path: 'body.first_name' });
  const created = await register(fields);
  t.is(created.status, 200, 'the form read after the check is the one sent');
  await created.arrayBuffer();
  const row = await api.database.db
    .selectFrom('accounts')
    .select('first_name')
    .where('email', '=', fields.email)
    .executeTakeFirst();
  t.is(row?.first_name, 'Ann');
  const token = await api.fetch('/token', {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: 'grant_type=client_credentials&client_id=a%00b&client_secret=x',
  });
  t.is(token.status, 400);
  t.like(((await token.json()) as { errors: unknown[] }).errors[0], { path: 'body.client_id' });
});

test('clientErrorResponse: a request line over the limit is answered in the format of its path', async (t) => {
  const raw = clientErrorResponse(
    Object.assign(new Error('Header overflow'), {
      code: 'HPE_HEADER_OVERFLOW',
      rawPacket: Buffer.from(`GET /v2/things?q=${'x'.repeat(100)} HTTP/1.1\r\n`),
    }),
    errorFormatsByPrefix([{ prefix: '/v2', format: 'hydra' }]),
  );
  t.regex(raw, /^HTTP\/1\.1 431 Request Header Fields Too Large\r\n/);
  t.regex(raw, /Content-Type: application\/ld\+json/);
  t.regex(
    clientErrorResponse(Object.assign(new Error('bad'), { code: 'HPE_INVALID_METHOD' })),
    /^HTTP\/1\.1 400 .*problem\+json/s,
  );

  // Through a real server: Node's parser refuses a 100,000-character URL before any middleware.
  const server = createServer((_req, res) => res.end('never')).on('clientError', answerClientError);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => server.close());
  const { port } = server.address() as { port: number };
  const res = await fetch(`http://127.0.0.1:${port}/api/v1/places?q=${'x'.repeat(100_000)}`);
  t.is(res.status, 431);
  t.regex(res.headers.get('content-type') ?? '', /^application\/problem\+json/);
  t.like(await res.json(), { status: 431, title: 'Request Header Fields Too Large' });
});
