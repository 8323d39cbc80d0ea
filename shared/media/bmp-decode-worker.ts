import { parentPort, threadId } from 'node:worker_threads';
import bmp from 'bmp-js';
import type { BmpDecodeResult, BmpDecodeTask } from './bmp-decode-pool.ts';

/**
 * The worker thread of the BMP decode pool (bmp-decode-pool.ts): decodes one BMP per message with
 * bmp-js, whose decoder is synchronous and allocates width × height × 4 bytes, and posts back the
 * R,G,B pixels sharp reads, their buffer moved rather than copied. The file was checked on the
 * main thread first (image-input.ts, bmpLayout): uncompressed, a supported depth, as many bytes as
 * its pixels need, at most MAX_INPUT_PIXELS. It imports neither sharp nor anything that loads it.
 */

const port = parentPort;
if (!port) throw new Error('bmp-decode-worker.ts runs as a worker thread of the BMP decode pool');

port.on('message', (task: BmpDecodeTask) => {
  let result: BmpDecodeResult;
  try {
    const decoded = bmp.decode(Buffer.from(task.bytes.buffer, task.bytes.byteOffset, task.bytes.byteLength));
    const n = task.width * task.height;
    if (decoded.width !== task.width || decoded.height !== task.height || decoded.data.length < n * 4)
      throw new Error('bmp-js decoded another size than the header says');
    // bmp-js yields A,B,G,R per pixel (and A is 0 for 24-bit files): keep R,G,B.
    const abgr = decoded.data;
    const pixels = new Uint8Array(n * 3);
    for (let i = 0, o = 0; o < pixels.length; i += 4, o += 3) {
      pixels[o] = abgr[i + 3] as number;
      pixels[o + 1] = abgr[i + 2] as number;
      pixels[o + 2] = abgr[i + 1] as number;
    }
    result = { ok: true, pixels, threadId };
    port.postMessage(result, [pixels.buffer]);
    return;
  } catch (error) {
    result = { ok: false, message: error instanceof Error ? error.message : String(error), threadId };
  }
  port.postMessage(result);
});
