import Router from '@koa/router';
import test from 'ava';
import { accountsService } from '../api/accounts/index.ts';
import type { ServiceModule } from '../api/service-module.ts';
import { createAccount } from '../shared/accounts/accounts.ts';
import { startTestApi, type TestApi } from './helpers/app.ts';

// Rate limits behind reverse proxies: a client writes whatever X-Forwarded-For it likes, each
// trusted proxy appends the address it saw. Only the TRUST_PROXY right-most hops may be believed,
// or a rotating header opens a fresh budget per request (the attacks replayed here, over HTTP).

/** GET /probe answers the address the API sees (ctx.ip), behind the API-wide rate limit. */
function ipProbe(): ServiceModule {
  return {
    name: 'places',
    routers: () => {
      const router = new Router();
      router.get('/probe', (ctx) => {
        ctx.body = { ip: ctx.ip };
      });
      return [router];
    },
  };
}

async function probe(api: TestApi, forwardedFor: string): Promise<{ status: number; ip?: string }> {
  const res = await api.fetch('/probe', { headers: { 'x-forwarded-for': forwardedFor } });
  if (res.status !== 200) {
    await res.body?.cancel();
    return { status: res.status };
  }
  const body = (await res.json()) as { ip: string };
  return { status: res.status, ip: body.ip };
}

const ok = (n: number) => Array.from({ length: n }, () => 200);
const limited = (n: number) => Array.from({ length: n }, () => 429);

test('one trusted hop (TRUST_PROXY=true): a rotating left-most X-Forwarded-For meets the 429', async (t) => {
  const api = await startTestApi(t, { services: [ipProbe()], env: { TRUST_PROXY: 'true', RATE_LIMIT_POINTS: '5' } });
  const results = [];
  // The client forges a new left-most address each time; the proxy appends the one it saw.
  for (let i = 1; i <= 8; i++) results.push(await probe(api, `198.18.0.${i}, 203.0.113.7`));
  t.deepEqual(
    results.map((r) => r.status),
    [...ok(5), ...limited(3)],
  );
  for (const r of results.slice(0, 5)) t.is(r.ip, '203.0.113.7');
  // Another client behind the same proxy has its own budget.
  t.deepEqual(await probe(api, '198.18.0.1, 203.0.113.8'), { status: 200, ip: '203.0.113.8' });
});

test('two trusted hops (TRUST_PROXY=2): the second address from the right is the key', async (t) => {
  const api = await startTestApi(t, { services: [ipProbe()], env: { TRUST_PROXY: '2', RATE_LIMIT_POINTS: '5' } });
  t.is(api.config.trustProxyHops, 2);
  const results = [];
  // Forged left-most address; the outer proxy appends the client's; the inner one appends the
  // outer proxy node's, which varies from request to request (a pool of edge nodes).
  for (let i = 1; i <= 8; i++) results.push(await probe(api, `198.18.0.${i}, 203.0.113.9, 10.0.0.${i}`));
  t.deepEqual(
    results.map((r) => r.status),
    [...ok(5), ...limited(3)],
  );
  for (const r of results.slice(0, 5)) t.is(r.ip, '203.0.113.9');
  // Keyed on the client, not on the inner hop: another client through the same edge node is served.
  t.deepEqual(await probe(api, '198.18.0.1, 203.0.113.10, 10.0.0.1'), { status: 200, ip: '203.0.113.10' });
});

test('no trusted proxy (default): X-Forwarded-For is ignored, the socket address is the key', async (t) => {
  const api = await startTestApi(t, { services: [ipProbe()], env: { RATE_LIMIT_POINTS: '3' } });
  const results = [];
  for (let i = 1; i <= 5; i++) results.push(await probe(api, `198.18.0.${i}, 203.0.113.${i}`));
  t.deepEqual(
    results.map((r) => r.status),
    [...ok(3), ...limited(2)],
  );
  t.is(results[0]?.ip, '127.0.0.1');
});

