import { parentPort, threadId } from 'node:worker_threads';
import type { ActivityContent } from './activity-data.ts';
import { ImportError } from './formats/import-error.ts';
import { importActivityFile } from './formats/import-file.ts';
import type { ImportTask, ImportTaskResult } from './import-pool.ts';

/**
 * The worker thread of the import pool (import-pool.ts): reads one file per message with the pure
 * importers and posts the content back, its typed arrays moved rather than copied.
 */

/** The buffers under the content's typed arrays, each once (moving one twice is an error). */
function transferables(content: ActivityContent): ArrayBuffer[] {
  const arrays = [
    content.datastream.elapsed,
    ...content.datastream.channels.values(),
    content.track.elapsed,
    content.track.latitude,
    content.track.longitude,
    content.track.elevation,
  ];
  const buffers = new Set<ArrayBuffer>();
  for (const a of arrays) if (a.buffer instanceof ArrayBuffer && a.buffer.byteLength > 0) buffers.add(a.buffer);
  return [...buffers];
}

const port = parentPort;
if (!port) throw new Error('activity-import-worker.ts runs as a worker thread of the import pool');

port.on('message', (task: ImportTask) => {
  let result: ImportTaskResult;
  try {
    const imported = importActivityFile(task.bytes, task.options);
    result = { ok: true, imported, threadId };
    port.postMessage(result, transferables(imported.content));
    return;
  } catch (error) {
    result =
      error instanceof ImportError
        ? { ok: false, code: error.code, message: error.message, threadId }
        : { ok: false, unexpected: error instanceof Error ? (error.stack ?? error.message) : String(error), threadId };
  }
  port.postMessage(result);
});
