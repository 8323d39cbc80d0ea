import { once } from 'node:events';
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import test from 'ava';
import { type BalancedApi, HaProxy, startBalancedApi } from '../scripts/cluster/balancer.ts';
import { freePort, uniquePrefix } from './helpers/app.ts';
import { createTestDatabase } from './helpers/db.ts';

// Issue 36 §5: the balancer setup survives an API crash. HAProxy sends a request an API could
// not answer to another one when sending it twice is harmless, and the launcher starts a dead
// API again.

const database = await createTestDatabase();

/** A backend that answers /health and /ready, and closes every other request unanswered. */
async function hangingUp(): Promise<{ server: Server; url: string; hits: Map<string, number> }> {
  const hits = new Map<string, number>();
  const server = createServer((req, res) => {
    if (req.url === '/health' || req.url === '/ready') return void res.end('ok');
    const key = `${req.method} ${req.headers['idempotency-key'] ? 'with key' : 'without key'}`;
    hits.set(key, (hits.get(key) ?? 0) + 1);
    req.socket.destroy();
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, hits };
}

test('HAProxy sends again a GET or a keyed POST whose answer was lost, never a POST without a key', async (t) => {
  const backend = await hangingUp();
  const proxy = await HaProxy.start({
    port: await freePort(),
    servers: [{ name: 'api1', url: backend.url }],
    balance: 'roundrobin',
  });
  try {
    // A connection of its own per request: HAProxy closes the client's after such a 502.
    const send = (method: string, headers: Record<string, string> = {}) =>
      new Promise<number | undefined>((resolve, reject) => {
        const req = request(`${proxy.url}/api/v1/places`, { method, headers, agent: false }, (res) => {
          res.resume();
          res.on('end', () => resolve(res.statusCode));
        });
        req.on('error', reject);
        req.end(method === 'POST' ? '{}' : undefined);
      });
    t.is(await send('GET'), 502);
    t.is(backend.hits.get('GET without key'), 4, 'the first try and 3 retries');
    t.is(await send('POST'), 502);
    t.is(backend.hits.get('POST without key'), 1, 'sent once: the client decides');
    t.is(await send('POST', { 'idempotency-key': 'k-1' }), 502);
    t.is(backend.hits.get('POST with key'), 4, 'a repeat gets the first answer back from the API');
  } finally {
    await proxy.stop();
    backend.server.close();
  }
});

let balanced: BalancedApi | undefined;
test.after.always(async () => {
  await balanced?.close();
  await database.drop();
});

test('one of three APIs killed under load: no GET fails, the launcher reports it and starts it again', async (t) => {
  balanced = await startBalancedApi({
    apis: 3,
    databaseUrl: database.url,
    migrate: false,
    env: { NODE_ENV: 'test', LOG_LEVEL: 'warn', QUEUE_PREFIX: uniquePrefix(), RATE_LIMIT_POINTS: '1000000' },
  });
  const setup = balanced;
  const victim = setup.apis[1];
  if (!victim) throw new Error('three APIs');
  const exited = once(setup.events, 'exited');
  const restarted = once(setup.events, 'restarted');
  let restartedYet = false;
  void restarted.then(() => {
    restartedYet = true;
  });

  const failures: string[] = [];
  const servedAfterRestart = new Set<string>();
  let answers = 0;
  let answersAtKill: number | undefined;
  // Killed after the first answers; the clients go on until many more have come after the kill,
  // the launcher has started the API again and that API has answered through HAProxy.
  const KILL_AFTER = 30;
  const MORE_AFTER_KILL = 300;
  const done = () =>
    answersAtKill !== undefined &&
    answers - answersAtKill >= MORE_AFTER_KILL &&
    restartedYet &&
    servedAfterRestart.has(victim.name);
  const deadline = Date.now() + 300_000;
  const client = async () => {
    while (!done() && Date.now() < deadline) {
      try {
        const res = await fetch(`${setup.url}/api/v1/sports?limit=5`);
        await res.arrayBuffer();
        if (res.status !== 200) failures.push(`${res.status} from ${res.headers.get('x-served-by')}`);
        if (restartedYet) servedAfterRestart.add(res.headers.get('x-served-by') ?? '');
      } catch (error) {
        failures.push(String((error as Error).cause ?? error));
      }
      answers++;
      if (answers >= KILL_AFTER && answersAtKill === undefined) {
        answersAtKill = answers;
        victim.process.child.kill('SIGKILL');
      }
    }
  };
  await Promise.all([client(), client(), client(), client()]);

  t.true(done(), `gave up: ${answers} answers, restarted: ${restartedYet}`);
  t.deepEqual(failures, [], 'every GET answered 200 through HAProxy');
  const [exit] = await exited;
  t.like(exit, { name: victim.name, signal: 'SIGKILL' });
  const [back] = await restarted;
  t.is(back.name, victim.name);
  t.is(victim.process.child.pid, back.pid, 'the API entry names the new process');
  t.true((await fetch(`${victim.url}/ready`)).ok);
});
