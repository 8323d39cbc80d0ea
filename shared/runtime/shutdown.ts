import type { Logger } from 'pino';

/** How long the loopback launchers (scripts/cluster/) give their servers to stop. */
export const LAUNCHER_STOP_MS = 30_000;

/**
 * A signal this soon after the first is the same request delivered twice: a terminal's Ctrl-C
 * reaches the whole process group, and npm forwards to its child the one it got too (systemd's
 * default KillMode=control-group does the same with SIGTERM).
 */
const REPEAT_MS = 2_000;

/**
 * Runs `close` once on SIGTERM or SIGINT; a second signal (past REPEAT_MS), or `timeoutMs`
 * passing, exits at once.
 */
export function onShutdown(logger: Logger, timeoutMs: number, close: () => Promise<void>): void {
  let firstAt: number | undefined;
  const handler = (signal: NodeJS.Signals) => {
    if (firstAt !== undefined) {
      if (performance.now() - firstAt < REPEAT_MS) {
        logger.info({ signal }, 'signal repeated: already shutting down');
        return;
      }
      logger.warn({ signal }, 'second signal: exiting now');
      process.exit(1);
    }
    firstAt = performance.now();
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
  // `on`, not `once`: without a listener a repeated signal would kill the process mid-drain.
  process.on('SIGTERM', handler);
  process.on('SIGINT', handler);
}
