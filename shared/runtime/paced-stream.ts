import { performance } from 'node:perf_hooks';
import { Readable } from 'node:stream';

/**
 * The steps of every paced stream of the process, run in turn: one turn of the event loop runs
 * the steps that were waiting when it began, until they are done or BUDGET_MS is spent, so ten
 * large answers at once hold the loop no longer than one does; the rest wait for the next turn.
 */
const waiting: (() => void)[] = [];
let scheduled = false;
const BUDGET_MS = 5;

function schedule(step: () => void): void {
  waiting.push(step);
  if (!scheduled) {
    scheduled = true;
    setImmediate(runTurn);
  }
}

function runTurn(): void {
  const start = performance.now();
  // A step that schedules its next one waits for the next turn: the others run first.
  let due = waiting.length;
  try {
    while (due-- > 0 && performance.now() - start < BUDGET_MS) (waiting.shift() as () => void)();
  } finally {
    // Even after a step that threw, the others keep their turns.
    scheduled = waiting.length > 0;
    if (scheduled) setImmediate(runTurn);
  }
}

/**
 * A Readable of `chunks` that takes one chunk at a time between turns of the event loop (shared
 * with the other paced streams, see `runTurn`), and only when the reader asks for more
 * (back-pressure): a large answer written by a generator never holds the loop for longer than a
 * few chunks take to write, and a slow or gone client stops its writing. An empty
 * chunk is a pause: the generator lets other work run there without sending anything (see `PAUSE`).
 * Destroying the stream (a client that went away) ends the generator.
 */
export function pacedStream(chunks: Iterable<string | Uint8Array>): Readable {
  const iterator = chunks[Symbol.iterator]();
  let pending = false;
  const stream = new Readable({
    read() {
      if (pending) return;
      pending = true;
      schedule(step);
    },
    destroy(error, callback) {
      try {
        iterator.return?.();
      } finally {
        callback(error);
      }
    },
  });
  function step(): void {
    pending = false;
    if (stream.destroyed) return;
    let next: IteratorResult<string | Uint8Array>;
    try {
      next = iterator.next();
    } catch (error) {
      stream.destroy(error as Error);
      return;
    }
    if (next.done) {
      stream.push(null);
      return;
    }
    const chunk = next.value;
    // A pause pushes nothing, so the stream would not ask again: the next step is scheduled here.
    if (chunk.length === 0 || stream.push(typeof chunk === 'string' ? Buffer.from(chunk, 'utf8') : chunk)) {
      pending = true;
      schedule(step);
    }
  }
  return stream;
}

/** What a chunk generator yields between two slices of work: nothing to send, a turn for the loop. */
export const PAUSE = '';

/**
 * Runs a step generator (one that yields `undefined` between slices of work) as chunks of
 * nothing but pauses, and answers its result: `const s = yield* pauses(stepsOf(...))`.
 */
export function* pauses<T>(steps: Generator<void, T>): Generator<typeof PAUSE, T> {
  for (;;) {
    const next = steps.next();
    if (next.done) return next.value;
    yield PAUSE;
  }
}

/** A step generator run to its end at once, for callers that want the result now (tests, worker threads). */
export function runSteps<T>(steps: Generator<void, T>): T {
  for (;;) {
    const next = steps.next();
    if (next.done) return next.value;
  }
}
