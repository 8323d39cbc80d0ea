import { startApi } from '../api/server.ts';
import { ensureDatabase } from '../shared/db/create-database.ts';
import { createLogger } from '../shared/observability/logger.ts';
import { tracing } from '../shared/observability/tracing.ts';
import { runCli } from '../shared/runtime/cli.ts';
import { prepareDatabase } from '../shared/runtime/prepare-database.ts';
import { onShutdown } from '../shared/runtime/shutdown.ts';
import { queuesNamedExplicitly, startWorkers } from '../workers/worker.ts';

/**
 * `npm start` once scripts/start.ts has started tracing (when configured): the whole system in
 * one process: database created if missing, migrations, referentials seeded, then the API and the
 * workers. Operators who scale them separately run `npm run api` and `npm run worker` instead.
 */
await runCli(async (config) => {
  const logger = createLogger(config.LOG_LEVEL, 'start');
  await ensureDatabase(config.DATABASE_URL);
  await prepareDatabase(config, logger);
  const api = await startApi(config, { logger: logger.child({ component: 'api' }) });
  const workers = await startWorkers(config, {
    logger: logger.child({ component: 'worker' }),
    explicitQueues: queuesNamedExplicitly(),
  });
  onShutdown(logger, config.SHUTDOWN_TIMEOUT_MS, async () => {
    await Promise.all([api.close(), workers.close()]);
    // The spans of the last requests and jobs are still buffered.
    await tracing().flush();
  });
  // Said once SIGTERM is handled: a signal sent on this line closes, it does not kill.
  logger.info({ url: config.PUBLIC_URL, docs: `${config.PUBLIC_URL}/docs` }, 'ready');
});
