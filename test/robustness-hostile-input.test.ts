import test from 'ava';
import fc from 'fast-check';
import { issueApiKey } from '../shared/accounts/api-keys.ts';
import { startTestApi } from './helpers/app.ts';
import { expectedFormat, formatProblem } from './helpers/error-formats.ts';
import { type Case, hostileCases, randomInput } from './helpers/hostile-input.ts';
import { type OpenApi, type Operation, operationsOf } from './helpers/openapi-operations.ts';
import { placeBody } from './helpers/places.ts';
import { testClientId } from './helpers/tokens.ts';

// Every route the OpenAPI document lists gets hostile input from a staff caller: NUL, an
// unpaired surrogate and a 100,000-character string in each path parameter, query value and
// body string (member names too); 1e309, -0 and 2^63 in each body number; 100,000 items in each
// body array; whole bodies nested 10,000 deep; then random input. Whatever a client sends, the
// answer is never a 5xx, every error is in the called service's own format, and the server
// still serves afterwards. The seed is random per run (SEED=n replays one).

const seed = process.env.SEED ? Number(process.env.SEED) : Math.floor(Math.random() * 2 ** 31);
const ctx = await startTestApi(null, { env: { RATE_LIMIT_ENABLED: 'false' } });
test.after.always(ctx.close);

test('no route answers 5xx or leaves its error format, whatever the input', async (t) => {
  t.log(`seed ${seed} (replay: SEED=${seed} npx ava test/robustness-hostile-input.test.ts)`);
  const document = (await (await ctx.fetch('/openapi.json')).json()) as OpenApi;
  const operations: Operation[] = operationsOf(document);
  t.true(operations.length >= 20, `routes documented: ${operations.length}`);

  const { token } = await ctx.account(['staff', 'partner']);
  // The tracking routes also need an API key of the token's own client: with one, hostile input
  // reaches their handlers (a body is read only once the credentials pass).
  const { api_key: apiKey } = await issueApiKey(ctx.database.db, await testClientId(ctx.database.db), 'robustness');
  const auth = { authorization: `Bearer ${token}`, 'x-api-key': apiKey };
  const created = await ctx.fetch('/api/v1/places', {
    method: 'POST',
    headers: { ...auth, 'content-type': 'application/json' },
    body: JSON.stringify(placeBody()),
  });
  const placeId = ((await created.json()) as { properties: { uuid: string } }).properties.uuid;
  const client = await ctx.fetch('/api/v1/clients', {
    method: 'POST',
    headers: { ...auth, 'content-type': 'application/json' },
    body: JSON.stringify({ client_name: 'robustness', redirect_uris: ['https://example.test/cb'] }),
  });
  const { client_id: clientId = 'none', client_secret: clientSecret = '' } = (await client.json()) as {
    client_id?: string;
    client_secret?: string;
  };
  /** A client's own routes authenticate it with HTTP Basic. */
  const clientAuth = { authorization: `Basic ${Buffer.from(`${clientId}:${clientSecret}`).toString('base64')}` };
  /** Valid values for the path parameters not under test, so hostile ones reach the handlers. */
  const valid: Record<string, string> = {
    place_id: placeId,
    sport_id: '357',
    activity_id: '357',
    slug: 'floodlight',
    client_id: clientId,
  };
  const fillPath = (op: Operation, name?: string, value?: string) =>
    op.path.replace(/\{([^}]+)\}/g, (_, param: string) => (param === name ? (value as string) : (valid[param] ?? '1')));

  const failures: string[] = [];
  const transport: string[] = [];
  let sent = 0;
  async function send(op: Operation, c: Case): Promise<void> {
    const init: RequestInit = {
      method: op.method,
      headers: op.path.includes('{client_id}') ? { ...clientAuth } : { ...auth },
    };
    if (c.body !== undefined) {
      if (op.bodyType === 'multipart/form-data') {
        const form = new FormData();
        form.set('file', c.body);
        init.body = form;
      } else {
        init.body = c.body;
        (init.headers as Record<string, string>)['content-type'] = op.bodyType ?? 'application/json';
      }
    }
    const res = await ctx.fetch(c.query ? `${c.path}?${c.query}` : c.path, init);
    const answer = { status: res.status, contentType: res.headers.get('content-type') ?? '', text: await res.text() };
    sent++;
    const where = `${op.method} ${op.path} [${c.label}]`;
    if (answer.status >= 500) {
      failures.push(`${where} → ${answer.status} ${answer.text.slice(0, 200)}`);
      return;
    }
    if (c.refusedAt !== undefined) {
      if (answer.status !== 400) failures.push(`${where} → ${answer.status}, expected 400 naming ${c.refusedAt}`);
      else if (expectedFormat(c.path) === 'problem' && !answer.text.includes(JSON.stringify(c.refusedAt)))
        failures.push(`${where} → 400 not naming ${c.refusedAt}: ${answer.text.slice(0, 200)}`);
    }
    if (answer.status < 400) return;
    // Node's HTTP parser refuses a request line over 16 KB (431) before any middleware runs: with
    // no body unless the server answers parser errors with api/http/client-error.ts (then checked below).
    if (answer.status === 431 && answer.text === '') {
      transport.push(where);
      return;
    }
    const problem = formatProblem(op, c.path, answer);
    if (problem) failures.push(`${where} → ${answer.status} not in the ${expectedFormat(c.path)} format: ${problem}`);
  }

  for (const op of operations) for (const c of hostileCases(document, op, fillPath)) await send(op, c);
  const hostileSent = sent;

  // Then random paths, queries and bodies.
  const { pathValue, queryString, body } = randomInput(placeId);
  for (const op of operations) {
    await fc
      .assert(
        fc.asyncProperty(pathValue, queryString, body, async (value, qs, payload) => {
          const path = op.path.replace(/\{[^}]+\}/g, value);
          const before = failures.length;
          await send(op, {
            label: `random ${JSON.stringify(payload).slice(0, 100)}`,
            path,
            query: qs,
            ...(op.method !== 'GET' && op.method !== 'DELETE' ? { body: JSON.stringify(payload) } : {}),
          });
          return failures.length === before;
        }),
        // No shrinking: the first failing input is recorded as sent, and the run stays short.
        { numRuns: 30, seed, endOnFailure: true },
      )
      .catch(() => {});
  }
  t.log(`${operations.length} operations, ${hostileSent} hostile requests then ${sent - hostileSent} random ones`);
  if (transport.length > 0)
    t.log(
      `${transport.length} requests over the 16 KB request-line limit answered 431 by Node's HTTP parser (no body)`,
    );
  t.deepEqual(failures, [], `seed ${seed}`);

  // Still healthy: liveness, readiness, a write and a search that finds it.
  t.is((await ctx.fetch('/health')).status, 200);
  t.is((await ctx.fetch('/ready')).status, 200);
  const place = placeBody({ geometry: { type: 'Point', coordinates: [2.3522, 48.8566] } });
  const write = await ctx.fetch('/api/v1/places', {
    method: 'POST',
    headers: { ...auth, 'content-type': 'application/json' },
    body: JSON.stringify(place),
  });
  t.is(write.status, 201);
  const search = await ctx.fetch('/api/v1/places?origin=2.3522,48.8566&radius=1');
  t.is(search.status, 200);
  const found = (await search.json()) as { data: { features: { properties: { name: string } }[] } };
  t.true(found.data.features.some((f) => f.properties.name === place.name));
});
