import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';

/** A delivery as the receiver got it. */
export interface Received {
  path: string;
  headers: Record<string, string>;
  body: string;
}

/** How the receiver answers one path: `n` counts the requests to that path, from 1. */
export type Behaviour = (req: IncomingMessage, res: ServerResponse, n: number) => void;

export interface WebhookReceiver {
  /** `http://127.0.0.1:<port>` */
  url: string;
  received: Received[];
  /** The deliveries to one path, in the order they arrived. */
  at: (path: string) => Received[];
  /** Sets how a path answers (default: 204 at once). */
  on: (path: string, behaviour: Behaviour) => void;
  /** Waits until `check` holds (the tests' deliveries are asynchronous); false past `ms`. */
  until: (check: () => boolean, ms?: number) => Promise<boolean>;
  close: () => Promise<void>;
}

/** A loopback receiver of webhooks that records every request (for test/webhooks-*.test.ts). */
export async function startReceiver(): Promise<WebhookReceiver> {
  const received: Received[] = [];
  const behaviours = new Map<string, Behaviour>();
  const counts = new Map<string, number>();
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const path = req.url ?? '/';
      const n = (counts.get(path) ?? 0) + 1;
      counts.set(path, n);
      received.push({ path, headers: req.headers as Record<string, string>, body: Buffer.concat(chunks).toString() });
      const behaviour = behaviours.get(path);
      if (behaviour) behaviour(req, res, n);
      else res.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    received,
    at: (path) => received.filter((r) => r.path === path),
    on: (path, behaviour) => behaviours.set(path, behaviour),
    until: async (check, ms = 120_000) => {
      const end = Date.now() + ms;
      while (!check() && Date.now() < end) await new Promise((r) => setTimeout(r, 20));
      return check();
    },
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** The payload of a delivery once `standardwebhooks` verified its signature with `secret` (throws otherwise). */
export function verified(
  secret: string,
  r: Received,
): { id: string; type: string; resource: string; data: Record<string, unknown>; timestamp: string } {
  return new Webhook(secret).verify(r.body, r.headers) as ReturnType<typeof verified>;
}
