import { STATUS_CODES } from 'node:http';
import type { Middleware } from 'koa';
import type { Logger } from 'pino';
import { errorFormatForPath, renderError } from './error-format.ts';
import { HttpError, badRequest, notFound, payloadTooLarge, unsupportedMediaType } from './errors.ts';

/** Errors thrown by body parsers and other libraries carry `status` (http-errors style). */
function fromLibraryError(err: unknown): HttpError | undefined {
  if (err instanceof HttpError) return err;
  if (typeof err !== 'object' || err === null) return undefined;
  const e = err as { status?: number; statusCode?: number; type?: string; message?: string; expose?: boolean };
  const status = e.status ?? e.statusCode;
  if (status === 413 || e.type === 'entity.too.large')
    return payloadTooLarge('The request body is larger than the limit');
  if (e.type === 'entity.parse.failed' || (status === 400 && /json/i.test(e.message ?? '')))
    return badRequest('The request body is not valid JSON');
  if (status === 415) return unsupportedMediaType(e.message ?? 'Unsupported content type');
  if (status && status >= 400 && status < 500 && e.expose)
    return new HttpError(status, STATUS_CODES[status] ?? 'Error', e.message);
  return undefined;
}

/** The one error renderer, first in the chain: every service answers in its own format. */
export function errorHandler(logger: Logger): Middleware {
  return async (ctx, next) => {
    try {
      await next();
      if (ctx.status === 404 && ctx.body === undefined) throw notFound(`No route for ${ctx.method} ${ctx.path}`);
    } catch (err) {
      let error = fromLibraryError(err);
      if (!error) {
        (ctx.state.log ?? logger).error({ err }, 'unhandled error');
        error = new HttpError(500, 'Internal Server Error', 'An unexpected error occurred');
      }
      const format = ctx.state.errorFormat ?? errorFormatForPath(ctx.path);
      const rendered = renderError(format, error, ctx.path);
      ctx.status = error.status;
      ctx.set(error.headers);
      ctx.type = rendered.contentType;
      ctx.body = rendered.body;
    }
  };
}
