import { RedisUnavailableError } from '../../shared/queue/queues.ts';

/** What the request could not reach, and how the failure showed (a code or a short message). */
export interface Unavailable {
  dependency: 'postgres' | 'redis' | 'network';
  reason: string;
}

/** How long clients are told to wait: a PostgreSQL or Redis restart takes a few seconds. */
export const RETRY_AFTER_SECONDS = 5;

/** Socket failures: the server is down, restarting, or unreachable (any TCP dependency). */
const SOCKET_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EHOSTDOWN',
  'EAI_AGAIN',
  'ENOTFOUND',
]);

/**
 * PostgreSQL states that mean "not now" rather than "wrong request": admin or crash shutdown,
 * starting up (57P01-57P03), connection exceptions (class 08), too many connections (53300).
 */
function isPostgresUnavailableCode(code: string): boolean {
  return code === '57P01' || code === '57P02' || code === '57P03' || code === '53300' || code.startsWith('08');
}

/** pg and pg-pool raise these as plain Errors, without a code. */
const POSTGRES_MESSAGES =
  /^(timeout exceeded when trying to connect|Connection terminated|Client has encountered a connection error)/;
/** ioredis, when a fail-fast connection is down. */
const REDIS_MESSAGES = /^(Stream isn't writeable and enableOfflineQueue options is false|Connection is closed\.)/;

function classifyOne(error: unknown): Unavailable | undefined {
  if (error instanceof RedisUnavailableError) return { dependency: 'redis', reason: error.message };
  if (typeof error !== 'object' || error === null) return undefined;
  const e = error as { code?: unknown; message?: unknown; name?: unknown; syscall?: unknown; severity?: unknown };
  const code = typeof e.code === 'string' ? e.code : undefined;
  const message = typeof e.message === 'string' ? e.message : '';
  // A pg DatabaseError carries a SQLSTATE and a severity.
  if (code && /^[0-9A-Z]{5}$/.test(code) && typeof e.severity === 'string')
    return isPostgresUnavailableCode(code) ? { dependency: 'postgres', reason: code } : undefined;
  if (code && SOCKET_CODES.has(code)) return { dependency: 'network', reason: code };
  // A unix socket that is not there: the server is stopped.
  if (code === 'ENOENT' && e.syscall === 'connect') return { dependency: 'network', reason: code };
  if (POSTGRES_MESSAGES.test(message)) return { dependency: 'postgres', reason: message };
  if (e.name === 'MaxRetriesPerRequestError' || REDIS_MESSAGES.test(message))
    return { dependency: 'redis', reason: message };
  return undefined;
}

/**
 * Whether an error means a dependency is unavailable (the request may succeed later, answered
 * 503 with Retry-After) and which one. Looks through `cause` chains and AggregateErrors (Node
 * reports a failed connection to several addresses as one).
 */
export function unavailableDependency(error: unknown): Unavailable | undefined {
  const queue: unknown[] = [error];
  // Bounded: a cause chain may loop.
  for (let seen = 0; queue.length > 0 && seen < 20; seen++) {
    const current = queue.shift();
    const found = classifyOne(current);
    if (found) return found;
    if (typeof current !== 'object' || current === null) continue;
    if (current instanceof AggregateError) queue.push(...current.errors);
    if ('cause' in current) queue.push(current.cause);
  }
  return undefined;
}
