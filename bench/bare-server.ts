import type { ChildProcess } from 'node:child_process';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { startServerProcess } from './harness.ts';

/**
 * The limit an HTTP benchmark's API is held to: a bare `node:http` + `pg` server, in its own
 * process like the API, running the same statement as the API for each request (same text,
 * parameters and prepared-statement name, through a pg pool of the same size) and answering the
 * JSON the API answers, written from the rows with no framework, middleware, validation library,
 * logging, metrics or ETag in between.
 *
 * A benchmark exports a factory of its {@link BareRoute} and calls {@link startBareServer} with
 * its own module URL and that export's name: the child process imports the module and serves the
 * route. One server per benchmark run; every benchmark reuses this file.
 *
 * GET and HEAD requests reach the route as they arrive; any other method's body is read whole
 * first and handed to the route as bytes (a POST benchmark parses it there, as the API would).
 */

/**
 * What one request runs and how the answer is written: either one statement and a serializer of
 * its rows (the searches), or `run`, several statements (a transaction) on the server's pool,
 * resolving to the answer's text (tracking-ingest's POST).
 */
export type BareAnswer<Row = Record<string, unknown>> = (
  | {
      /** Run through the pool as is: `name` makes it a prepared statement, as in the API. */
      statement: { name?: string; text: string; values: unknown[] };
      /** The answer's JSON text, from the statement's rows. */
      body: (rows: Row[]) => string;
    }
  | {
      /**
       * Runs the request's statements itself (taking a client for a transaction); resolves to the
       * answer's text, or to its status and text when it decides the status (a refused caller).
       */
      run: (pool: pg.Pool) => Promise<string | { status: number; body: string }>;
    }
) & {
  /** 200 by default. */
  status?: number;
  contentType?: string;
};

/**
 * Maps a request to what it runs; undefined answers 404, a throw 400. `body` is the request's
 * bytes, undefined for GET and HEAD.
 */
export type BareRoute = (url: URL, headers: IncomingHttpHeaders, body?: Buffer) => BareAnswer<never> | undefined;

/**
 * Starts the bare server as its own process on a free port, serving the route that
 * `(await import(moduleUrl))[exportName]()` returns, with a pool of `poolMax` connections;
 * `env` adds to its environment (what the route needs to know, e.g. the token issuer).
 */
export function startBareServer(
  moduleUrl: string,
  exportName: string,
  databaseUrl: string,
  poolMax: number,
  env: Record<string, string> = {},
): Promise<{ url: string; child: ChildProcess }> {
  // BENCH_BARE_NODE_ARGS: flags for the bare server's node, as BENCH_API_NODE_ARGS for the API's.
  const nodeArgs = (process.env.BENCH_BARE_NODE_ARGS ?? '').split(/\s+/).filter(Boolean);
  return startServerProcess('bare server', [...nodeArgs, fileURLToPath(import.meta.url)], (port) => ({
    ...env,
    NODE_ENV: 'production',
    BARE_MODULE: moduleUrl,
    BARE_EXPORT: exportName,
    BARE_DATABASE_URL: databaseUrl,
    BARE_POOL_MAX: String(poolMax),
    BARE_PORT: String(port),
  }));
}

/** The request's URL with some query parameters set (as the API writes its paging links). */
export function linkWith(url: URL, set: Record<string, string>): string {
  const query = new URLSearchParams(url.search);
  for (const [name, value] of Object.entries(set)) query.set(name, value);
  return `${url.origin}${url.pathname}?${query}`;
}

/** The child process: the server itself. */
async function serve(): Promise<void> {
  const env = process.env;
  const mod = (await import(env.BARE_MODULE as string)) as Record<string, () => BareRoute>;
  const factory = mod[env.BARE_EXPORT as string];
  if (typeof factory !== 'function') throw new Error(`${env.BARE_MODULE} exports no ${env.BARE_EXPORT}`);
  const route = factory() as (url: URL, headers: IncomingHttpHeaders, body?: Buffer) => BareAnswer | undefined;
  // The API's pool options (shared/db/database.ts), same size.
  const pool = new pg.Pool({
    connectionString: env.BARE_DATABASE_URL,
    max: Number(env.BARE_POOL_MAX),
    idleTimeoutMillis: 30_000,
  });
  pool.on('error', () => {});
  const port = Number(env.BARE_PORT);
  const base = `http://127.0.0.1:${port}`;
  const server = createServer((req, res) => {
    const send = (status: number, body: string, type = 'application/json') => {
      res.writeHead(status, { 'content-type': type, 'content-length': Buffer.byteLength(body) });
      res.end(body);
    };
    const respond = (body?: Buffer) => {
      let answer: BareAnswer | undefined;
      try {
        answer = route(new URL(req.url ?? '/', base), req.headers, body);
      } catch (error) {
        return send(400, JSON.stringify({ error: (error as Error).message }));
      }
      if (!answer) return send(404, '{"error":"not found"}');
      const { status = 200, contentType } = answer;
      const text =
        'run' in answer ? answer.run(pool) : pool.query(answer.statement).then((result) => answer.body(result.rows));
      text.then(
        (body) =>
          typeof body === 'string' ? send(status, body, contentType) : send(body.status, body.body, contentType),
        (error: Error) => send(500, JSON.stringify({ error: error.message })),
      );
    };
    if (req.url === '/health') return send(200, '{"status":"ok"}');
    if (req.method === 'GET' || req.method === 'HEAD') return respond();
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => respond(Buffer.concat(chunks)));
  });
  server.keepAliveTimeout = 65_000;
  server.listen(port, '127.0.0.1');
  process.once('SIGTERM', () => {
    server.close(() => void pool.end().then(() => process.exit(0)));
    server.closeAllConnections();
  });
}

// Not a top-level await: the route's module imports this one, which must have finished loading.
if (process.argv[1] === fileURLToPath(import.meta.url))
  serve().catch((error: unknown) => {
    console.error(error);
    process.exit(1);
  });
