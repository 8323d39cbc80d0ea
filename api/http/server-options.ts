import type { ServerOptions } from 'node:http';
import type { Config } from '../../shared/config.ts';

/**
 * The HTTP server's limits on slow and long-lived clients (README, Configuration). Node checks
 * the header and request timeouts every `connectionsCheckingInterval`: a tenth of the header
 * timeout, so a slowloris connection is closed soon after its time is up, not up to 30 s later.
 */
export function httpServerOptions(config: Config): ServerOptions {
  return {
    headersTimeout: config.HTTP_HEADERS_TIMEOUT_MS,
    requestTimeout: config.HTTP_REQUEST_TIMEOUT_MS,
    keepAliveTimeout: config.HTTP_KEEPALIVE_TIMEOUT_MS,
    connectionsCheckingInterval: Math.max(100, Math.floor(config.HTTP_HEADERS_TIMEOUT_MS / 10)),
  };
}

/** What ServerOptions cannot set: the cap on requests per keep-alive connection. */
export function applyServerLimits(server: { maxRequestsPerSocket: number | null }, config: Config): void {
  server.maxRequestsPerSocket = config.HTTP_MAX_REQUESTS_PER_SOCKET || null;
}
