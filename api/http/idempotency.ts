import { Readable } from 'node:stream';
import { buffer } from 'node:stream/consumers';
import type { Context, Middleware } from 'koa';
import { z } from 'zod';
import {
  answerIsKept,
  keyScope,
  mediaTypeFingerprint,
  parseIdempotencyKey,
  type RequestFingerprint,
  requestDifference,
  sameBody,
} from '../../shared/idempotency/key.ts';
import {
  type Claim,
  claimKey,
  type KeyRef,
  recordAnswer,
  releaseKey,
  renewKey,
  type StoredAnswer,
} from '../../shared/idempotency/store.ts';
import type { AppContext } from '../context.ts';
import type { Access } from './access.ts';
import type { ErrorFormat } from './error-format.ts';
import { errorResponse } from './error-schemas.ts';
import { badRequest, HttpError, unprocessable } from './errors.ts';
import { digestRetryBody, tapRequestBody } from './idempotency-body.ts';
import type { ResponseSpec } from './response-spec.ts';

/**
 * `Idempotency-Key` on the operations that create (docs/idempotency.md): an operation declared
 * `idempotent` (every resource's `create`) claims the caller's key before its body is read, and
 * keeps its success for the retries; the rules are in shared/idempotency/.
 */

const HEADER = 'idempotency-key';
const FIELD = `headers.${HEADER}`;
export const REPLAYED_HEADER = 'Idempotent-Replayed';

/** The request header, as the operations that take it declare it (documented; parsed below). */
export const idempotencyKeyHeader = z.object({
  [HEADER]: z.string().optional().meta({
    description:
      'Makes the request safe to send again (docs/idempotency.md): a new key for each new request, such as a UUID, of 1 to 255 visible ASCII characters, bare or as a quoted string (`"..."`, as the IETF draft writes it). For one day, a retry with the same key and the same request gets the first success again (marked `Idempotent-Replayed: true`) and creates nothing more; the same key with another request is a 422, and while the first is still in progress a 409. An error keeps nothing: the key may be sent again.',
    example: '8e03978e-40d5-43e8-bc93-6894a57f9324',
  }),
});

/** The response header of a replayed answer, documented on the successes of those operations. */
export const replayedHeaders = z.object({
  [REPLAYED_HEADER]: z.literal('true').optional().meta({
    description: 'Present on an answer given again to a retry with the same Idempotency-Key: nothing new was created.',
  }),
});

/** Operations that take a key need a caller to keep it for: a token or an API key. */
export const accessHasCaller = (access: Access) => access === 'bearer' || access === 'bearer+key' || access === 'key';

/** The errors the header adds to an operation's documented ones (merged with what they already say). */
export function documentIdempotencyErrors(errors: Record<number, ResponseSpec>, format: ErrorFormat): void {
  const add = (status: number, text: string) => {
    const said = errors[status]?.description;
    errors[status] = errorResponse(format, said ? `${said}; or ${text}` : text);
  };
  add(400, 'an invalid Idempotency-Key');
  add(409, 'a request with the same Idempotency-Key is still in progress');
  add(422, 'an Idempotency-Key already used for another request');
}

const invalidKey = (problem: string) =>
  badRequest('The Idempotency-Key header is not a valid key', [{ path: FIELD, message: problem }]);

const inProgress = () =>
  new HttpError(
    409,
    'Conflict',
    'A request with this Idempotency-Key is still in progress: send it again once that one has answered',
    [{ path: FIELD, message: 'is held by a request in progress' }],
    { 'Retry-After': '1' },
  );

const reused = (difference: string) =>
  unprocessable(
    [{ path: FIELD, message: `was already used for another request: ${difference}` }],
    'This Idempotency-Key was already used for another request; send a new key with a new request',
  );

/** The middleware of an `idempotent` operation; `declared` are the request headers the operation declares. */
export function idempotency(app: Pick<AppContext, 'db' | 'config'>, declared: readonly string[]): Middleware {
  const options = { leaseSeconds: app.config.IDEMPOTENCY_LEASE_S, ttlSeconds: app.config.IDEMPOTENCY_KEY_TTL_S };
  const headers = declared.filter((name) => name !== HEADER);
  return async (ctx, next) => {
    const value = ctx.headers[HEADER];
    if (value === undefined) return next();
    const parsed = parseIdempotencyKey(Array.isArray(value) ? value.join(', ') : value);
    if ('problem' in parsed) throw invalidKey(parsed.problem);
    const caller = { accountId: ctx.state.principal?.accountId, clientId: ctx.state.apiKey?.clientId };
    const scope = keyScope(caller);
    // The declaration refuses operations without a caller (accessHasCaller): a key of nobody's is ignored.
    if (!scope) return next();
    const ref = { scope, key: parsed.key };
    const request = fingerprintOf(ctx, headers);
    const claim = await claimKey(app.db, { ...ref, accountId: caller.accountId }, request, options);
    if (claim.kind === 'in_flight') throw inProgress();
    if (claim.kind === 'done') return replay(ctx, claim, request);
    await runClaimed(ctx, next, app, ref, claim.owner);
  };
}

