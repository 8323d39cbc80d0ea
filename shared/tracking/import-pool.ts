import { Worker } from 'node:worker_threads';
import { BodySyntaxError, invalid } from '../errors.ts';
import type { ActivityBody, ActivityBodyRefusal } from './activity-body.ts';
import { ImportError, type ImportErrorCode } from './formats/import-error.ts';
import type { ImportedActivity, ImportOptions } from './formats/import-options.ts';

/**
 * Activity files, and the JSON bodies of activity creates over 1 MB, are read in worker threads,
 * never on the API's event loop: fast-xml-parser and JSON.parse are synchronous, a 24-hour GPX
 * takes seconds and a 24-hour JSON body a second, during which a process would answer nothing
 * else. A small pool of our own (docs/tracking-files.md, "Imports over HTTP"): `threads` workers
 * started on demand, a bounded queue, and a time limit per task that starts when a thread takes
 * it (waiting in the queue does not count) and ends it by terminating that thread.
 */

/** One file to read, or one activity body to parse, as posted to a worker. */
export type ImportTask =
  | { kind: 'file'; bytes: Uint8Array; options: ImportOptions & { contentType?: string } }
  | { kind: 'json'; bytes: Uint8Array };

/** What a worker posts back: the import or the parsed body, a refusal, or an unexpected failure. */
export type ImportTaskResult =
  | { ok: true; imported: ImportedActivity; threadId: number }
  | { ok: true; body: ActivityBody; threadId: number }
  | { ok: false; code: ImportErrorCode; message: string; threadId: number }
  | { ok: false; refusal: ActivityBodyRefusal; threadId: number }
  | { ok: false; unexpected: string; threadId: number };

type Done = Extract<ImportTaskResult, { ok: true }>;

export interface ImportPoolOptions {
  threads: number;
  /** Longest run of one import in its thread. */
  timeoutMs: number;
  /** Imports that may wait for a thread; one more is refused with ImportPoolBusyError. */
  maxQueue: number;
  /** V8 old-generation cap of each thread: a file that needs more ends its thread, not the process. */
  maxMemoryMb: number;
}

/** The import with the id of the thread that read it (never 0, the main thread's). */
export interface PooledImport {
  imported: ImportedActivity;
  threadId: number;
}

/** Every thread is busy and the queue is full: the caller may try again shortly. */
export class ImportPoolBusyError extends Error {
  constructor() {
    super('Every import thread is busy and the import queue is full');
    this.name = 'ImportPoolBusyError';
  }
}

interface Pending {
  task: ImportTask;
  resolve: (value: Done) => void;
  reject: (error: Error) => void;
}

interface Running extends Pending {
  timer: NodeJS.Timeout;
}

/** Counters for operators and tests: the proof that imports run off the main thread. */
export interface ImportPoolStats {
  threads: number;
  busy: number;
  queued: number;
  completed: number;
  refused: number;
  timedOut: number;
  crashed: number;
  /** The thread ids that ran imports (a worker replaced after a timeout gets a new one). */
  threadIds: number[];
}

// Node runs the .ts sources directly; a build to dist/ runs the .js next to this file.
const WORKER_URL = new URL(
  `./activity-import-worker.${import.meta.url.endsWith('.ts') ? 'ts' : 'js'}`,
  import.meta.url,
);

const MB = 1024 * 1024;

const what = (task: ImportTask) => (task.kind === 'file' ? 'file' : 'body');

/** A thread's memory cap for files and bodies up to `limitBytes`: an XML tree is about ten times its file. */
export function importMemoryMb(limitBytes: number): number {
  return Math.max(512, Math.ceil((limitBytes * 24) / MB));
}

export class ActivityImportPool {
  readonly #options: ImportPoolOptions;
  readonly #idle: Worker[] = [];
  readonly #running = new Map<Worker, Running>();
  readonly #workers = new Set<Worker>();
  readonly #queue: Pending[] = [];
  readonly #threadIds = new Set<number>();
  #counts = { completed: 0, refused: 0, timedOut: 0, crashed: 0 };
  #closed = false;

  constructor(options: ImportPoolOptions) {
    this.#options = options;
  }

  /** Reads a file in a worker thread; rejects with the importer's ImportError when it refuses it. */
  async import(bytes: Uint8Array, options: Extract<ImportTask, { kind: 'file' }>['options']): Promise<PooledImport> {
    const done = await this.#run({ kind: 'file', bytes, options });
    if (!('imported' in done)) throw new Error('the import thread answered a file with a body');
    return { imported: done.imported, threadId: done.threadId };
  }

