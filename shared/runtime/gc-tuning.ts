import { setFlagsFromString } from 'node:v8';

/**
 * Imported first by every entry point (API, workers, `npm start`), before anything allocates.
 * V8 otherwise starts a full mark of the heap each time its ArrayBuffer memory (Buffers, typed
 * arrays) has grown by 64 MB since the last one, counting buffers no longer used but not yet
 * collected. A create of a long activity allocates megabytes of short-lived buffers (the body,
 * its columns, the driver's message), so under load the API would mark its heap several times a
 * second; this flag counts that memory in V8's ordinary, adaptive limit instead (the CPU per
 * create with and without it: bench/README.md, tracking-ingest).
 */
setFlagsFromString('--external-memory-accounted-in-global-limit');
