import test from 'ava';
import { z } from 'zod';
import { unprocessable } from '../api/http/errors.ts';
import { addOperation } from '../api/http/operation.ts';
import { ApiRouter } from '../api/http/route.ts';
import type { ServiceModule } from '../api/service-module.ts';
import { startTestApi } from './helpers/app.ts';

// A tiny service per error format exercises the platform the same way real services do.
function probeService(
  name: 'places' | 'catalogue' | 'tracking',
  prefix: string,
  format: 'problem' | 'jsonapi' | 'hydra',
): ServiceModule {
  return {
    name,
    errorFormat: format,
    prefixes: prefix === '/sports' ? ['/sports', '/groups'] : [prefix],
    routers: (ctx) => {
      const api = new ApiRouter({
        prefix,
        errorFormat: format,
        registry: ctx.registry,
        bodyLimitBytes: ctx.config.bodyLimitBytes,
        tag: name,
      });
      addOperation(api, ctx, {
        method: 'get',
        path: '/probe/:id',
        params: z.object({ id: z.coerce.number().int().positive() }),
        access: 'public',
        success: { 200: { description: 'ok', schema: z.object({ id: z.number() }) } },
        spec: {
          summary: 'Probe',
          query: z.object({ radius: z.coerce.number().max(100).optional() }),
          handler: ({ params }) => ({ id: params.id }),
        },
      });
      addOperation(api, ctx, {
        method: 'post',
        path: '/probe',
        access: 'public',
        success: { 201: { description: 'created' } },
        spec: {
          summary: 'Probe body',
          body: z.object({ name: z.string().min(1) }),
          handler: ({ ctx: c, body }) => {
            if (body.name === 'taken') throw unprocessable([{ path: 'body.name', message: 'is taken' }]);
            c.status = 201;
            return body;
          },
        },
      });
      addOperation(api, ctx, {
        method: 'get',
        path: '/boom',
        access: 'public',
        success: { 200: { description: 'never' } },
        spec: {
          summary: 'Fails',
          handler: () => {
            throw new Error('secret internal detail');
          },
        },
      });
      return [api.router];
    },
  };
}

const services = [
  probeService('places', '/api/v1', 'problem'),
  probeService('catalogue', '/sports', 'jsonapi'),
  probeService('tracking', '/v2', 'hydra'),
];
const ctx = await startTestApi(null, { services, env: { BODY_LIMIT: '2kb', CORS_ORIGINS: 'https://app.example' } });
test.after.always(ctx.close);

test('/health answers ok', async (t) => {
  const res = await ctx.fetch('/health');
  t.is(res.status, 200);
  t.deepEqual(await res.json(), { status: 'ok' });
});

test('/ready reports Postgres and Redis up', async (t) => {
  const res = await ctx.fetch('/ready');
  t.is(res.status, 200);
  t.deepEqual(await res.json(), { status: 'ready', checks: { postgres: 'up', redis: 'up' } });
});

test('a valid request passes validation and is answered', async (t) => {
  const res = await ctx.fetch('/api/v1/probe/7');
  t.is(res.status, 200);
  t.deepEqual(await res.json(), { id: 7 });
});

test('unknown routes answer 404 in each service format', async (t) => {
  const problem = await ctx.fetch('/api/v1/nowhere');
  t.is(problem.status, 404);
  t.regex(problem.headers.get('content-type') ?? '', /^application\/problem\+json/);
  t.like(await problem.json(), { status: 404, title: 'Not Found' });

  const jsonapi = await ctx.fetch('/groups/nowhere/else');
  t.is(jsonapi.status, 404);
  t.regex(jsonapi.headers.get('content-type') ?? '', /application\/vnd\.api\+json/);
  t.like(((await jsonapi.json()) as { errors: unknown[] }).errors[0], { status: '404' });

  const hydra = await ctx.fetch('/v2/nowhere');
  t.is(hydra.status, 404);
  t.regex(hydra.headers.get('content-type') ?? '', /application\/ld\+json/);
  t.like(await hydra.json(), { '@type': 'hydra:Error' });
});

test('a method a route does not have is a 405 with Allow, in each service format', async (t) => {
  for (const [path, type] of [
    ['/api/v1/probe/7', /^application\/problem\+json/],
    ['/sports/probe/7', /application\/vnd\.api\+json/],
    ['/v2/probe/7', /application\/ld\+json/],
  ] as const) {
    const res = await ctx.fetch(path, { method: 'DELETE' });
    t.is(res.status, 405, path);
    t.is(res.headers.get('allow'), 'HEAD, GET', path);
    t.regex(res.headers.get('content-type') ?? '', type, path);
    t.regex(JSON.stringify(await res.json()), /DELETE is not allowed on/, path);
  }
});

