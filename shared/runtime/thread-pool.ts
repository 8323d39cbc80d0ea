import { Worker } from 'node:worker_threads';

/**
 * A pool of worker threads for synchronous work that must stay off the event loop (activity
 * imports, BMP decodes). Threads start on demand and are unref'd while idle, so an idle pool never
 * keeps a process up. Tasks wait their turn in order; each worker answers one task with one message.
 */

export interface ThreadPoolOptions {
  /** The worker script (see workerUrl). */
  worker: URL;
  /** The threads' name, as the inspector and error messages show it. */
  name: string;
  threads: number;
  /** Longest run of one task, counted from when a thread takes it (waiting does not count). */
  timeoutMs?: number;
  /** Tasks that may wait for a thread; one more is refused ('busy'). Unbounded when absent. */
  maxQueue?: number;
  /** V8 old-generation cap of each thread: a task that needs more ends its thread, not the process. */
  maxMemoryMb?: number;
}

/**
 * Why the pool did not answer with the worker's message. 'crashed' carries the thread's error as
 * `cause`, or none when the thread just stopped (terminated by close, or exited).
 */
export type ThreadPoolFailure = 'busy' | 'closed' | 'timeout' | 'crashed';

export class ThreadPoolError extends Error {
  readonly reason: ThreadPoolFailure;
  declare readonly cause?: Error;

  constructor(reason: ThreadPoolFailure, message: string, cause?: Error) {
    super(message, cause ? { cause } : undefined);
    this.name = 'ThreadPoolError';
    this.reason = reason;
  }
}

export interface ThreadPoolStats {
  /** Threads alive, busy or idle. */
  threads: number;
  busy: number;
  queued: number;
  /** The ids of the threads that answered a task (a thread replaced after a timeout gets a new one). */
  threadIds: number[];
}

/** A worker script next to `base` (import.meta.url): Node runs the .ts sources, a build to dist/ the .js. */
export function workerUrl(base: string, name: string): URL {
  return new URL(`./${name}.${base.endsWith('.ts') ? 'ts' : 'js'}`, base);
}

interface Pending<Task, Message> {
  task: Task;
  resolve: (message: Message) => void;
  reject: (error: ThreadPoolError) => void;
}

interface Running<Task, Message> extends Pending<Task, Message> {
  timer?: NodeJS.Timeout;
}

/** A task's `bytes` move to the thread when they own their buffer; a slice of a shared one (a pooled Buffer) is copied. */
export class ThreadPool<Task extends { bytes: Uint8Array }, Message> {
  readonly #options: ThreadPoolOptions;
  readonly #idle: Worker[] = [];
  readonly #running = new Map<Worker, Running<Task, Message>>();
  readonly #workers = new Set<Worker>();
  readonly #queue: Pending<Task, Message>[] = [];
  readonly #threadIds = new Set<number>();
  #closed = false;

  constructor(options: ThreadPoolOptions) {
    this.#options = options;
  }

  /** Resolves with the message the worker posts for `task`. */
  run(task: Task): Promise<Message> {
    const { threads, maxQueue, name } = this.#options;
    if (this.#closed) return Promise.reject(this.#closedError());
    const free = this.#idle.length + (threads - this.#workers.size);
    if (maxQueue !== undefined && free <= 0 && this.#queue.length >= maxQueue)
      return Promise.reject(new ThreadPoolError('busy', `every ${name} thread is busy and the queue is full`));
    return new Promise<Message>((resolve, reject) => {
      this.#queue.push({ task, resolve, reject });
      this.#pump();
    });
  }

  stats(): ThreadPoolStats {
    return {
      threads: this.#workers.size,
      busy: this.#running.size,
      queued: this.#queue.length,
      threadIds: [...this.#threadIds],
    };
  }

  /** Refuses what waits ('closed') and stops every thread (a task in progress fails as 'crashed'). */
  async close(): Promise<void> {
    this.#closed = true;
    for (const pending of this.#queue.splice(0)) pending.reject(this.#closedError());
    await Promise.all([...this.#workers].map((w) => w.terminate()));
  }

  #closedError(): ThreadPoolError {
    return new ThreadPoolError('closed', `the ${this.#options.name} pool is closed`);
  }

  #pump(): void {
    while (this.#queue.length > 0) {
      const worker = this.#idle.pop() ?? (this.#workers.size < this.#options.threads ? this.#spawn() : undefined);
      if (!worker) return;
      this.#dispatch(worker, this.#queue.shift() as Pending<Task, Message>);
    }
  }

  #spawn(): Worker {
    const { worker: url, name, maxMemoryMb } = this.#options;
    const worker = new Worker(url, {
      name,
      ...(maxMemoryMb === undefined ? {} : { resourceLimits: { maxOldGenerationSizeMb: maxMemoryMb } }),
    });
    this.#workers.add(worker);
    const { threadId } = worker; // -1 once the thread has exited
    worker.on('message', (message: Message) => this.#settle(worker, threadId, message));
    worker.on('error', (error) => this.#fail(worker, error));
    worker.on('exit', () => {
      this.#workers.delete(worker);
      const at = this.#idle.indexOf(worker);
      if (at >= 0) this.#idle.splice(at, 1);
      this.#fail(worker, undefined);
      if (!this.#closed) this.#pump();
    });
    return worker;
  }

  #dispatch(worker: Worker, pending: Pending<Task, Message>): void {
    const { timeoutMs } = this.#options;
    const timer = timeoutMs === undefined ? undefined : setTimeout(() => this.#timeout(worker), timeoutMs);
    this.#running.set(worker, { ...pending, timer });
    worker.ref(); // a task in progress keeps the process alive; an idle thread does not
    const { bytes } = pending.task;
    const owned = bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength;
    worker.postMessage(pending.task, owned && bytes.buffer instanceof ArrayBuffer ? [bytes.buffer] : []);
  }

  /** Takes the worker's current task off, if any: exactly one outcome settles it. */
  #take(worker: Worker): Running<Task, Message> | undefined {
    const running = this.#running.get(worker);
    if (!running) return undefined;
    this.#running.delete(worker);
    clearTimeout(running.timer);
    return running;
  }

  #settle(worker: Worker, threadId: number, message: Message): void {
    const running = this.#take(worker);
    if (!running) return;
    this.#threadIds.add(threadId);
    worker.unref();
    this.#idle.push(worker);
    running.resolve(message);
    this.#pump();
  }

  #timeout(worker: Worker): void {
    const running = this.#take(worker);
    if (!running) return;
    const { name, timeoutMs } = this.#options;
    running.reject(new ThreadPoolError('timeout', `the ${name} thread took longer than ${timeoutMs} ms`));
    void worker.terminate(); // its exit frees the slot, and the queue goes on with a new thread
  }

  #fail(worker: Worker, error: Error | undefined): void {
    const running = this.#take(worker);
    if (!running) return;
    running.reject(new ThreadPoolError('crashed', error?.message ?? `the ${this.#options.name} thread stopped`, error));
  }
}