// Login: LOGIN_RATE_LIMIT_POINTS per account whatever the address, ten times that per address.
const LOGIN_POINTS = 3;
let accounts: TestApi;
test.before(async () => {
  accounts = await startTestApi(null, {
    publicUrl: true,
    services: [accountsService],
    env: { TRUST_PROXY: 'true', LOGIN_RATE_LIMIT_POINTS: String(LOGIN_POINTS), LOGIN_RATE_LIMIT_DURATION_S: '120' },
  });
});
test.after.always(() => accounts?.close());

/** Opens a sign-in interaction; `post` submits its form (with the CSRF cookie and field) as `forwardedFor`. */
async function startLogin() {
  const created = await accounts.fetch('/api/v1/clients', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      client_name: `Proxy test ${Math.random()}`,
      redirect_uris: ['https://app.example.test/cb'],
    }),
  });
  const client = (await created.json()) as { client_id: string };
  const cookies = new Map<string, string>();
  const take = (res: Response) => {
    for (const line of res.headers.getSetCookie()) {
      const [pair = ''] = line.split(';');
      const eq = pair.indexOf('=');
      if (eq > 0) cookies.set(pair.slice(0, eq), pair.slice(eq + 1));
    }
  };
  const cookie = () => [...cookies].map(([k, v]) => `${k}=${v}`).join('; ');
  const query = new URLSearchParams({
    client_id: client.client_id,
    redirect_uri: 'https://app.example.test/cb',
    response_type: 'code',
    scope: 'openid',
  });
  let res = await accounts.fetch(`/authorize?${query}`, { redirect: 'manual' });
  take(res);
  const interaction = new URL(res.headers.get('location') ?? '', accounts.url).pathname;
  res = await accounts.fetch(interaction, { headers: { cookie: cookie() } });
  take(res);
  const csrf = /name="csrf" value="([^"]+)"/.exec(await res.text())?.[1];
  if (!csrf) throw new Error(`no sign-in form (HTTP ${res.status})`);
  return async (forwardedFor: string, email: string, password: string): Promise<number> => {
    const answer = await accounts.fetch(`${interaction}/login`, {
      method: 'POST',
      redirect: 'manual',
      headers: {
        cookie: cookie(),
        'content-type': 'application/x-www-form-urlencoded',
        'x-forwarded-for': forwardedFor,
      },
      body: new URLSearchParams({ csrf, email, password }),
    });
    await answer.body?.cancel();
    return answer.status;
  };
}

test('login: attempts on one account from many addresses meet the 429 after LOGIN_RATE_LIMIT_POINTS', async (t) => {
  await createAccount(accounts.database.db, { email: 'target@example.test', password: 'the right password' });
  const post = await startLogin();
  const statuses: number[] = [];
  // A botnet: every attempt comes from another machine, as the trusted proxy saw it.
  for (let i = 1; i <= LOGIN_POINTS + 3; i++)
    statuses.push(await post(`198.51.100.${i}`, i % 2 ? 'target@example.test' : ' Target@Example.TEST', `guess ${i}`));
  t.deepEqual(statuses, [...Array.from({ length: LOGIN_POINTS }, () => 401), ...limited(3)]);
  // The account waits out the window, even with the right password from a fresh address.
  t.is(await post('198.51.100.200', 'target@example.test', 'the right password'), 429);
  // The addresses themselves are not blocked: another account from one of them is answered.
  t.is(await post('198.51.100.1', 'someone-else@example.test', 'a wrong password'), 401);
});

test('login: a rotating left-most X-Forwarded-For does not escape the per-address budget', async (t) => {
  const post = await startLogin();
  const statuses: number[] = [];
  // One machine, a new forged left-most address and a new email each time: ten times the points.
  for (let i = 1; i <= LOGIN_POINTS * 10 + 2; i++)
    statuses.push(await post(`198.18.1.${i}, 203.0.113.50`, `spray-${i}@example.test`, 'a common password'));
  t.deepEqual(statuses, [...Array.from({ length: LOGIN_POINTS * 10 }, () => 401), ...limited(2)]);
});
