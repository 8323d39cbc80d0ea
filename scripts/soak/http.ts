import type { RouteStats } from './route-stats.ts';

/** A request of the soak: its route for the report, the status it must get, and what fetch sends. */
export interface SoakRequest {
  /** Method and route template, e.g. `GET /v2/exports/{id}`: the line of the report it counts on. */
  route: string;
  expect: number;
  url: string;
  init?: RequestInit;
}

/**
 * Sends one request and reads its whole answer, timing both; records it on `stats`. Returns the
 * body, or undefined when the request is an error: a network error or timeout, or any status but
 * the expected one (a 5xx included).
 */
export async function send(stats: RouteStats, timeoutMs: number, req: SoakRequest): Promise<Buffer | undefined> {
  const started = performance.now();
  try {
    const res = await fetch(req.url, { ...req.init, signal: AbortSignal.timeout(timeoutMs) });
    const body = Buffer.from(await res.arrayBuffer());
    const ms = performance.now() - started;
    if (res.status === req.expect) {
      stats.record(req.route, ms);
      return body;
    }
    stats.record(req.route, ms, `${res.status} (expected ${req.expect}): ${body.toString('utf8', 0, 300)}`);
  } catch (error) {
    stats.record(req.route, performance.now() - started, `no answer: ${(error as Error).message}`);
  }
  return undefined;
}

/** A JSON body's members (the soak only reads a few: ids, status, links). */
export const json = (body: Buffer) => JSON.parse(body.toString('utf8')) as Record<string, unknown>;
