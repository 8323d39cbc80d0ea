import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import test from 'ava';
import helmet from 'helmet';
import Koa from 'koa';
import { helmetHeaders, securityHeaders } from '../api/http/security-headers.ts';

const OPTIONS = {
  crossOriginResourcePolicy: { policy: 'cross-origin' as const },
  contentSecurityPolicy: { directives: { upgradeInsecureRequests: null } },
};

/** The headers a server answers with, for `handler`. */
async function headersOf(handler: (req: IncomingMessage, res: ServerResponse) => void): Promise<Headers> {
  const server = createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    const res = await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/`);
    await res.arrayBuffer();
    return res.headers;
  } finally {
    server.close();
  }
}

const withoutDate = (h: Headers) => [...h].filter(([name]) => !['date', 'connection', 'keep-alive'].includes(name));

test('the precomputed headers are exactly those helmet sets on a live response', async (t) => {
  const byHelmet = await headersOf((req, res) => helmet(OPTIONS)(req, res, () => res.end('ok')));
  const app = new Koa();
  app.use(securityHeaders(OPTIONS));
  app.use((ctx) => {
    ctx.body = 'ok';
  });
  const byKoa = await headersOf(app.callback());
  const ours = withoutDate(byKoa).filter(([name]) => !['content-type', 'content-length'].includes(name));
  const theirs = withoutDate(byHelmet).filter(([name]) => !['content-type', 'content-length'].includes(name));
  t.deepEqual(ours, theirs);
  t.true(ours.length >= 10, `helmet set ${ours.length} headers`);
  t.is(byKoa.get('content-security-policy')?.includes('upgrade-insecure-requests'), false);
  t.is(byKoa.get('cross-origin-resource-policy'), 'cross-origin');
});

test('a route can still replace one of them', async (t) => {
  const app = new Koa();
  app.use(securityHeaders(OPTIONS));
  app.use((ctx) => {
    ctx.set('Content-Security-Policy', "default-src 'none'");
    ctx.body = 'ok';
  });
  const headers = await headersOf(app.callback());
  t.is(headers.get('content-security-policy'), "default-src 'none'");
  t.is(headers.get('x-content-type-options'), 'nosniff');
});

test('options helmet refuses are refused at start, not per request', (t) => {
  t.throws(() => helmetHeaders({ referrerPolicy: { policy: 'not-a-policy' as never } }));
});

test('per-request directives (a nonce) are refused: headers worked out once could not follow the request', (t) => {
  const nonce = (_req: IncomingMessage, res: ServerResponse) => `'nonce-${res.getHeader('x-nonce')}'`;
  t.throws(() => helmetHeaders({ contentSecurityPolicy: { directives: { scriptSrc: ["'self'", nonce] } } }), {
    message: /per-request/,
  });
});
