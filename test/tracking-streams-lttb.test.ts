import test from 'ava';
import fc from 'fast-check';
import { lttb, RESOLUTIONS, sharedPositions } from '../shared/tracking/streams/downsample.ts';

// Largest-Triangle-Three-Buckets against known outputs: those of the reference implementation
// (Sveinn Steinarsson's, npm `downsample-lttb` 0.0.1) and of npm `downsample` 1.4.0's LTTB, which
// agree on these series; the x of each point kept.

const SMALL: [number, number][] = [
  [0, 3],
  [1, 5],
  [2, 4],
  [3, 9],
  [4, 1],
  [5, 2],
  [6, 8],
  [7, 7],
  [8, 3],
  [10, 0],
  [11, 6],
  [13, 4],
];

/** 1000 samples of a seeded random walk, x ascending with some gaps (the series the outputs were made from). */
function walk(): [number, number][] {
  let seed = 7;
  const random = () => {
    seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
    return seed / 2 ** 31;
  };
  const out: [number, number][] = [];
  let x = 0;
  let y = 100;
  for (let i = 0; i < 1000; i++) {
    x += 1 + (random() < 0.05 ? Math.floor(random() * 30) : 0);
    y += (random() - 0.5) * 10;
    out.push([x, Math.round(y * 100) / 100]);
  }
  return out;
}

const keptX = (points: [number, number][], threshold: number) => {
  const x = points.map((p) => p[0]);
  return [
    ...lttb(
      x,
      Float64Array.from(points, (p) => p[1]),
      threshold,
    ),
  ].map((i) => x[i]);
};

test('known outputs of the reference implementation', (t) => {
  t.deepEqual(keptX(SMALL, 5), [0, 3, 4, 7, 13]);
  t.deepEqual(keptX(SMALL, 8), [0, 1, 3, 4, 6, 8, 10, 13]);
  t.deepEqual(
    keptX(walk(), 40),
    [
      1, 5, 59, 84, 115, 173, 194, 249, 290, 324, 346, 441, 493, 516, 561, 631, 691, 709, 741, 767, 887, 931, 970, 1026,
      1043, 1114, 1147, 1183, 1239, 1273, 1298, 1366, 1406, 1411, 1499, 1515, 1568, 1617, 1637, 1666,
    ],
  );
});

test('every position when the threshold is not below the samples; first and last always kept', (t) => {
  t.deepEqual([...lttb([0, 1, 2], [1, 2, 3], 3)], [0, 1, 2]);
  t.deepEqual([...lttb([], [], 100)], []);
  t.deepEqual([...lttb([0, 1, 2, 3], [5, 6, 7, 8], 2)], [0, 3]);
  t.deepEqual([...sharedPositions([0, 1, 2], [], 100)], [0, 1, 2]);
  t.deepEqual(Object.keys(RESOLUTIONS), ['low', 'medium', 'high', 'full']);
  fc.assert(
    fc.property(fc.integer({ min: 3, max: 400 }), fc.integer({ min: 3, max: 120 }), (n, threshold) => {
      const x = Array.from({ length: n }, (_, i) => i * 2);
      const y = Float64Array.from(x, (v) => Math.sin(v / 7) * 50);
      const kept = lttb(x, y, threshold);
      const expected = Math.min(n, threshold);
      return (
        kept.length === expected &&
        kept[0] === 0 &&
        kept[expected - 1] === n - 1 &&
        kept.every((p, i) => i === 0 || p > (kept[i - 1] as number))
      );
    }),
  );
});

test('it keeps the shape: a one-sample spike survives 10,000 samples cut to 100', (t) => {
  const n = 10_000;
  const x = Array.from({ length: n }, (_, i) => i);
  const hr = Float64Array.from(x, (i) => 140 + Math.sin(i / 300) * 5);
  hr[4321] = 199;
  const kept = lttb(x, hr, 100);
  t.true(kept.includes(4321));
  // Every 100th sample (what naive decimation keeps) misses it.
  t.false(Array.from({ length: 100 }, (_, i) => i * 100).includes(4321));
});

test('several channels: each keeps its own peaks at one set of positions, whatever the units or the noise', (t) => {
  const n = 5000;
  const x = Array.from({ length: n }, (_, i) => i);
  // Distance climbs in metres; heart rate is flat but for one spike; cadence is noisy and has a
  // value every other second only. A sum of areas would let distance or cadence choose.
  const distance = Float64Array.from(x, (i) => i * 3 + Math.sin(i / 50) * 20);
  const hr = new Float64Array(n).fill(130);
  hr[2501] = 180;
  const cadence = Float64Array.from(x, (i) => (i % 2 ? Number.NaN : 80 + ((i * 7919) % 5)));
  const kept = sharedPositions(x, [distance, hr, cadence], 100);
  t.true(kept.length <= 100 && kept.length > 80, String(kept.length));
  t.true(kept.includes(2501));
  t.true(kept.every((p, i) => i === 0 || p > (kept[i - 1] as number)));
  // Each channel's own LTTB positions (on its samples) are all in the shared ones.
  for (const p of lttb(x, distance, 33)) t.true(kept.includes(p));
  // A channel with no values at all changes nothing.
  t.deepEqual([...sharedPositions(x, [distance, hr, cadence, new Float64Array(n).fill(Number.NaN)], 100)], [...kept]);
  // One channel without gaps: the reference algorithm exactly.
  t.deepEqual([...sharedPositions(x, [distance], 100)], [...lttb(x, distance, 100)]);
  // No channel: evenly spread positions.
  t.is(sharedPositions(x, [], 100).length, 100);
});