function fingerprintOf(ctx: Context, headers: readonly string[]): RequestFingerprint {
  return {
    method: ctx.method,
    path: ctx.originalUrl,
    contentType: mediaTypeFingerprint(ctx.get('content-type')),
    headers: Object.fromEntries(headers.flatMap((name) => (ctx.get(name) ? [[name, ctx.get(name)]] : []))),
  };
}

/** The first answer again, if this is the same request (its body is read to tell). */
async function replay(ctx: Context, first: Extract<Claim, { kind: 'done' }>, request: RequestFingerprint) {
  const difference = requestDifference(first.request, request);
  if (difference) throw reused(difference);
  if (!sameBody(first.body, await digestRetryBody(ctx, first.body.size))) throw reused('its body was another');
  const { answer } = first;
  ctx.status = answer.status;
  ctx.body = answer.body;
  ctx.set(answer.headers);
  if (answer.contentType) ctx.set('Content-Type', answer.contentType);
  ctx.set(REPLAYED_HEADER, 'true');
}

/**
 * Runs the operation under its claim, renewed while it runs; keeps a success, releases the key
 * otherwise (an error, or a body its reader left unread). The answer is recorded right after the
 * operation's own commit: a process dying in between leaves the key claimed until its lease
 * lapses, after which a retry runs again (docs/idempotency.md).
 */
async function runClaimed(
  ctx: Context,
  next: () => Promise<unknown>,
  app: Pick<AppContext, 'db' | 'config'>,
  ref: KeyRef,
  owner: string,
): Promise<void> {
  const { db, config } = app;
  const log = ctx.state.log;
  const tap = tapRequestBody(ctx);
  const renewal = setInterval(
    () => void renewKey(db, ref, owner, config.IDEMPOTENCY_LEASE_S).catch(() => {}),
    (config.IDEMPOTENCY_LEASE_S * 1000) / 3,
  );
  renewal.unref();
  const before = { ...ctx.response.headers };
  let settled = false;
  try {
    await next();
    const body = tap.digest();
    if (!answerIsKept(ctx.status) || !body) return;
    // From here the key stays claimed whatever happens: the object exists.
    settled = true;
    const answer = await freezeAnswer(ctx, before);
    try {
      if (!(await recordAnswer(db, ref, owner, body, answer, config.IDEMPOTENCY_KEY_TTL_S)))
        log?.warn('idempotency key: its lease lapsed and another request took it; answer not kept');
    } catch (err) {
      // The client still gets its answer; a retry waits (409) until the lease lapses, then runs again.
      log?.warn({ err }, 'idempotency key: answer not recorded; the key is free again once its lease lapses');
    }
  } finally {
    clearInterval(renewal);
    tap.abandon();
    if (!settled)
      await releaseKey(db, ref, owner).catch((err) =>
        log?.warn({ err }, 'idempotency key: not released; it is free again once its lease lapses'),
      );
  }
}

/** Headers that belong to the body, not to what the operation said. */
const BODY_HEADERS = new Set(['content-type', 'content-length']);

/**
 * The answer as bytes, and the headers the operation set (Location, Import-*): what a retry gets.
 * The response then sends those same bytes.
 */
async function freezeAnswer(ctx: Context, before: Record<string, unknown>): Promise<StoredAnswer> {
  const body: unknown = ctx.body;
  const bytes =
    body == null
      ? Buffer.alloc(0)
      : Buffer.isBuffer(body)
        ? body
        : typeof body === 'string'
          ? Buffer.from(body)
          : body instanceof Readable
            ? await buffer(body)
            : Buffer.from(JSON.stringify(body));
  if (body != null && bytes !== body) ctx.body = bytes;
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(ctx.response.headers))
    if (!BODY_HEADERS.has(name) && typeof value !== 'object' && before[name] !== value) headers[name] = String(value);
  return { status: ctx.status, contentType: ctx.response.get('Content-Type') || undefined, headers, body: bytes };
}
