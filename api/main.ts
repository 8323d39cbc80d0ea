// First: V8 settings apply before anything allocates.
import '../shared/runtime/gc-tuning.ts';
import { createLogger } from '../shared/observability/logger.ts';
import { runCli } from '../shared/runtime/cli.ts';
import { prepareDatabase } from '../shared/runtime/prepare-database.ts';
import { onShutdown } from '../shared/runtime/shutdown.ts';
import { startApi } from './server.ts';

/** `npm run api`: the HTTP API alone (scale it separately from the workers). */
await runCli(async (config) => {
  const logger = createLogger(config.LOG_LEVEL, 'api');
  await prepareDatabase(config, logger);
  const api = await startApi(config, { logger });
  onShutdown(logger, config.SHUTDOWN_TIMEOUT_MS, api.close);
});
