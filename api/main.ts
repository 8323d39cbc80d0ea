// First: V8 settings apply before anything allocates.
import '../shared/runtime/gc-tuning.ts';
import { startTracingIfConfigured } from '../shared/observability/start-tracing.ts';

/**
 * `npm run api`: the HTTP API alone (scale it separately from the workers). OpenTelemetry, when
 * configured, starts before the rest is imported: its instrumentations patch modules as they load.
 */
await startTracingIfConfigured('sports-api');
await import('./run.ts');
