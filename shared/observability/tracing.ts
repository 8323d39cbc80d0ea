/**
 * The seam between our code and OpenTelemetry, so nothing of OpenTelemetry loads unless it is
 * configured: otel.ts installs real hooks when OTEL_EXPORTER_OTLP_ENDPOINT is set; otherwise
 * these pass-throughs stay.
 */
export interface TracingHooks {
  /** The traceparent of the active span (a job written now continues it), if any. */
  activeTraceparent(): string | undefined;
  /** The trace and span ids of the active span, if any (the log lines' `traceId` and `spanId`). */
  activeSpanIds(): { traceId: string; spanId: string } | undefined;
  /** Runs `fn` in a span `name` whose parent is `traceparent` (a job continuing its request's trace). */
  inSpan<T>(
    name: string,
    traceparent: string | undefined,
    attributes: Record<string, string>,
    fn: () => Promise<T>,
  ): Promise<T>;
  /** Exports what is buffered (before the process exits). */
  flush(): Promise<void>;
}

let hooks: TracingHooks = {
  activeTraceparent: () => undefined,
  activeSpanIds: () => undefined,
  inSpan: (_name, _parent, _attributes, fn) => fn(),
  flush: async () => {},
};

export function installTracing(installed: TracingHooks): void {
  hooks = installed;
}

export function tracing(): TracingHooks {
  return hooks;
}
