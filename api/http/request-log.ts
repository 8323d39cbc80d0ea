import type { Middleware } from 'koa';
import type { Logger } from 'pino';
import { newTraceparent, runWithRequestContext, validTraceparent } from '../../shared/observability/request-context.ts';
import { tracing } from '../../shared/observability/tracing.ts';

declare module 'koa' {
  interface DefaultState {
    requestId?: string;
    log?: Logger;
    errorFormat?: import('./error-format.ts').ErrorFormat;
  }
}

const SAFE_ID = /^[A-Za-z0-9._-]{1,128}$/;
// Tokens can travel in query strings (`/api/me?access_token=`): never log their values.
const SECRET_PARAMS = /([?&](?:access_token|code|client_secret|id_token|refresh_token|token)=)[^&]*/gi;

export function redactUrl(url: string): string {
  return url.replace(SECRET_PARAMS, '$1[redacted]');
}

/**
 * Request id (taken from X-Request-Id when sane, else new), a child logger, one line per request.
 * The id and the request's trace (the client's valid traceparent, else the server span's with
 * OpenTelemetry on, else a new one) follow it into its log lines and the jobs it writes
 * (shared/observability/request-context.ts): a request and its jobs always share a trace id.
 */
export function requestLog(logger: Logger): Middleware {
  return async (ctx, next) => {
    const incoming = ctx.get('x-request-id');
    const requestId = SAFE_ID.test(incoming) ? incoming : crypto.randomUUID();
    ctx.state.requestId = requestId;
    ctx.set('X-Request-Id', requestId);
    // The child logger is made when something logs: most requests write no line at LOG_LEVEL=warn.
    let log: Logger | undefined;
    Object.defineProperty(ctx.state, 'log', {
      get: () => (log ??= logger.child({ reqId: requestId })),
      set: (value: Logger) => {
        log = value;
      },
      enumerable: true,
      configurable: true,
    });
    const start = process.hrtime.bigint();
    const traceparent =
      validTraceparent(ctx.get('traceparent') || undefined) ?? tracing().activeTraceparent() ?? newTraceparent();
    // The request line too is written in the context, so it carries the trace id.
    await runWithRequestContext({ requestId, traceparent }, async () => {
      try {
        await next();
      } finally {
        // Skip building the line (headers, ip, redacted url) when info is off (LOG_LEVEL=warn).
        if (logger.isLevelEnabled('info')) {
          const ms = Number(process.hrtime.bigint() - start) / 1e6;
          (ctx.state.log as Logger).info(
            {
              req: { method: ctx.method, url: redactUrl(ctx.originalUrl), headers: ctx.headers, ip: ctx.ip },
              res: { statusCode: ctx.status },
              ms: Math.round(ms * 10) / 10,
            },
            'request',
          );
        }
      }
    });
  };
}
