import { STATUS_CODES } from 'node:http';
import type { Middleware } from 'koa';
import type { Logger } from 'pino';
import { BodySyntaxError, DomainError } from '../../shared/errors.ts';
import { type ErrorFormatOf, renderError } from './error-format.ts';
import {
  badRequest,
  conflict,
  forbidden,
  HttpError,
  notFound,
  payloadTooLarge,
  serviceUnavailable,
  unauthorized,
  unprocessable,
  unsupportedMediaType,
} from './errors.ts';
import { RETRY_AFTER_SECONDS, unavailableDependency } from './unavailable.ts';

const prototypeMember = () =>
  badRequest('The request body has a member named __proto__', [
    { path: 'body', message: 'must not have a member named __proto__' },
  ]);
const notJson = () => badRequest('The request body is not valid JSON');

/** Our JSON reader's syntax errors, and libraries' errors that carry `status` (http-errors style). */
function fromLibraryError(err: unknown): HttpError | undefined {
  if (err instanceof HttpError) return err;
  if (err instanceof BodySyntaxError) return err.prototypeMember ? prototypeMember() : notJson();
  if (typeof err !== 'object' || err === null) return undefined;
  const e = err as { status?: number; statusCode?: number; type?: string; message?: string; expose?: boolean };
  const status = e.status ?? e.statusCode;
  if (status === 413 || e.type === 'entity.too.large')
    return payloadTooLarge('The request body is larger than the limit');
  if (status === 415) return unsupportedMediaType(e.message ?? 'Unsupported content type');
  if (status && status >= 400 && status < 500 && e.expose)
    return new HttpError(status, STATUS_CODES[status] ?? 'Error', e.message);
  return undefined;
}

/** The use cases' errors (shared/errors.ts), in HTTP terms. */
export function fromDomainError(err: DomainError): HttpError {
  switch (err.kind) {
    case 'invalid':
      return unprocessable(err.errors, err.message);
    case 'not_found':
      return notFound(err.message);
    case 'forbidden':
      return forbidden(err.message);
    case 'conflict':
      return conflict(err.message, err.errors);
    case 'unauthorized':
      return unauthorized(err.message);
    default: {
      const unknownKind: never = err.kind;
      throw new Error(`unmapped domain error kind ${String(unknownKind)}`);
    }
  }
}

/**
 * The one error renderer, first in the chain: every service answers in its own format.
 * A dependency that is down (PostgreSQL, Redis) is a 503 with Retry-After, logged at warn
 * without a stack (an outage would otherwise print one per request); anything else unknown
 * is a 500 without details.
 */
export function errorHandler(logger: Logger, errorFormatOf: ErrorFormatOf = () => 'problem'): Middleware {
  return async (ctx, next) => {
    try {
      await next();
      if (ctx.status === 404 && ctx.body === undefined) throw notFound(`No route for ${ctx.method} ${ctx.path}`);
      // The routers' allowedMethods() set a bare 405 (with Allow) or 501: answered in the service's format.
      if ((ctx.status === 405 || ctx.status === 501) && ctx.body == null)
        throw new HttpError(
          ctx.status,
          STATUS_CODES[ctx.status] ?? 'Error',
          `${ctx.method} is not allowed on ${ctx.path}`,
        );
    } catch (err) {
      const log = ctx.state.log ?? logger;
      let error = err instanceof DomainError ? fromDomainError(err) : fromLibraryError(err);
      if (!error) {
        const unavailable = unavailableDependency(err);
        if (unavailable) {
          log.warn(unavailable, 'dependency unavailable: answering 503');
          error = serviceUnavailable(RETRY_AFTER_SECONDS);
        } else {
          log.error({ err }, 'unhandled error');
          error = new HttpError(500, 'Internal Server Error', 'An unexpected error occurred');
        }
      }
      const format = ctx.state.errorFormat ?? errorFormatOf(ctx.path);
      const rendered = renderError(format, error, ctx.path);
      ctx.status = error.status;
      ctx.set(error.headers);
      ctx.type = rendered.contentType;
      ctx.body = rendered.body;
    }
  };
}
