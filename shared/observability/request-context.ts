import { AsyncLocalStorage } from 'node:async_hooks';
import { randomFillSync } from 'node:crypto';
import { tracing } from './tracing.ts';

/** What a request (or a job) passes on to the jobs it causes: docs/operations.md, "Following one request". */
export interface RequestContext {
  /** Absent for a job written by another job outside any request (a scheduled one's). */
  requestId?: string;
  /** The W3C trace context the work continues, when there is one. */
  traceparent?: string;
}

/**
 * Carried through the async calls of a request or a job, so the outbox writer finds it without
 * every use case passing it along. Empty outside (CLIs, schedulers): their rows get nulls.
 */
const storage = new AsyncLocalStorage<RequestContext>();

export function runWithRequestContext<T>(context: RequestContext, fn: () => T): T {
  return storage.run(context, fn);
}

export function requestContext(): RequestContext | undefined {
  return storage.getStore();
}

// version 00 only: a future version may change the layout (W3C Trace Context, section 3.2).
const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-[0-9a-f]{2}$/;

/** The header when it is a valid W3C traceparent (all-zero ids are invalid), else undefined. */
export function validTraceparent(value: string | undefined): string | undefined {
  const match = value === undefined ? null : TRACEPARENT.exec(value.trim());
  if (!match || /^0+$/.test(match[1] ?? '') || /^0+$/.test(match[2] ?? '')) return undefined;
  return value?.trim();
}

/**
 * A traceparent starting a new trace, for a request that brought none and has no span to take it
 * from (OpenTelemetry off). Sampled: a worker with OpenTelemetry on still records its jobs' spans.
 */
export function newTraceparent(): string {
  return `00-${randomHex(16)}-${randomHex(8)}-01`;
}

/**
 * Random bytes for new trace ids, drawn from the system's generator a pool at a time (as
 * crypto.randomUUID does) rather than one call per id: every request that brings no trace takes one.
 */
const RANDOM_POOL = Buffer.alloc(4096);
let poolOffset = RANDOM_POOL.length;

/** `bytes` random bytes as lowercase hex. */
function randomHex(bytes: number): string {
  if (poolOffset + bytes > RANDOM_POOL.length) {
    randomFillSync(RANDOM_POOL);
    poolOffset = 0;
  }
  poolOffset += bytes;
  return RANDOM_POOL.toString('hex', poolOffset - bytes, poolOffset);
}

/**
 * The `traceId` (and `spanId`) of a log line: the active span's with OpenTelemetry on, else the
 * trace of the request or job being served (no span of ours exists then). A new object each
 * call: pino mutates what its mixin returns.
 */
export function logTraceFields(): { traceId?: string; spanId?: string } {
  const span = tracing().activeSpanIds();
  if (span) return { traceId: span.traceId, spanId: span.spanId };
  const traceparent = storage.getStore()?.traceparent;
  // Validated on the way in: the trace id is the second field of a version-00 header.
  return traceparent ? { traceId: traceparent.slice(3, 35) } : {};
}
