import { loadConfig } from '../shared/config.ts';
import { createLogger } from '../shared/observability/logger.ts';
import { onShutdown } from '../shared/runtime/shutdown.ts';
import { startApi } from './server.ts';

/** `npm run api`: the HTTP API alone (scale it separately from the workers). */
const config = loadConfig();
const logger = createLogger(config.LOG_LEVEL, 'api');
const api = await startApi(config, { logger });
onShutdown(logger, config.SHUTDOWN_TIMEOUT_MS, api.close);
