/** One problem in a request: where (`body.geometry.coordinates`, `query.radius`) and what. */
export interface FieldError {
  path: string;
  message: string;
}

/** What went wrong, in the domain's words; api/http/error-handler.ts maps each kind to a status. */
export type DomainErrorKind = 'invalid' | 'not_found' | 'forbidden' | 'conflict' | 'unauthorized';

/**
 * The errors use cases in shared/ throw. They know nothing of HTTP: the API renders them in the
 * called service's format, a CLI or a worker prints them.
 */
export class DomainError extends Error {
  readonly kind: DomainErrorKind;
  readonly errors: FieldError[];

  constructor(kind: DomainErrorKind, message: string, errors: FieldError[] = []) {
    super(message);
    this.kind = kind;
    this.errors = errors;
  }
}

/**
 * Bytes that are not a JSON body at all (a 400), as opposed to a body with bad values (`invalid`,
 * a 422): what a body parser of ours throws, on the event loop or in a worker thread.
 */
export class BodySyntaxError extends Error {
  /** The body has a `__proto__` member (prototype poisoning), refused as the JSON body parser does. */
  readonly prototypeMember: boolean;
  constructor(message: string, prototypeMember = false) {
    super(message);
    this.name = 'BodySyntaxError';
    this.prototypeMember = prototypeMember;
  }
}

/** Input that breaks a rule; each problem names its field. */
export const invalid = (errors: FieldError[], message = 'The request has invalid values') =>
  new DomainError('invalid', message, errors);
/** Missing, or not visible to the caller (no existence leak). */
export const notFoundError = (message: string) => new DomainError('not_found', message);
/** Visible to the caller, but not theirs to change. */
export const forbiddenError = (message: string) => new DomainError('forbidden', message);
export const conflictError = (message: string, errors: FieldError[] = []) =>
  new DomainError('conflict', message, errors);
export const unauthorizedError = (message: string) => new DomainError('unauthorized', message);
