import test from 'ava';
import { Batcher } from '../shared/tracking/webhooks/batcher.ts';

// The group commit of the deliveries' statements (shared/tracking/webhooks/batcher.ts).

test('a lone call runs at once; calls made while a batch runs go together in the next', async (t) => {
  const batches: number[][] = [];
  const batcher = new Batcher<number, number>(async (items) => {
    batches.push(items);
    await new Promise((r) => setTimeout(r, 20));
    return items.map((n) => n * 2);
  });
  const first = batcher.call(1);
  const rest = [2, 3, 4].map((n) => batcher.call(n));
  t.deepEqual(await Promise.all([first, ...rest]), [2, 4, 6, 8]);
  t.deepEqual(batches, [[1], [2, 3, 4]]);
});

test('a batch is at most its size', async (t) => {
  const sizes: number[] = [];
  const batcher = new Batcher<number, number>(async (items) => {
    sizes.push(items.length);
    return items;
  }, 2);
  await Promise.all([1, 2, 3, 4, 5].map((n) => batcher.call(n)));
  t.deepEqual(sizes, [1, 2, 2]);
});

test('a batch that fails runs again one call at a time: only the call that cannot succeed fails', async (t) => {
  const batches: string[][] = [];
  const batcher = new Batcher<string, string>(async (items) => {
    batches.push(items);
    if (items.includes('bad')) throw new Error('refused');
    return items.map((s) => s.toUpperCase());
  });
  const lone = batcher.call('a');
  const results = await Promise.allSettled([lone, ...['b', 'bad', 'c'].map((s) => batcher.call(s))]);
  t.deepEqual(
    results.map((r) => (r.status === 'fulfilled' ? r.value : (r.reason as Error).message)),
    ['A', 'B', 'refused', 'C'],
  );
  t.deepEqual(batches, [['a'], ['b', 'bad', 'c'], ['b'], ['bad'], ['c']]);
});
