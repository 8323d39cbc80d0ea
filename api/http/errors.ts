import type { FieldError } from '../../shared/errors.ts';

/** One problem in a request: where (`body.geometry.coordinates`, `query.radius`) and what. */
export type { FieldError };

/**
 * Every error a client is meant to see. One middleware (error-handler.ts) renders it in the
 * format of the service that was called; anything else becomes a 500 without details.
 */
export class HttpError extends Error {
  readonly status: number;
  readonly title: string;
  readonly errors: FieldError[];
  readonly headers: Record<string, string>;

  constructor(
    status: number,
    title: string,
    detail?: string,
    errors: FieldError[] = [],
    headers: Record<string, string> = {},
  ) {
    super(detail ?? title);
    this.status = status;
    this.title = title;
    this.errors = errors;
    this.headers = headers;
  }
}

export const badRequest = (detail: string, errors: FieldError[] = []) =>
  new HttpError(400, 'Bad Request', detail, errors);
export const unauthorized = (detail = 'A valid access token is required') =>
  new HttpError(401, 'Unauthorized', detail, [], { 'WWW-Authenticate': 'Bearer' });
export const forbidden = (detail: string) => new HttpError(403, 'Forbidden', detail);
export const notFound = (detail = 'Resource not found') => new HttpError(404, 'Not Found', detail);
export const conflict = (detail: string, errors: FieldError[] = []) => new HttpError(409, 'Conflict', detail, errors);
export const payloadTooLarge = (detail: string) => new HttpError(413, 'Payload Too Large', detail);
export const unsupportedMediaType = (detail: string) => new HttpError(415, 'Unsupported Media Type', detail);
export const unprocessable = (errors: FieldError[], detail = 'The request has invalid values') =>
  new HttpError(422, 'Unprocessable Entity', detail, errors);
export const tooManyRequests = (retryAfterSeconds: number) =>
  new HttpError(429, 'Too Many Requests', `Rate limit exceeded; retry in ${retryAfterSeconds} s`, [], {
    'Retry-After': String(retryAfterSeconds),
  });
/** A dependency (PostgreSQL, Redis) is down: the client may send the same request again later. */
export const serviceUnavailable = (retryAfterSeconds: number) => {
  const detail = `The service is temporarily unavailable; retry in ${retryAfterSeconds} s`;
  return new HttpError(503, 'Service Unavailable', detail, [], { 'Retry-After': String(retryAfterSeconds) });
};
