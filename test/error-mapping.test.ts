import Router from '@koa/router';
import test from 'ava';
import pg from 'pg';
import type { ErrorFormat } from '../api/http/error-format.ts';
import { fromDomainError } from '../api/http/error-handler.ts';
import { RETRY_AFTER_SECONDS, type Unavailable, unavailableDependency } from '../api/http/unavailable.ts';
import type { ServiceModule } from '../api/service-module.ts';
import { conflictError, forbiddenError, invalid, notFoundError, unauthorizedError } from '../shared/errors.ts';
import { RedisUnavailableError } from '../shared/queue/queues.ts';
import { startTestApi } from './helpers/app.ts';

const withCode = (message: string, code: string, extra: Record<string, unknown> = {}) =>
  Object.assign(new Error(message), { code, ...extra });

function databaseError(code: string, message: string): pg.DatabaseError {
  const error = new pg.DatabaseError(message, 0, 'error');
  error.code = code;
  error.severity = 'FATAL';
  return error;
}

/** Throws what `?throw=` names, under a prefix whose errors are in `format`. */
function thrower(name: 'places' | 'catalogue' | 'tracking', prefix: string, format: ErrorFormat): ServiceModule {
  const errors: Record<string, () => unknown> = {
    invalid: () => invalid([{ path: 'body.name', message: 'is taken' }]),
    not_found: () => notFoundError('Place not found'),
    forbidden: () => forbiddenError('Not yours'),
    conflict: () => conflictError('Already there'),
    unauthorized: () => unauthorizedError('Sign in first'),
    postgres_down: () => withCode('connect ECONNREFUSED 127.0.0.1:5432', 'ECONNREFUSED', { syscall: 'connect' }),
    postgres_shutdown: () => databaseError('57P01', 'terminating connection due to administrator command'),
    redis_down: () => new RedisUnavailableError('Redis is reconnecting'),
    bug: () => new TypeError('secret detail'),
  };
  return {
    name,
    routers: () => {
      const router = new Router({ prefix });
      router.get('/throw', (ctx) => {
        ctx.state.errorFormat = format;
        throw errors[String(ctx.query.throw)]?.() ?? new Error('unknown');
      });
      return [router];
    },
  };
}

const api = await startTestApi(null, {
  services: [
    thrower('places', '/api/v1', 'problem'),
    thrower('catalogue', '/sports', 'jsonapi'),
    thrower('tracking', '/v2', 'hydra'),
  ],
  env: { RATE_LIMIT_ENABLED: 'false' },
});
test.after.always(api.close);

test('unavailableDependency: PostgreSQL and Redis outages, and nothing else', (t) => {
  const down: [string, unknown, Unavailable['dependency']][] = [
    [
      'connection refused',
      withCode('connect ECONNREFUSED 127.0.0.1:5432', 'ECONNREFUSED', { syscall: 'connect' }),
      'network',
    ],
    ['reset', withCode('read ECONNRESET', 'ECONNRESET'), 'network'],
    ['timed out', withCode('connect ETIMEDOUT', 'ETIMEDOUT'), 'network'],
    ['unix socket gone', withCode('connect ENOENT /tmp/.s.PGSQL.5432', 'ENOENT', { syscall: 'connect' }), 'network'],
    [
      'every address refused',
      Object.assign(new AggregateError([withCode('refused', 'ECONNREFUSED')], 'all failed'), { code: 'ECONNREFUSED' }),
      'network',
    ],
    ['AggregateError without code', new AggregateError([withCode('refused', 'ECONNREFUSED')]), 'network'],
    ['admin shutdown', databaseError('57P01', 'terminating connection due to administrator command'), 'postgres'],
    [
      'crash shutdown',
      databaseError('57P02', 'terminating connection because of crash of another server process'),
      'postgres',
    ],
    ['starting up', databaseError('57P03', 'the database system is starting up'), 'postgres'],
    ['connection failure', databaseError('08006', 'connection failure'), 'postgres'],
    ['cannot connect', databaseError('08001', 'could not connect'), 'postgres'],
    ['too many connections', databaseError('53300', 'sorry, too many clients already'), 'postgres'],
    ['pool timeout', new Error('timeout exceeded when trying to connect'), 'postgres'],
    ['terminated', new Error('Connection terminated unexpectedly'), 'postgres'],
    [
      'terminated by timeout, with a cause',
      new Error('Connection terminated due to connection timeout', { cause: new Error('timeout expired') }),
      'postgres',
    ],
    ['not queryable', new Error('Client has encountered a connection error and is not queryable'), 'postgres'],
    ['wrapped', new Error('query failed', { cause: withCode('connect ECONNREFUSED', 'ECONNREFUSED') }), 'network'],
    ['redis producer', new RedisUnavailableError('Redis is reconnecting'), 'redis'],
    ['ioredis offline', new Error("Stream isn't writeable and enableOfflineQueue options is false"), 'redis'],
    ['ioredis closed', new Error('Connection is closed.'), 'redis'],
    [
      'ioredis retries',
      Object.assign(new Error('Reached the max retries per request limit'), { name: 'MaxRetriesPerRequestError' }),
      'redis',
    ],
  ];
  for (const [label, error, dependency] of down) t.is(unavailableDependency(error)?.dependency, dependency, label);

  const cyclic = new Error('loops');
  (cyclic as { cause?: unknown }).cause = cyclic;
  const notDown: [string, unknown][] = [
    ['a bug', new TypeError("Cannot read properties of undefined (reading 'x')")],
    ['unique violation', databaseError('23505', 'duplicate key value violates unique constraint')],
    ['bad byte sequence', databaseError('22021', 'invalid byte sequence for encoding "UTF8": 0x00')],
    ['out of range', databaseError('22003', 'integer out of range')],
    ['syntax', databaseError('42601', 'syntax error')],
    ['a file not found', withCode("ENOENT: no such file or directory, open 'x'", 'ENOENT', { syscall: 'open' })],
    ['a cause loop', cyclic],
    ['null', null],
    ['a string', 'ECONNREFUSED'],
  ];
  for (const [label, error] of notDown) t.is(unavailableDependency(error), undefined, label);
});

