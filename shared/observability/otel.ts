import { createRequire, register } from 'node:module';
import { context, isSpanContextValid, propagation, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { HttpInstrumentation } from '@opentelemetry/instrumentation-http';
import { IORedisInstrumentation } from '@opentelemetry/instrumentation-ioredis';
import { KoaInstrumentation } from '@opentelemetry/instrumentation-koa';
import { PgInstrumentation } from '@opentelemetry/instrumentation-pg';
import { NodeSDK } from '@opentelemetry/sdk-node';
import { installTracing } from './tracing.ts';

/** Modules our code and BullMQ import as ESM: only they go through the import hook. */
const HOOKED = ['pg', 'pg-pool', 'ioredis', 'koa', 'http', 'node:http'];

/**
 * Loaded by start-tracing.ts only when OTEL_EXPORTER_OTLP_ENDPOINT is set. The exporter reads the
 * standard OTEL_* variables (endpoint, headers, OTEL_SERVICE_NAME, OTEL_BSP_*).
 */
export async function startOpenTelemetry(serviceName: string): Promise<void> {
  // ESM imports bypass require(): the instrumentations see them through the import-in-the-middle
  // loader that @opentelemetry/instrumentation ships (not in its exports map: resolved by path).
  const require = createRequire(import.meta.url);
  register(require.resolve('@opentelemetry/instrumentation/hook.mjs'), import.meta.url, {
    data: { include: HOOKED },
  });
  const sdk = new NodeSDK({
    ...(process.env.OTEL_SERVICE_NAME ? {} : { serviceName }),
    traceExporter: new OTLPTraceExporter(),
    instrumentations: [
      new HttpInstrumentation(),
      new KoaInstrumentation(),
      new PgInstrumentation(),
      new IORedisInstrumentation(),
    ],
  });
  sdk.start();
  const tracer = trace.getTracer('sports-backend');
  installTracing({
    activeTraceparent: () => {
      const carrier: Record<string, string> = {};
      propagation.inject(context.active(), carrier);
      return carrier.traceparent;
    },
    activeSpanIds: () => {
      const span = trace.getActiveSpan()?.spanContext();
      return span && isSpanContextValid(span) ? { traceId: span.traceId, spanId: span.spanId } : undefined;
    },
    inSpan: (name, traceparent, attributes, fn) => {
      const parent = traceparent ? propagation.extract(context.active(), { traceparent }) : context.active();
      return tracer.startActiveSpan(name, { kind: SpanKind.CONSUMER, attributes }, parent, async (span) => {
        try {
          return await fn();
        } catch (error) {
          span.recordException(error as Error);
          span.setStatus({ code: SpanStatusCode.ERROR });
          throw error;
        } finally {
          span.end();
        }
      });
    },
    flush: () => sdk.shutdown(),
  });
}
