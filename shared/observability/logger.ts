import { type DestinationStream, type Logger, pino } from 'pino';
import { logTraceFields } from './request-context.ts';

/**
 * One logger shape for API and workers; credentials never reach the logs. Every line written
 * while a request or a job runs carries its trace id (docs/operations.md, "Following one request").
 */
export function createLogger(level: string, name: string, destination?: DestinationStream): Logger {
  return pino(
    {
      name,
      level,
      mixin: logTraceFields,
      redact: {
        paths: [
          'req.headers.authorization',
          'req.headers["x-api-key"]',
          'req.headers.cookie',
          'res.headers["set-cookie"]',
        ],
        censor: '[redacted]',
      },
    },
    destination,
  );
}

export type { Logger };