test('validation errors are 422 naming the parameter, in each format', async (t) => {
  const problem = await ctx.fetch('/api/v1/probe/1?radius=500');
  t.is(problem.status, 422);
  const body = (await problem.json()) as { errors: { path: string }[] };
  t.is(body.errors[0]?.path, 'query.radius');

  const jsonapi = await ctx.fetch('/sports/probe/1?radius=500');
  t.is(jsonapi.status, 422);
  t.deepEqual(((await jsonapi.json()) as { errors: { source: unknown }[] }).errors[0]?.source, { parameter: 'radius' });

  const hydra = await ctx.fetch('/v2/probe', {
    method: 'POST',
    headers: { 'content-type': 'application/ld+json' },
    body: JSON.stringify({ name: '' }),
  });
  t.is(hydra.status, 422);
  const violations = ((await hydra.json()) as { violations: { propertyPath: string }[] }).violations;
  t.is(violations[0]?.propertyPath, 'name');
});

test('an invalid path parameter is a 404', async (t) => {
  const res = await ctx.fetch('/api/v1/probe/abc');
  t.is(res.status, 404);
});

test('malformed JSON is a 400; a missing body is a 422', async (t) => {
  const malformed = await ctx.fetch('/api/v1/probe', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: '{"name": ',
  });
  t.is(malformed.status, 400);
  t.like(await malformed.json(), { status: 400, detail: 'The request body is not valid JSON' });
  const missing = await ctx.fetch('/api/v1/probe', { method: 'POST', headers: { 'content-type': 'application/json' } });
  t.is(missing.status, 422);
});

test('a body that is not JSON is a 415', async (t) => {
  const res = await ctx.fetch('/api/v1/probe', {
    method: 'POST',
    headers: { 'content-type': 'text/plain' },
    body: 'name=x',
  });
  t.is(res.status, 415);
  t.like(await res.json(), { status: 415 });
});

test('a body over BODY_LIMIT is a 413', async (t) => {
  const res = await ctx.fetch('/api/v1/probe', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'x'.repeat(4096) }),
  });
  t.is(res.status, 413);
  t.like(await res.json(), { status: 413 });
});

test('handler errors are 422 with details; unexpected ones 500 without leaking', async (t) => {
  const taken = await ctx.fetch('/api/v1/probe', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'taken' }),
  });
  t.is(taken.status, 422);
  t.deepEqual(((await taken.json()) as { errors: unknown }).errors, [{ path: 'body.name', message: 'is taken' }]);
  const boom = await ctx.fetch('/api/v1/boom');
  t.is(boom.status, 500);
  const text = await boom.text();
  t.false(text.includes('secret'));
  t.false(text.includes('at '), 'no stack trace');
});

test('request ids are echoed or generated', async (t) => {
  const given = await ctx.fetch('/health', { headers: { 'x-request-id': 'abc-123' } });
  t.is(given.headers.get('x-request-id'), 'abc-123');
  const generated = await ctx.fetch('/health', { headers: { 'x-request-id': 'bad id with spaces' } });
  t.regex(generated.headers.get('x-request-id') ?? '', /^[0-9a-f-]{36}$/);
});

test('CORS allows only the configured origins; security headers are set', async (t) => {
  const preflight = await ctx.fetch('/api/v1/probe', {
    method: 'OPTIONS',
    headers: {
      origin: 'https://app.example',
      'access-control-request-method': 'POST',
      'access-control-request-headers': 'authorization',
    },
  });
  t.is(preflight.status, 204);
  t.is(preflight.headers.get('access-control-allow-origin'), 'https://app.example');
  t.regex(preflight.headers.get('access-control-allow-headers') ?? '', /Authorization/);
  const other = await ctx.fetch('/health', { headers: { origin: 'https://evil.example' } });
  t.is(other.headers.get('access-control-allow-origin'), null);
  t.is(other.headers.get('x-content-type-options'), 'nosniff');
  t.truthy(other.headers.get('content-security-policy'));
});

test('/metrics exposes request histograms by route template and queue depths', async (t) => {
  await ctx.fetch('/api/v1/probe/42');
  const text = await (await ctx.fetch('/metrics')).text();
  t.regex(text, /http_request_duration_seconds_count\{method="GET",route="\/api\/v1\/probe\/:id",status="200"\} \d+/);
  t.regex(text, /queue_depth\{queue="records"\} 0/);
  t.regex(text, /outbox_pending \d+/);
});

test('/openapi.json is a valid OpenAPI 3.1 document built from the route schemas', async (t) => {
  const { Validator } = await import('@seriousme/openapi-schema-validator');
  const document = (await (await ctx.fetch('/openapi.json')).json()) as {
    openapi: string;
    paths: Record<string, unknown>;
  };
  t.is(document.openapi, '3.1.0');
  t.truthy(document.paths['/api/v1/probe/{id}']);
  t.truthy(document.paths['/v2/probe']);
  const result = await new Validator().validate(document);
  t.true(result.valid, JSON.stringify(result.errors));
});

test('/docs is served with local assets only', async (t) => {
  const page = await ctx.fetch('/docs');
  t.is(page.status, 200);
  const html = await page.text();
  t.false(/https?:\/\//.test(html.replace(/<!doctype html>/i, '')), 'no external URL');
  for (const src of html.matchAll(/(?:src|href)="([^"]+)"/g)) {
    const asset = await ctx.fetch(src[1] ?? '');
    t.is(asset.status, 200, src[1]);
    await asset.arrayBuffer();
  }
});
