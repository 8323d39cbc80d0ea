import type { Logger } from 'pino';

/** How long the loopback launchers (scripts/cluster/) give their servers to stop. */
export const LAUNCHER_STOP_MS = 30_000;

/**
 * Runs `close` once on SIGTERM or SIGINT; a second signal, or `timeoutMs` passing, exits at once.
 */
export function onShutdown(logger: Logger, timeoutMs: number, close: () => Promise<void>): void {
  let closing = false;
  const handler = (signal: NodeJS.Signals) => {
    if (closing) {
      logger.warn({ signal }, 'second signal: exiting now');
      process.exit(1);
    }
    closing = true;
    logger.info({ signal }, 'shutting down');
    const timer = setTimeout(() => {
      logger.error({ timeoutMs }, 'shutdown timed out');
      process.exit(1);
    }, timeoutMs + 2_000);
    timer.unref();
    close().then(
      () => process.exit(0),
      (err) => {
        logger.error({ err }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.once('SIGTERM', handler);
  process.once('SIGINT', handler);
}
