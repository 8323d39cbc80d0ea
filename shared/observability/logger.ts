import { type DestinationStream, type Logger, pino } from 'pino';

/** One logger shape for API and workers; credentials never reach the logs. */
export function createLogger(level: string, name: string, destination?: DestinationStream): Logger {
  return pino(
    {
      name,
      level,
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
