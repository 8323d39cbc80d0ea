import { createLogger } from '../shared/observability/logger.ts';
import { tracing } from '../shared/observability/tracing.ts';
import { runCli } from '../shared/runtime/cli.ts';
import { prepareDatabase } from '../shared/runtime/prepare-database.ts';
import { onShutdown } from '../shared/runtime/shutdown.ts';
import { startApi } from './server.ts';

/** `npm run api` once api/main.ts has started tracing (when configured): the HTTP API alone. */
await runCli(async (config) => {
  const logger = createLogger(config.LOG_LEVEL, 'api');
  await prepareDatabase(config, logger);
  const starting = startApi(config, { logger });
  // Listening before the start ends: a SIGTERM sent as soon as "api listening" is logged drains
  // the API instead of killing the process.
  onShutdown(logger, config.SHUTDOWN_TIMEOUT_MS, async () => {
    await (await starting).close();
    // The spans of the last requests are still buffered.
    await tracing().flush();
  });
  await starting;
});
