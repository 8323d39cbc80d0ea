import Router from '@koa/router';
import test from 'ava';
import { sql } from 'kysely';
import type { ErrorFormat } from '../api/http/error-format.ts';
import { type RunningApi, startApi } from '../api/server.ts';
import type { ServiceModule } from '../api/service-module.ts';
import { SERVICES } from '../api/services.ts';
import { PrivatePostgres } from '../scripts/cluster/postgres-server.ts';
import { createDb } from '../shared/db/database.ts';
import { testConfig } from './helpers/app.ts';
import { placeBody } from './helpers/places.ts';
import { createTestAccount, mintToken } from './helpers/tokens.ts';

// The API runs on a PostgreSQL this file owns, stops and starts again: while it is down, every
// service answers 503 with Retry-After in its own format; once it is back, the same process
// serves again (no restart).

/** A route of a Hydra service that reads the database (the tracking service is not built yet). */
function dbProbe(name: 'tracking', path: string, format: ErrorFormat): ServiceModule {
  return {
    name,
    errorFormat: format,
    prefixes: [path],
    routers: (app) => {
      const router = new Router();
      router.get(path, async (ctx) => {
        await sql`select 1`.execute(app.db);
        ctx.body = { ok: true };
      });
      return [router];
    },
  };
}

const postgres = await PrivatePostgres.create();
const config = testConfig({ DATABASE_URL: postgres.url, RATE_LIMIT_ENABLED: 'false' });
const api: RunningApi = await startApi(config, {
  services: [...SERVICES, dbProbe('tracking', '/v2/db-probe', 'hydra')],
});
const setup = createDb(postgres.url, 1);
const account = await createTestAccount(setup.db, ['staff']);
const token = await mintToken(setup.db, config, account);
await setup.db.destroy();

test.after.always(async () => {
  await api.close();
  await postgres.destroy();
});

const bearer = { authorization: `Bearer ${token}` };
const requests = {
  search: () => fetch(`${api.url}/api/v1/places?origin=3.06,50.63&radius=10`),
  'create a place': () =>
    fetch(`${api.url}/api/v1/places`, {
      method: 'POST',
      headers: { ...bearer, 'content-type': 'application/json' },
      body: JSON.stringify(placeBody()),
    }),
  'accounts /api/me': () => fetch(`${api.url}/api/me`, { headers: bearer }),
  'JSON:API service': () => fetch(`${api.url}/sports/running`),
  'Hydra service': () => fetch(`${api.url}/v2/db-probe`),
};

async function expectUp(t: import('ava').ExecutionContext): Promise<void> {
  for (const [name, request] of Object.entries(requests)) {
    const res = await request();
    const text = await res.text();
    t.true(res.status === 200 || res.status === 201, `${name}: ${res.status} ${text}`);
  }
  const ready = await fetch(`${api.url}/ready`);
  t.is(ready.status, 200);
  await ready.body?.cancel();
}

test('PostgreSQL down: 503 with Retry-After in each format, /ready says so; back up: served again without a restart', async (t) => {
  const started = Date.now();
  // Up: this also loads the token verifier's keys, as a running API has.
  await expectUp(t);

  await postgres.stop();
  for (const name of ['search', 'create a place', 'accounts /api/me'] as const) {
    const res = await requests[name]();
    t.is(res.status, 503, name);
    t.is(res.headers.get('retry-after'), '5', name);
    t.regex(res.headers.get('content-type') ?? '', /^application\/problem\+json/, name);
    t.like(await res.json(), { status: 503, title: 'Service Unavailable' }, name);
  }
  const jsonapi = await requests['JSON:API service']();
  t.is(jsonapi.status, 503);
  t.is(jsonapi.headers.get('retry-after'), '5');
  t.regex(jsonapi.headers.get('content-type') ?? '', /^application\/vnd\.api\+json/);
  t.like(((await jsonapi.json()) as { errors: unknown[] }).errors[0], { status: '503' });
  const hydra = await requests['Hydra service']();
  t.is(hydra.status, 503);
  t.is(hydra.headers.get('retry-after'), '5');
  t.regex(hydra.headers.get('content-type') ?? '', /^application\/ld\+json/);
  t.like(await hydra.json(), { '@type': 'hydra:Error' });
  // The OpenID provider's own endpoints answer OAuth's error for it.
  const tokenRes = await fetch(`${api.url}/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: 'grant_type=authorization_code&code=x&client_id=some-client&redirect_uri=https%3A%2F%2Fapp.example%2Fcb',
  });
  t.is(tokenRes.status, 503);
  t.is(tokenRes.headers.get('retry-after'), '5');
  t.like(await tokenRes.json(), { error: 'temporarily_unavailable' });
  const ready = await fetch(`${api.url}/ready`);
  t.is(ready.status, 503);
  t.like(await ready.json(), { checks: { postgres: 'down', redis: 'up' } });

  await postgres.start();
  await expectUp(t);
  t.log(`outage cycle in ${Date.now() - started} ms`);
});
