import { once } from 'node:events';
import { Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { setImmediate as nextTurn } from 'node:timers/promises';
import test from 'ava';
import { PAUSE, pacedStream, pauses, runSteps } from '../shared/runtime/paced-stream.ts';

/** A sink that keeps what it is sent. */
function collector(): { sink: Writable; text: () => string } {
  const chunks: Buffer[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      chunks.push(chunk);
      done();
    },
  });
  return { sink, text: () => Buffer.concat(chunks).toString() };
}

test('the chunks arrive in order as bytes, pauses send nothing, and the loop turns between chunks', async (t) => {
  let turns = 0;
  let stop = false;
  const ticking = (async () => {
    while (!stop) {
      await nextTurn();
      turns++;
    }
  })();
  // Each chunk records how many turns the loop had made when it was written.
  const seen: number[] = [];
  function* chunks() {
    for (let i = 0; i < 5; i++) {
      seen.push(turns);
      yield `<${i}>`;
      yield PAUSE;
    }
    yield Buffer.from('end');
  }
  const { sink, text } = collector();
  await pipeline(pacedStream(chunks()), sink);
  stop = true;
  await ticking;
  t.is(text(), '<0><1><2><3><4>end');
  for (let i = 1; i < seen.length; i++) t.true((seen[i] as number) > (seen[i - 1] as number), `turn before chunk ${i}`);
});

test('back-pressure: nothing more is written while the reader takes nothing', async (t) => {
  let written = 0;
  function* chunks() {
    for (let i = 0; i < 1000; i++) {
      written++;
      yield Buffer.alloc(16 * 1024);
    }
  }
  const stream = pacedStream(chunks());
  stream.pause();
  stream.read(0);
  for (let i = 0; i < 50; i++) await nextTurn();
  // The readable's buffer (64 KB) holds a few chunks; the writer then waits.
  t.true(written >= 1 && written <= 8, `${written} chunks written for a reader that took none`);
  stream.destroy();
});

test('a reader that goes away ends the generator; a generator that throws destroys the stream', async (t) => {
  let finished = false;
  function* endless() {
    try {
      for (;;) yield 'x'.repeat(1024);
    } finally {
      finished = true;
    }
  }
  const stream = pacedStream(endless());
  // Once it has written a chunk: the generator is running (one never started has no finally to run).
  await once(stream, 'data');
  stream.destroy();
  t.true(finished);

  function* failing(): Generator<string> {
    yield 'a';
    throw new Error('broken writer');
  }
  const { sink } = collector();
  await t.throwsAsync(pipeline(pacedStream(failing()), sink), { message: 'broken writer' });
});

test('step generators: pauses() turns their steps into pauses, runSteps() runs them at once', (t) => {
  function* steps(): Generator<void, number> {
    yield;
    yield;
    return 42;
  }
  function* chunks(): Generator<string> {
    yield String(yield* pauses(steps()));
  }
  t.deepEqual([...chunks()], [PAUSE, PAUSE, '42']);
  t.is(runSteps(steps()), 42);
});
