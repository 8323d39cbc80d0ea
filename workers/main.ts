// First: V8 settings apply before anything allocates.
import '../shared/runtime/gc-tuning.ts';
import { setPriority } from 'node:os';
import { startTracingIfConfigured } from '../shared/observability/start-tracing.ts';

/**
 * `npm run worker`: the queues named in WORKER_QUEUES (default all) and the outbox relay.
 * OpenTelemetry, when configured, starts before the rest is imported: its instrumentations patch
 * modules as they load.
 */
// Before any thread of ours starts: threads inherit their creator's nice value (Linux).
const nice = Number(process.env.WORKER_NICE ?? 0);
if (Number.isInteger(nice) && nice > 0 && nice <= 19) setPriority(0, nice);
await startTracingIfConfigured('sports-worker');
await import('./run.ts');
