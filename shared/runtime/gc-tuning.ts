import { setFlagsFromString } from 'node:v8';

/**
 * Imported first by the API and worker entry points, before anything allocates. V8 otherwise
 * starts a full mark of the heap every time 64 MB more of ArrayBuffer memory (Buffers, typed
 * arrays) has been allocated since the last one, however little of it is still alive. A create of
 * a 1-hour activity allocates a few MB of short-lived buffers (the body, its columns, the driver's
 * message), so at 60 creates/s the API was marking its whole heap three times a second: a third
 * of its CPU. This flag counts that memory in V8's ordinary, adaptive limit instead.
 * Measured in bench/README.md (tracking-ingest).
 */
setFlagsFromString('--external-memory-accounted-in-global-limit');
