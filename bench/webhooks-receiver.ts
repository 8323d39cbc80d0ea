import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { webhookHeaders } from '../shared/tracking/webhooks/signature.ts';

/** The loopback receiver of bench/webhooks.ts and the bare loop it is compared with. */

export interface Arrival {
  /** The hook's path (`/h/3`). */
  path: string;
  /** `webhook-id`: one per (event, hook). */
  id: string;
  /** performance.now() of this process when the body was read. */
  at: number;
  body: string;
}

export interface BenchReceiver {
  url: string;
  arrivals: Arrival[];
  /** Forgets what arrived so far. */
  reset: () => void;
  close: () => Promise<void>;
}

/** A receiver answering 204 at once, recording every request (it checks nothing: the bare loop's does not either). */
export async function startBenchReceiver(): Promise<BenchReceiver> {
  let arrivals: Arrival[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      arrivals.push({
        path: req.url ?? '/',
        id: String(req.headers['webhook-id'] ?? ''),
        at: performance.now(),
        body: Buffer.concat(chunks).toString(),
      });
      res.writeHead(204).end();
    });
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    get arrivals() {
      return arrivals;
    },
    reset: () => {
      arrivals = [];
    },
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/**
 * The bare loop: `count` signed POSTs of `body` to `url` with fetch, `concurrency` at a time,
 * each signed as a delivery is (Standard Webhooks headers, a new message id each). Deliveries per
 * second.
 */
export async function bareSignedLoop(
  url: string,
  secret: string,
  body: string,
  count: number,
  concurrency: number,
): Promise<{ perSecond: number; errors: number }> {
  let next = 0;
  let errors = 0;
  const started = performance.now();
  const loop = async () => {
    while (next < count) {
      const n = next++;
      const headers = webhookHeaders([secret], `msg_bare_${n}`, new Date(), body);
      try {
        const res = await fetch(url, {
          method: 'POST',
          headers: { ...headers, 'content-type': 'application/json' },
          body,
        });
        await res.arrayBuffer();
        if (!res.ok) errors++;
      } catch {
        errors++;
      }
    }
  };
  await Promise.all(Array.from({ length: concurrency }, loop));
  return { perSecond: count / ((performance.now() - started) / 1000), errors };
}