test('fromDomainError: each kind has its status', (t) => {
  const errors = [{ path: 'body.name', message: 'is taken' }];
  t.like(fromDomainError(invalid(errors)), { status: 422, errors });
  t.like(fromDomainError(notFoundError('Place not found')), { status: 404, message: 'Place not found' });
  t.like(fromDomainError(forbiddenError('Not yours')), { status: 403, message: 'Not yours' });
  t.like(fromDomainError(conflictError('Exists', errors)), { status: 409, errors });
  const unauthorized = fromDomainError(unauthorizedError('Sign in'));
  t.is(unauthorized.status, 401);
  t.deepEqual(unauthorized.headers, { 'WWW-Authenticate': 'Bearer' });
});

test('domain errors are rendered with their status in each service format', async (t) => {
  const expected: Record<string, number> = {
    invalid: 422,
    not_found: 404,
    forbidden: 403,
    conflict: 409,
    unauthorized: 401,
  };
  for (const [kind, status] of Object.entries(expected)) {
    const problem = await api.fetch(`/api/v1/throw?throw=${kind}`);
    t.is(problem.status, status, kind);
    t.regex(problem.headers.get('content-type') ?? '', /^application\/problem\+json/);
    t.like(await problem.json(), { status }, kind);
    const jsonapi = await api.fetch(`/sports/throw?throw=${kind}`);
    t.is(jsonapi.status, status, kind);
    t.like(((await jsonapi.json()) as { errors: unknown[] }).errors[0], { status: String(status) }, kind);
    const hydra = await api.fetch(`/v2/throw?throw=${kind}`);
    t.is(hydra.status, status, kind);
    t.like(await hydra.json(), { '@type': status === 422 ? 'ConstraintViolationList' : 'hydra:Error' }, kind);
  }
  const invalidBody = (await (await api.fetch('/api/v1/throw?throw=invalid')).json()) as { errors: unknown };
  t.deepEqual(invalidBody.errors, [{ path: 'body.name', message: 'is taken' }]);
  const hydraViolations = (await (await api.fetch('/v2/throw?throw=invalid')).json()) as { violations: unknown };
  t.deepEqual(hydraViolations.violations, [{ propertyPath: 'name', message: 'is taken' }]);
  t.is((await api.fetch('/api/v1/throw?throw=unauthorized')).headers.get('www-authenticate'), 'Bearer');
});

test('a dependency that is down is a 503 with Retry-After in each format; a bug stays a 500', async (t) => {
  for (const cause of ['postgres_down', 'postgres_shutdown', 'redis_down']) {
    const problem = await api.fetch(`/api/v1/throw?throw=${cause}`);
    t.is(problem.status, 503, cause);
    t.is(problem.headers.get('retry-after'), String(RETRY_AFTER_SECONDS));
    t.regex(problem.headers.get('content-type') ?? '', /^application\/problem\+json/);
    t.like(await problem.json(), { status: 503, title: 'Service Unavailable' });
  }
  const jsonapi = await api.fetch('/sports/throw?throw=postgres_down');
  t.is(jsonapi.status, 503);
  t.is(jsonapi.headers.get('retry-after'), String(RETRY_AFTER_SECONDS));
  t.regex(jsonapi.headers.get('content-type') ?? '', /^application\/vnd\.api\+json/);
  t.like(((await jsonapi.json()) as { errors: unknown[] }).errors[0], { status: '503' });
  const hydra = await api.fetch('/v2/throw?throw=postgres_down');
  t.is(hydra.status, 503);
  t.is(hydra.headers.get('retry-after'), String(RETRY_AFTER_SECONDS));
  t.like(await hydra.json(), { '@type': 'hydra:Error' });
  const bug = await api.fetch('/api/v1/throw?throw=bug');
  t.is(bug.status, 500);
  t.false((await bug.text()).includes('secret'));
});
