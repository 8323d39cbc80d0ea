// First: V8 settings apply before anything allocates.
import '../shared/runtime/gc-tuning.ts';
import { createLogger } from '../shared/observability/logger.ts';
import { runCli } from '../shared/runtime/cli.ts';
import { onShutdown } from '../shared/runtime/shutdown.ts';
import { queuesNamedExplicitly, startWorkers } from './worker.ts';

/** `npm run worker`: the queues named in WORKER_QUEUES (default all) and the outbox relay. */
await runCli(async (config) => {
  const logger = createLogger(config.LOG_LEVEL, 'worker');
  const workers = await startWorkers(config, { logger, explicitQueues: queuesNamedExplicitly() });
  onShutdown(logger, config.SHUTDOWN_TIMEOUT_MS, workers.close);
});
