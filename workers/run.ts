import { createLogger } from '../shared/observability/logger.ts';
import { tracing } from '../shared/observability/tracing.ts';
import { runCli } from '../shared/runtime/cli.ts';
import { onShutdown } from '../shared/runtime/shutdown.ts';
import { queuesNamedExplicitly, startWorkers } from './worker.ts';

/** `npm run worker` once workers/main.ts has started tracing (when configured). */
await runCli(async (config) => {
  const logger = createLogger(config.LOG_LEVEL, 'worker');
  const starting = startWorkers(config, { logger, explicitQueues: queuesNamedExplicitly() });
  // Listening before the start ends: a SIGTERM sent as soon as "workers started" is logged closes
  // the workers instead of killing the process.
  onShutdown(logger, config.SHUTDOWN_TIMEOUT_MS, async () => {
    await (await starting).close();
    // The spans of the last jobs are still buffered.
    await tracing().flush();
  });
  await starting;
});
