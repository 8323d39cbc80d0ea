import { setFlagsFromString } from 'node:v8';

/**
 * Imported first by every entry point (API, workers, `npm start`), before anything allocates.
 * V8 otherwise starts a full mark of the heap each time its ArrayBuffer memory (Buffers, typed
 * arrays) has grown by 64 MB since the last one, counting buffers no longer used but not yet
 * collected. A create of a 1-hour activity allocates about 3 MB of short-lived buffers (the body,
 * its columns, the driver's message), so under load the API marked its heap several times a
 * second: 13.6 ms of CPU per create, 9–11 ms with this flag, which counts that memory in V8's
 * ordinary, adaptive limit instead (bench/README.md, tracking-ingest).
 */
setFlagsFromString('--external-memory-accounted-in-global-limit');
