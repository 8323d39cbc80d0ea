import { type RequestContext, validTraceparent } from '../observability/request-context.ts';

/**
 * The request a job follows travels in BullMQ's `opts.telemetry.metadata`, BullMQ's own slot for
 * context carried from producer to consumer, so a job's data stays exactly its typed payload
 * (jobs.ts). It holds a W3C carrier as JSON (`{"traceparent": ..., "requestId": ...}`), the form
 * BullMQ's own telemetry reads, should it be switched on one day. We configure no BullMQ
 * telemetry, so BullMQ leaves the slot alone.
 */
export function encodeJobMeta(requestId: string | null, traceparent: string | null): string | undefined {
  if (requestId === null && traceparent === null) return undefined;
  return JSON.stringify({ ...(traceparent ? { traceparent } : {}), ...(requestId ? { requestId } : {}) });
}

/** What a job carries of its request; undefined for a job written outside one (or by hand). */
export function decodeJobMeta(metadata: string | undefined): Partial<RequestContext> | undefined {
  if (!metadata) return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(metadata);
  } catch {
    return undefined;
  }
  if (typeof parsed !== 'object' || parsed === null) return undefined;
  const { requestId, traceparent } = parsed as Record<string, unknown>;
  const trace = typeof traceparent === 'string' ? validTraceparent(traceparent) : undefined;
  if (typeof requestId === 'string' && requestId !== '') return { requestId, ...(trace ? { traceparent: trace } : {}) };
  return trace ? { traceparent: trace } : undefined;
}
