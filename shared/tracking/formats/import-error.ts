import { DomainError } from '../../errors.ts';

/**
 * Why a file was refused, for the HTTP layer's status: `too-large` is 413, `unsupported-format`
 * 415, every other code 422 (the file is readable as a request but breaks a rule, `over-limit`
 * one of what an activity may hold).
 */
export type ImportErrorCode =
  /** Not a GPX, TCX or FIT file. */
  | 'unsupported-format'
  /** Over a limit of the reading itself (bytes, time, memory: limits.ts, pool.ts). */
  | 'too-large'
  /** More than an activity may hold (samples, track points, span: ACTIVITY_LIMITS); the message names the limit. */
  | 'over-limit'
  /** A construct refused for safety (DOCTYPE, entities). */
  | 'unsafe'
  /** Not well-formed XML, or a FIT file that is truncated or fails its CRC. */
  | 'malformed'
  /** Well-formed, but nothing an activity can be made of (no timed point, a route, times that never advance). */
  | 'no-activity';

/**
 * The one error the importers throw: a message that says why, in the user's terms. A DomainError
 * of kind `invalid`, so unmapped it renders as a 422 ConstraintViolationList on `path`.
 */
export class ImportError extends DomainError {
  readonly code: ImportErrorCode;

  constructor(code: ImportErrorCode, message: string, path = 'body') {
    super('invalid', message, [{ path, message }]);
    this.name = 'ImportError';
    this.code = code;
  }
}
