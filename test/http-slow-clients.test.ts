import { connect, type Socket } from 'node:net';
import test from 'ava';
import { startTestApi } from './helpers/app.ts';

// Slow clients cannot hold the server: 500 connections that trickle their headers (slowloris)
// leave the searches answered, and each is answered 408 and closed once HTTP_HEADERS_TIMEOUT_MS
// has passed.

const HEADERS_TIMEOUT_MS = 1_000;
const api = await startTestApi(null, {
  env: { HTTP_HEADERS_TIMEOUT_MS: String(HEADERS_TIMEOUT_MS), RATE_LIMIT_ENABLED: 'false' },
});
test.after.always(() => api.close());

interface Slow {
  socket: Socket;
  answer: string;
  closed: Promise<number>;
}

/** A connection that sends a request line and then one header byte at a time, never finishing. */
function slowClient(url: URL, opened: number): Slow {
  const socket = connect(Number(url.port), url.hostname);
  const slow: Slow = { socket, answer: '', closed: Promise.resolve(0) };
  socket.setEncoding('latin1');
  socket.on('data', (chunk: string) => {
    slow.answer += chunk;
  });
  socket.on('error', () => {});
  socket.write('GET /api/v1/places?origin=3.06,50.63&radius=10 HTTP/1.1\r\nHost: localhost\r\nX-Slow: ');
  const trickle = setInterval(() => socket.writable && socket.write('a'), 200);
  slow.closed = new Promise((resolve) =>
    socket.once('close', () => {
      clearInterval(trickle);
      resolve(Date.now() - opened);
    }),
  );
  return slow;
}

test('500 slowloris connections: searches are still answered, and each slow one gets a 408 and is closed after the header timeout', async (t) => {
  const url = new URL(api.url);
  const opened = Date.now();
  const slow = Array.from({ length: 500 }, () => slowClient(url, opened));
  // While they hold their connections, the API answers others.
  const searches = await Promise.all(
    Array.from({ length: 50 }, () => api.fetch('/api/v1/places?origin=3.06,50.63&radius=10')),
  );
  t.deepEqual(
    searches.map((r) => r.status),
    searches.map(() => 200),
  );
  const closedAfter = await Promise.all(slow.map((s) => s.closed));
  // Never before the timeout; the bound above it is generous, for a loaded machine.
  t.true(
    closedAfter.every((ms) => ms >= HEADERS_TIMEOUT_MS - 50),
    String(Math.min(...closedAfter)),
  );
  t.true(
    closedAfter.every((ms) => ms < 120_000),
    String(Math.max(...closedAfter)),
  );
  t.true(
    slow.every((s) => s.answer.startsWith('HTTP/1.1 408')),
    slow.find((s) => !s.answer.startsWith('HTTP/1.1 408'))?.answer,
  );
  t.is((await api.fetch('/health')).status, 200);
});

test('the limits are the settings: header, request and keep-alive timeouts, requests per connection', async (t) => {
  const { httpServerOptions } = await import('../api/http/server-options.ts');
  const options = httpServerOptions(api.config);
  t.is(options.headersTimeout, HEADERS_TIMEOUT_MS);
  t.is(options.requestTimeout, 120_000);
  t.is(options.keepAliveTimeout, 65_000);
  t.true((options.connectionsCheckingInterval ?? Number.POSITIVE_INFINITY) <= HEADERS_TIMEOUT_MS);
  t.is(api.config.HTTP_MAX_REQUESTS_PER_SOCKET, 1_000);
});
