import { parentPort, threadId } from 'node:worker_threads';
import { BodySyntaxError, DomainError } from '../../errors.ts';
import type { Datastream, Track } from '../activities/data.ts';
import { parseActivityBody } from '../body/parse.ts';
import { ImportError } from '../formats/import-error.ts';
import { importActivityFile } from '../formats/import-file.ts';
import type { ImportTask, ImportTaskResult } from './pool.ts';

/**
 * The worker thread of the import pool (pool.ts): reads one file (the pure importers) or
 * parses one activity body (body/parse.ts) per message and posts the streams back, their typed
 * arrays moved rather than copied.
 */

/** The buffers under the streams' typed arrays, each once (moving one twice is an error). */
function transferables({ datastream, track }: { datastream: Datastream; track: Track }): ArrayBuffer[] {
  const arrays = [
    datastream.elapsed,
    ...datastream.channels.values(),
    track.elapsed,
    track.latitude,
    track.longitude,
    track.elevation,
  ];
  const buffers = new Set<ArrayBuffer>();
  for (const a of arrays) if (a.buffer instanceof ArrayBuffer && a.buffer.byteLength > 0) buffers.add(a.buffer);
  return [...buffers];
}

const port = parentPort;
if (!port) throw new Error('imports/worker.ts runs as a worker thread of the import pool');

port.on('message', (task: ImportTask) => {
  let result: ImportTaskResult;
  try {
    if (task.kind === 'json') {
      const body = parseActivityBody(task.bytes);
      result = { ok: true, body, threadId };
      port.postMessage(result, transferables(body));
    } else {
      const imported = importActivityFile(task.bytes, task.options);
      result = { ok: true, imported, threadId };
      port.postMessage(result, transferables(imported.content));
    }
    return;
  } catch (error) {
    if (error instanceof ImportError) result = { ok: false, code: error.code, message: error.message, threadId };
    else if (error instanceof BodySyntaxError)
      result = { ok: false, refusal: { syntax: error.message, prototypeMember: error.prototypeMember }, threadId };
    else if (error instanceof DomainError && error.kind === 'invalid')
      result = { ok: false, refusal: { invalid: error.errors, message: error.message }, threadId };
    else
      result = {
        ok: false,
        unexpected: error instanceof Error ? (error.stack ?? error.message) : String(error),
        threadId,
      };
  }
  port.postMessage(result);
});
