// First: V8 settings apply before anything allocates.
import '../shared/runtime/gc-tuning.ts';
import { startTracingIfConfigured } from '../shared/observability/start-tracing.ts';

/**
 * `npm run worker`: the queues named in WORKER_QUEUES (default all) and the outbox relay.
 * OpenTelemetry, when configured, starts before the rest is imported: its instrumentations patch
 * modules as they load.
 */
await startTracingIfConfigured('sports-worker');
await import('./run.ts');
