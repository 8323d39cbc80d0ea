import http from 'node:http';
import https from 'node:https';
import type { LookupFunction } from 'node:net';
import { type ResolvedTarget, resolveTarget, TargetRefused, type TargetRules } from './target.ts';

/**
 * One HTTP attempt of a delivery (docs/webhooks.md, "Safety"): the URL is resolved and checked
 * (target.ts) and the connection goes to the checked address, the name kept for the Host header
 * and TLS (SNI and the certificate check). No redirect is followed, the whole attempt (look-up
 * included) ends after `timeoutMs`, and at most MAX_ANSWER_BYTES of the answer are read.
 */

/** The most of an answer read: past it the connection is closed (the status is known by then). */
export const MAX_ANSWER_BYTES = 64 * 1024;
/** Characters of a refusing answer kept in the attempt's `error`. */
const EXCERPT_CHARS = 200;

export interface SendOptions {
  rules: TargetRules;
  timeoutMs: number;
}

export interface SendResult {
  /** A 2xx answer. */
  ok: boolean;
  statusCode: number | null;
  durationMs: number;
  /** Why it failed, in words; null on success. */
  error: string | null;
}

// Keep-alive: a receiver that gets many deliveries keeps its connections. A pooled connection
// was made to a checked address; a new one is checked again (the `lookup` of each request).
const agents = {
  'http:': new http.Agent({ keepAlive: true, maxSockets: 64, timeout: 30_000 }),
  'https:': new https.Agent({ keepAlive: true, maxSockets: 64, timeout: 30_000 }),
};

/**
 * A DNS lookup that answers the checked addresses, whatever the name resolves to now (Node tries
 * them in turn when it asks for all, as it does by default).
 */
function pinnedLookup(target: ResolvedTarget): LookupFunction {
  return (_host, options, callback) => {
    const [first] = target.addresses;
    if (options.all) callback(null, target.addresses);
    else if (first) callback(null, first.address, first.family);
  };
}

/** A readable excerpt of the start of an answer. */
function excerpt(bytes: Buffer): string {
  const text = bytes.toString('utf8').replace(/\s+/g, ' ').trim();
  return text.length > EXCERPT_CHARS ? `${text.slice(0, EXCERPT_CHARS)}…` : text;
}

function describe(error: unknown): string {
  const e = error as NodeJS.ErrnoException;
  const known: Record<string, string> = {
    ECONNREFUSED: 'connection refused',
    ECONNRESET: 'connection reset by the receiver',
    EPIPE: 'connection closed by the receiver',
    ETIMEDOUT: 'connection timed out',
    EHOSTUNREACH: 'host unreachable',
    ENETUNREACH: 'network unreachable',
  };
  const words = (e.code && known[e.code]) || e.message || String(error);
  return (e.code && !words.includes(e.code) ? `${words} (${e.code})` : words).slice(0, 500);
}

/** POSTs `body` to the checked target; resolves with the status and the start of the answer. */
function post(
  target: ResolvedTarget,
  headers: Record<string, string>,
  body: string,
  signal: AbortSignal,
): Promise<{ statusCode: number; head: Buffer; location: string | undefined }> {
  return new Promise((resolve, reject) => {
    const protocol = target.url.protocol as 'http:' | 'https:';
    const request = (protocol === 'https:' ? https : http).request(target.url, {
      method: 'POST',
      agent: agents[protocol],
      lookup: pinnedLookup(target),
      signal,
      headers: {
        ...headers,
        'content-type': 'application/json',
        'content-length': String(Buffer.byteLength(body)),
        'user-agent': 'sports-backend-webhooks/1',
      },
    });
    request.on('error', reject);
    request.on('response', (response) => {
      const chunks: Buffer[] = [];
      let read = 0;
      const done = () =>
        resolve({
          statusCode: response.statusCode ?? 0,
          head: Buffer.concat(chunks),
          location: response.headers.location,
        });
      response.on('data', (chunk: Buffer) => {
        if (read < EXCERPT_CHARS * 4) chunks.push(chunk);
        read += chunk.length;
        if (read > MAX_ANSWER_BYTES) {
          // Enough: the rest is never read, and the connection is not reused.
          response.destroy();
          done();
        }
      });
      response.on('end', done);
      response.on('error', reject);
    });
    request.end(body);
  });
}

/** Sends one signed delivery; never throws (a failure is a result with its reason). */
export async function sendWebhook(
  url: string,
  headers: Record<string, string>,
  body: string,
  options: SendOptions,
): Promise<SendResult> {
  const started = performance.now();
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), options.timeoutMs);
  const timedOut = new Promise<never>((_, reject) =>
    controller.signal.addEventListener('abort', () => reject(controller.signal.reason), { once: true }),
  );
  // Never unhandled: a race below may have ended before the timer fires.
  timedOut.catch(() => {});
  const result = (statusCode: number | null, error: string | null): SendResult => ({
    ok: error === null,
    statusCode,
    durationMs: Math.round(performance.now() - started),
    error,
  });
  try {
    const target = await Promise.race([resolveTarget(url, options.rules), timedOut]);
    const answer = await Promise.race([post(target, headers, body, controller.signal), timedOut]);
    const { statusCode } = answer;
    if (statusCode >= 200 && statusCode < 300) return result(statusCode, null);
    if (statusCode >= 300 && statusCode < 400)
      return result(statusCode, `HTTP ${statusCode}: redirect to ${answer.location ?? '(no Location)'} not followed`);
    const text = excerpt(answer.head);
    return result(statusCode, `HTTP ${statusCode}${text ? `: ${text}` : ''}`);
  } catch (error) {
    if (controller.signal.aborted) return result(null, `no answer within ${options.timeoutMs} ms`);
    if (error instanceof TargetRefused) return result(null, `refused: ${error.message}`);
    return result(null, describe(error));
  } finally {
    clearTimeout(timer);
  }
}
