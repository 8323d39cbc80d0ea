import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';

/**
 * BMP uploads are decoded in worker threads, never on the API's event loop: bmp-js is synchronous
 * and a 40-megapixel picture (MAX_INPUT_PIXELS) takes it a second and 280 MB, during which a
 * process would answer nothing else. sharp needs no such pool (it works on libuv's threadpool).
 * Like the activity import pool (shared/tracking/import-pool.ts): `threads` workers started on
 * demand, which are unref'd while idle so they never keep a process up. Decodes beyond `threads`
 * wait their turn in order: each holds only its upload, which its request holds anyway, so at most
 * `threads` pictures are ever decoded at once.
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

interface Pending {
  task: BmpDecodeTask;
  resolve: (value: DecodedBmp) => void;
  reject: (error: Error) => void;
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

// Node runs the .ts sources directly; a build to dist/ runs the .js next to this file.
const WORKER_URL = new URL(`./bmp-decode-worker.${import.meta.url.endsWith('.ts') ? 'ts' : 'js'}`, import.meta.url);

export class BmpDecodePool {
  readonly #threads: number;
  readonly #idle: Worker[] = [];
  readonly #running = new Map<Worker, Pending>();
  readonly #workers = new Set<Worker>();
  readonly #queue: Pending[] = [];
  readonly #threadIds = new Set<number>();
  #counts = { completed: 0, failed: 0 };
  #closed = false;

  constructor(options: { threads: number }) {
    this.#threads = Math.max(1, options.threads);
  }

  /** Decodes in a worker thread; `task.bytes` is moved to it (unusable here afterwards). */
  decode(task: BmpDecodeTask): Promise<DecodedBmp> {
    if (this.#closed) return Promise.reject(new Error('the BMP decode pool is closed'));
    return new Promise<DecodedBmp>((resolve, reject) => {
      this.#queue.push({ task, resolve, reject });
      this.#pump();
    });
  }

  stats(): BmpDecodePoolStats {
    return {
      threads: this.#workers.size,
      busy: this.#running.size,
      queued: this.#queue.length,
      ...this.#counts,
      threadIds: [...this.#threadIds],
    };
  }

  /** Refuses what waits and stops every thread (a decode in progress is rejected). */
  async close(): Promise<void> {
    this.#closed = true;
    for (const pending of this.#queue.splice(0)) pending.reject(new Error('the BMP decode pool is closed'));
    await Promise.all([...this.#workers].map((w) => w.terminate()));
  }

  #pump(): void {
    while (this.#queue.length > 0) {
      const worker = this.#idle.pop() ?? (this.#workers.size < this.#threads ? this.#spawn() : undefined);
      if (!worker) return;
      this.#dispatch(worker, this.#queue.shift() as Pending);
    }
  }

  #spawn(): Worker {
    const worker = new Worker(WORKER_URL, { name: 'bmp-decode' });
    this.#workers.add(worker);
    worker.on('message', (result: BmpDecodeResult) => this.#settle(worker, result));
    worker.on('error', (error) => this.#fail(worker, error));
    worker.on('exit', () => {
      this.#workers.delete(worker);
      const at = this.#idle.indexOf(worker);
      if (at >= 0) this.#idle.splice(at, 1);
      this.#fail(worker, new Error('the BMP decode thread stopped'));
      if (!this.#closed) this.#pump();
    });
    return worker;
  }

  #dispatch(worker: Worker, pending: Pending): void {
    this.#running.set(worker, pending);
    worker.ref(); // a decode in progress keeps the process alive; an idle thread does not
    const { bytes } = pending.task;
    const owned = bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength;
    worker.postMessage(pending.task, owned && bytes.buffer instanceof ArrayBuffer ? [bytes.buffer] : []);
  }

  /** Takes the worker's current decode off, if any: exactly one outcome settles it. */
  #take(worker: Worker): Pending | undefined {
    const running = this.#running.get(worker);
    if (running) this.#running.delete(worker);
    return running;
  }

  #settle(worker: Worker, result: BmpDecodeResult): void {
    const running = this.#take(worker);
    if (!running) return;
    this.#threadIds.add(result.threadId);
    worker.unref();
    this.#idle.push(worker);
    if (result.ok) {
      this.#counts.completed++;
      running.resolve({ pixels: result.pixels, threadId: result.threadId });
    } else {
      this.#counts.failed++;
      running.reject(new BmpDecodeError(result.message));
    }
    this.#pump();
  }

  #fail(worker: Worker, error: Error): void {
    const running = this.#take(worker);
    if (!running) return;
    this.#counts.failed++;
    running.reject(error);
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
