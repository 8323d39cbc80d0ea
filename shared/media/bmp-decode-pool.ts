import { availableParallelism } from 'node:os';
import { ThreadPool, ThreadPoolError, workerUrl } from '../runtime/thread-pool.ts';

/**
 * BMP uploads are decoded in worker threads (shared/runtime/thread-pool.ts), never on the API's
 * event loop: bmp-js is synchronous and slow on a large picture (MAX_INPUT_PIXELS), during which a
 * process would answer nothing else. sharp needs no such pool (it works on libuv's threadpool).
 * Decodes beyond `threads` wait their turn with no bound: each holds only its upload, which its
 * request holds anyway, so at most `threads` pictures are ever decoded at once.
 */

/** One BMP to decode, rewritten by image-input.ts into the layout bmp-js reads (bmpLayout). */
export interface BmpDecodeTask {
  bytes: Uint8Array;
  width: number;
  height: number;
}

/** What a worker posts back: R,G,B pixels (width × height × 3 bytes), or why bmp-js failed. */
export type BmpDecodeResult =
  | { ok: true; pixels: Uint8Array; threadId: number }
  | { ok: false; message: string; threadId: number };

/** The pixels with the id of the thread that decoded them (never 0, the main thread's). */
export interface DecodedBmp {
  pixels: Uint8Array;
  threadId: number;
}

/** bmp-js threw on the file: it is not a whole BMP. */
export class BmpDecodeError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'BmpDecodeError';
  }
}

/** Counters for operators and tests: the proof that decodes run off the main thread. */
export interface BmpDecodePoolStats {
  threads: number;
  busy: number;
  queued: number;
  completed: number;
  failed: number;
  /** The thread ids that decoded pictures. */
  threadIds: number[];
}

export class BmpDecodePool {
  readonly #pool: ThreadPool<BmpDecodeTask, BmpDecodeResult>;
  #counts = { completed: 0, failed: 0 };

  constructor(options: { threads: number }) {
    this.#pool = new ThreadPool({
      worker: workerUrl(import.meta.url, 'bmp-decode-worker'),
      name: 'bmp-decode',
      threads: Math.max(1, options.threads),
    });
  }

  /** Decodes in a worker thread; `task.bytes` is moved to it (unusable here afterwards). */
  async decode(task: BmpDecodeTask): Promise<DecodedBmp> {
    let result: BmpDecodeResult;
    try {
      result = await this.#pool.run(task);
    } catch (error) {
      throw this.#poolFailure(error);
    }
    if (!result.ok) {
      this.#counts.failed++;
      throw new BmpDecodeError(result.message);
    }
    this.#counts.completed++;
    return { pixels: result.pixels, threadId: result.threadId };
  }

  #poolFailure(error: unknown): unknown {
    if (!(error instanceof ThreadPoolError)) return error;
    if (error.reason === 'closed') return new Error('the BMP decode pool is closed');
    if (error.reason !== 'crashed') return error; // no time limit and no queue bound: neither happens
    this.#counts.failed++;
    return error.cause ?? new Error('the BMP decode thread stopped');
  }

  stats(): BmpDecodePoolStats {
    const { threads, busy, queued, threadIds } = this.#pool.stats();
    return { threads, busy, queued, ...this.#counts, threadIds };
  }

  /** Refuses what waits and stops every thread (a decode in progress is rejected). */
  close(): Promise<void> {
    return this.#pool.close();
  }
}

let shared: BmpDecodePool | undefined;

/**
 * The process's BMP decode threads (at most two, started on the first BMP): normalizeImage has no
 * app context, and idle threads neither keep the process up nor hold memory worth a close.
 */
export function bmpDecodePool(): BmpDecodePool {
  shared ??= new BmpDecodePool({ threads: Math.min(2, availableParallelism()) });
  return shared;
}
