import test from 'ava';
import fc from 'fast-check';
import { startTestApi } from './helpers/app.ts';

// Every route the OpenAPI document lists gets random path values, query strings and JSON
// bodies from a staff caller: whatever a client sends, the answer is never a 5xx.
const ctx = await startTestApi(null, { env: { RATE_LIMIT_ENABLED: 'false' } });
test.after.always(ctx.close);

interface Operation {
  method: string;
  path: string;
}


const pathValue = fc.oneof(
  fc.constantFrom('121', '0', '-1', '99999999999999999999', 'null', '%00', '..', 'a'.repeat(300), crypto.randomUUID()),
  fc.string({ minLength: 1, maxLength: 12 }).map(encodeURIComponent),
);
const queryString = fc
  .dictionary(
    fc.constantFrom('sw', 'ne', 'origin', 'radius', 'limit', 'page', 'sports', 'tags', 'min_difficulty', 'days', 'all', 'q'),
    fc.oneof(fc.string({ maxLength: 20 }), fc.constantFrom('1,2', '200,95', 'NaN', '-0', '1e308', '3.06,50.63')),
  )
  .map((d) => new URLSearchParams(d).toString());
const body = fc.oneof(fc.jsonValue({ maxDepth: 3 }), fc.record({ geometry: fc.jsonValue({ maxDepth: 3 }), activities: fc.jsonValue({ maxDepth: 2 }) }));

test('no route answers 5xx to random input', async (t) => {
  const document = (await (await ctx.fetch('/openapi.json')).json()) as { paths: Record<string, Record<string, unknown>> };
  const operations: Operation[] = Object.entries(document.paths).flatMap(([path, item]) =>
    Object.keys(item).map((method) => ({ method: method.toUpperCase(), path })),
  );
  t.true(operations.length >= 20, `routes documented: ${operations.length}`);
  t.log(`${operations.length} operations`);
  const { token } = await ctx.account(['staff', 'partner']);
  const failures: string[] = [];
  for (const op of operations) {
    await fc.assert(
      fc.asyncProperty(pathValue, queryString, body, async (value, qs, payload) => {
        const path = op.path.replace(/\{[^}]+\}/g, value);
        const init: RequestInit = { method: op.method, headers: { authorization: `Bearer ${token}` } };
        if (op.method !== 'GET' && op.method !== 'DELETE') {
          init.body = JSON.stringify(payload);
          (init.headers as Record<string, string>)['content-type'] = 'application/json';
        }
        const res = await ctx.fetch(`${path}?${qs}`, init);
        await res.arrayBuffer();
        if (res.status >= 500) failures.push(`${op.method} ${path}?${qs} ${JSON.stringify(payload)} → ${res.status}`);
        return res.status < 500;
      }),
      { numRuns: 25, seed: 20261123 },
    ).catch(() => {});
  }
  t.deepEqual(failures, []);
});

test('the full /openapi.json (every service) is a valid OpenAPI 3.1 document', async (t) => {
  const { Validator } = await import('@seriousme/openapi-schema-validator');
  const document = (await (await ctx.fetch('/openapi.json')).json()) as { openapi: string };
  const result = await new Validator().validate(document);
  t.true(result.valid, JSON.stringify(result.errors));
});
