import { AsyncLocalStorage } from 'node:async_hooks';

/** What a request (or a job) passes on to the jobs it causes: docs/operations.md, "Following one request". */
export interface RequestContext {
  requestId: string;
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
