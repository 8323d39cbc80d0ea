import { BodySyntaxError, invalid } from '../../errors.ts';
import { ThreadPool, ThreadPoolError, workerUrl } from '../../runtime/thread-pool.ts';
import type { ActivityBody } from '../body/activity-body.ts';
import type { ActivityBodyRefusal } from '../body/parse.ts';
import { ImportError, type ImportErrorCode } from '../formats/import-error.ts';
import type { ImportedActivity, ImportOptions } from '../formats/import-options.ts';

/**
 * Activity files, and the JSON bodies of activity creates over 1 MB, are read in worker threads
 * (shared/runtime/thread-pool.ts), never on the API's event loop: fast-xml-parser and JSON.parse
 * are synchronous, and a day-long recording would hold the loop while every other request waits
 * (docs/tracking-files.md, "Imports over HTTP"). The queue is bounded, and a time limit per import
 * ends its thread.
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

const MB = 1024 * 1024;

const what = (task: ImportTask) => (task.kind === 'file' ? 'file' : 'body');

/** A thread's memory cap for files and bodies up to `limitBytes`: an XML tree is many times its file. */
export function importMemoryMb(limitBytes: number): number {
  return Math.max(512, Math.ceil((limitBytes * 24) / MB));
}

export class ActivityImportPool {
  readonly #timeoutMs: number;
  readonly #pool: ThreadPool<ImportTask, ImportTaskResult>;
  #counts = { completed: 0, refused: 0, timedOut: 0, crashed: 0 };

  constructor(options: ImportPoolOptions) {
    this.#timeoutMs = options.timeoutMs;
    this.#pool = new ThreadPool({
      worker: workerUrl(import.meta.url, 'worker'),
      name: 'activity-import',
      ...options,
    });
  }

  /** Reads a file in a worker thread; rejects with the importer's ImportError when it refuses it. */
  async import(bytes: Uint8Array, options: Extract<ImportTask, { kind: 'file' }>['options']): Promise<PooledImport> {
    const done = await this.#run({ kind: 'file', bytes, options });
    if (!('imported' in done)) throw new Error('the import thread answered a file with a body');
    return { imported: done.imported, threadId: done.threadId };
  }

  /**
   * Parses an activity create's JSON body in a worker thread (shared/tracking/body/parse.ts);
   * rejects with the same errors parseActivityBody throws.
   */
  async parseBody(bytes: Uint8Array): Promise<ActivityBody> {
    const done = await this.#run({ kind: 'json', bytes });
    if (!('body' in done)) throw new Error('the import thread answered a body with a file');
    return done.body;
  }

  async #run(task: ImportTask): Promise<Done> {
    let result: ImportTaskResult;
    try {
      result = await this.#pool.run(task);
    } catch (error) {
      throw this.#poolFailure(task, error);
    }
    if (result.ok) {
      this.#counts.completed++;
      return result;
    }
    if ('code' in result) {
      this.#counts.refused++;
      throw new ImportError(result.code, result.message);
    }
    if ('refusal' in result) {
      this.#counts.refused++;
      const { refusal } = result;
      throw 'syntax' in refusal
        ? new BodySyntaxError(refusal.syntax, refusal.prototypeMember)
        : invalid(refusal.invalid, refusal.message);
    }
    throw new Error(`the import thread failed: ${result.unexpected}`);
  }

  #poolFailure(task: ImportTask, error: unknown): unknown {
    if (!(error instanceof ThreadPoolError)) return error;
    switch (error.reason) {
      case 'busy':
        return new ImportPoolBusyError();
      case 'closed':
        return new Error('the import pool is closed');
      case 'timeout':
        this.#counts.timedOut++;
        return new ImportError(
          'too-large',
          `reading the ${what(task)} took longer than the ${this.#timeoutMs / 1000} s an import may take`,
        );
      case 'crashed': {
        this.#counts.crashed++;
        const { cause } = error;
        if ((cause as { code?: string } | undefined)?.code === 'ERR_WORKER_OUT_OF_MEMORY')
          return new ImportError('too-large', `reading the ${what(task)} needs more memory than an import may take`);
        return cause ?? new Error('the import thread stopped');
      }
    }
  }

  stats(): ImportPoolStats {
    const { threads, busy, queued, threadIds } = this.#pool.stats();
    return { threads, busy, queued, ...this.#counts, threadIds };
  }

  /** Refuses what waits and stops every thread (an import in progress is rejected). */
  close(): Promise<void> {
    return this.#pool.close();
  }
}