  /**
   * Parses an activity create's JSON body in a worker thread (shared/tracking/activity-body.ts);
   * rejects with the same errors parseActivityBody throws.
   */
  async parseBody(bytes: Uint8Array): Promise<ActivityBody> {
    const done = await this.#run({ kind: 'json', bytes });
    if (!('body' in done)) throw new Error('the import thread answered a body with a file');
    return done.body;
  }

  #run(task: ImportTask): Promise<Done> {
    if (this.#closed) return Promise.reject(new Error('the import pool is closed'));
    const free = this.#idle.length + (this.#options.threads - this.#workers.size);
    if (free <= 0 && this.#queue.length >= this.#options.maxQueue) return Promise.reject(new ImportPoolBusyError());
    return new Promise<Done>((resolve, reject) => {
      this.#queue.push({ task, resolve, reject });
      this.#pump();
    });
  }

  stats(): ImportPoolStats {
    return {
      threads: this.#workers.size,
      busy: this.#running.size,
      queued: this.#queue.length,
      ...this.#counts,
      threadIds: [...this.#threadIds],
    };
  }

  /** Refuses what waits and stops every thread (an import in progress is rejected). */
  async close(): Promise<void> {
    this.#closed = true;
    for (const pending of this.#queue.splice(0)) pending.reject(new Error('the import pool is closed'));
    await Promise.all([...this.#workers].map((w) => w.terminate()));
  }

  #pump(): void {
    while (this.#queue.length > 0) {
      const worker = this.#idle.pop() ?? (this.#workers.size < this.#options.threads ? this.#spawn() : undefined);
      if (!worker) return;
      this.#dispatch(worker, this.#queue.shift() as Pending);
    }
  }

  #spawn(): Worker {
    const worker = new Worker(WORKER_URL, {
      name: 'activity-import',
      resourceLimits: { maxOldGenerationSizeMb: this.#options.maxMemoryMb },
    });
    this.#workers.add(worker);
    worker.on('message', (result: ImportTaskResult) => this.#settle(worker, result));
    worker.on('error', (error) => this.#fail(worker, error));
    worker.on('exit', () => {
      this.#workers.delete(worker);
      const at = this.#idle.indexOf(worker);
      if (at >= 0) this.#idle.splice(at, 1);
      this.#fail(worker, new Error('the import thread stopped'));
      if (!this.#closed) this.#pump();
    });
    return worker;
  }

  #dispatch(worker: Worker, pending: Pending): void {
    const timer = setTimeout(() => this.#timeout(worker), this.#options.timeoutMs);
    this.#running.set(worker, { ...pending, timer });
    worker.ref(); // an import in progress keeps the process alive; an idle thread does not
    const { bytes } = pending.task;
    // A buffer of its own is moved to the thread; a slice of a shared one (a pooled Buffer) is copied.
    const owned = bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength;
    worker.postMessage(pending.task, owned && bytes.buffer instanceof ArrayBuffer ? [bytes.buffer] : []);
  }

  /** Takes the worker's current import off, if any: exactly one outcome settles it. */
  #take(worker: Worker): Running | undefined {
    const running = this.#running.get(worker);
    if (!running) return undefined;
    this.#running.delete(worker);
    clearTimeout(running.timer);
    return running;
  }

  #settle(worker: Worker, result: ImportTaskResult): void {
    const running = this.#take(worker);
    if (!running) return;
    this.#threadIds.add(result.threadId);
    worker.unref();
    this.#idle.push(worker);
    if (result.ok) {
      this.#counts.completed++;
      running.resolve(result);
    } else if ('code' in result) {
      this.#counts.refused++;
      running.reject(new ImportError(result.code, result.message));
    } else if ('refusal' in result) {
      this.#counts.refused++;
      const { refusal } = result;
      running.reject(
        'syntax' in refusal
          ? new BodySyntaxError(refusal.syntax, refusal.prototypeMember)
          : invalid(refusal.invalid, refusal.message),
      );
    } else {
      running.reject(new Error(`the import thread failed: ${result.unexpected}`));
    }
    this.#pump();
  }

  #timeout(worker: Worker): void {
    const running = this.#take(worker);
    if (!running) return;
    this.#counts.timedOut++;
    const seconds = this.#options.timeoutMs / 1000;
    running.reject(
      new ImportError(
        'too-large',
        `reading the ${what(running.task)} took longer than the ${seconds} s an import may take`,
      ),
    );
    void worker.terminate(); // its exit frees the slot, and the queue goes on with a new thread
  }

  #fail(worker: Worker, error: Error): void {
    const running = this.#take(worker);
    if (!running) return;
    this.#counts.crashed++;
    const code = (error as { code?: string }).code;
    running.reject(
      code === 'ERR_WORKER_OUT_OF_MEMORY'
        ? new ImportError('too-large', `reading the ${what(running.task)} needs more memory than an import may take`)
        : error,
    );
  }
}
