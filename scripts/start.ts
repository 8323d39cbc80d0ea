// First: V8 settings apply before anything allocates.
import '../shared/runtime/gc-tuning.ts';
import { startTracingIfConfigured } from '../shared/observability/start-tracing.ts';

/**
 * `npm start`: the API and the workers in one process (scripts/start-system.ts). OpenTelemetry,
 * when configured, starts before the rest is imported: its instrumentations patch modules as they
 * load.
 */
await startTracingIfConfigured('sports-backend');
await import('./start-system.ts');
