/**
 * Starts OpenTelemetry when OTEL_EXPORTER_OTLP_ENDPOINT is set, and loads nothing of it otherwise.
 * Entry points await it before importing the rest: the instrumentations patch pg, ioredis, koa
 * and http as those load. Read from the environment, not from config.ts: it must run before the
 * configuration (and everything it imports) loads.
 */
export async function startTracingIfConfigured(serviceName: string): Promise<void> {
  if (!process.env.OTEL_EXPORTER_OTLP_ENDPOINT) return;
  const { startOpenTelemetry } = await import('./otel.ts');
  await startOpenTelemetry(serviceName);
}
