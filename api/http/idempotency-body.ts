import type { Context } from 'koa';
import { BodyDigest } from '../../shared/idempotency/body-digest.ts';
import type { BodyFingerprint } from '../../shared/idempotency/key.ts';
import { badRequest } from './errors.ts';
import { requestCopy } from './raw-body.ts';

/** Whether the request has a body at all (RFC 9112: a length, or a chunked transfer). */
const hasBody = (ctx: Context) => ctx.get('transfer-encoding') !== '' || (ctx.request.length ?? 0) > 0;

export interface BodyTap {
  /** The digest of the whole body, once its reader read it all (an empty body at once); else undefined. */
  digest(): BodyFingerprint | undefined;
  /** Leaves the rest of a body its reader did not finish unread: the connection closes after the answer. */
  abandon(): void;
}

/**
 * Digests the request body while the operation's own input reads it (api/http/inputs.ts): the
 * context gets a copy of the request that hands on each chunk as it arrives, so the bytes are
 * neither buffered twice nor read before the operation's limits apply.
 */
export function tapRequestBody(ctx: Context): BodyTap {
  const original = ctx.req;
  const digest = new BodyDigest(ctx.get('content-type'));
  if (!hasBody(ctx)) {
    const empty = digest.digest();
    return { digest: () => empty, abandon: () => {} };
  }
  const copy = requestCopy(original);
  let done: BodyFingerprint | undefined;
  let flowing = false;
  const onData = (chunk: Buffer) => {
    digest.update(chunk);
    if (!copy.push(chunk)) original.pause();
  };
  // Starts once the reader asks for bytes, and again each time it wants more.
  copy._read = () => {
    if (!flowing) original.on('data', onData);
    flowing = true;
    original.resume();
  };
  original.once('end', () => {
    done = digest.digest();
    copy.complete = true;
    copy.push(null);
  });
  original.once('error', (error) => copy.destroy(error));
  ctx.req = copy;
  ctx.request.req = copy;
  ctx.response.req = copy;
  return {
    digest: () => done,
    abandon: () => {
      // A body nobody began reading is drained by Node as usual.
      if (done || !flowing) return;
      original.off('data', onData);
      original.pause();
      ctx.set('Connection', 'close');
    },
  };
}

/**
 * The digest of the body of a retry, read here since the operation will not run: undefined as
 * soon as it is longer than `firstSize` (it cannot be the same body; the rest is left unread
 * and the connection closes after the answer).
 */
export function digestRetryBody(ctx: Context, firstSize: number): Promise<BodyFingerprint | undefined> {
  const digest = new BodyDigest(ctx.get('content-type'));
  if (!hasBody(ctx)) return Promise.resolve(digest.digest());
  const req = ctx.req;
  return new Promise((resolve, reject) => {
    const cleanup = () => {
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onError);
      req.off('close', onClose);
    };
    const onData = (chunk: Buffer) => {
      digest.update(chunk);
      if (digest.size <= firstSize) return;
      cleanup();
      req.pause();
      ctx.set('Connection', 'close');
      resolve(undefined);
    };
    const onEnd = () => {
      cleanup();
      resolve(digest.digest());
    };
    const onError = () => {
      cleanup();
      reject(badRequest('The request body was not received whole'));
    };
    const onClose = () => {
      if (!req.complete) onError();
    };
    req.on('data', onData);
    req.once('end', onEnd);
    req.once('error', onError);
    req.once('close', onClose);
  });
}
