import test from 'ava';
import sharp from 'sharp';
import type { Track } from '../shared/tracking/activity-data.ts';
import { SPORT_FAMILIES, sportFamily } from '../shared/tracking/thumbnail/placeholder.ts';
import { projectTrack, unwrapLongitudes } from '../shared/tracking/thumbnail/projection.ts';
import {
  renderPlaceholder,
  renderTrackThumbnail,
  THUMBNAIL_HEIGHT,
  THUMBNAIL_MAX_BYTES,
  THUMBNAIL_WIDTH,
} from '../shared/tracking/thumbnail/render.ts';
import { simplifyPolyline } from '../shared/tracking/thumbnail/simplify.ts';
import { trackSvg } from '../shared/tracking/thumbnail/track-svg.ts';

/** A track of n points at 1 Hz from a point function. */
function track(n: number, point: (i: number) => [number, number]): Track {
  const latitude = new Float64Array(n);
  const longitude = new Float64Array(n);
  for (let i = 0; i < n; i++) [latitude[i], longitude[i]] = point(i);
  return {
    elapsed: Int32Array.from({ length: n }, (_, i) => i),
    latitude,
    longitude,
    elevation: new Float64Array(n).fill(Number.NaN),
  };
}

/** A repeatable pseudo-random sequence (the same tracks on every run). */
function random(seed: number): () => number {
  let s = seed;
  return () => {
    s = (s * 1103515245 + 12345) % 2147483648;
    return s / 2147483648;
  };
}

/** A day at 1 Hz: a wandering walk with GPS noise, 86,400 points. */
function dayLongWalk(): Track {
  const rnd = random(42);
  let lat = 45.19;
  let lon = 5.72;
  let heading = 0;
  return track(86_400, () => {
    heading += (rnd() - 0.5) * 0.6;
    lat += Math.cos(heading) * 0.00003 + (rnd() - 0.5) * 0.00002;
    lon += Math.sin(heading) * 0.00004 + (rnd() - 0.5) * 0.00002;
    return [lat, lon];
  });
}

const PATHOLOGICAL: Record<string, Track> = {
  'no point': track(0, () => [0, 0]),
  'a single point': track(1, () => [50.63, 3.06]),
  'every point equal': track(5000, () => [50.63, 3.06]),
  'crossing the antimeridian': track(2000, (i) => {
    const lon = 179.5 + i * 0.0005;
    return [-17.7 + i * 0.0002, lon > 180 ? lon - 360 : lon];
  }),
  'circling the north pole': track(3600, (i) => [89.99, ((i * 0.1) % 360) - 180]),
  'through the south pole': track(200, (i) => [-89.9 - Math.abs(i - 100) * 0.001, i < 100 ? 10 : -170]),
  'points that are not coordinates': track(100, (i) =>
    i % 3 === 0 ? [Number.NaN, 3] : i % 3 === 1 ? [95, Number.POSITIVE_INFINITY] : [50 + i * 0.001, 3 + i * 0.001],
  ),
  'noise over the whole area (86,400 points)': track(
    86_400,
    (() => {
      const rnd = random(7);
      return () => [45 + rnd(), 5 + rnd()] as [number, number];
    })(),
  ),
};

async function checkImage(
  t: import('ava').ExecutionContext,
  data: Buffer,
  format: 'png' | 'webp',
  label: string,
): Promise<void> {
  t.true(data.length < THUMBNAIL_MAX_BYTES, `${label}: ${data.length} bytes`);
  const meta = await sharp(data).metadata();
  t.is(meta.format, format, label);
  t.is(meta.width, THUMBNAIL_WIDTH, label);
  t.is(meta.height, THUMBNAIL_HEIGHT, label);
}

for (const format of ['png', 'webp'] as const) {
  test(`a 24-hour track (86,400 points) renders to a ${format} under 300 KB, the same bytes every time`, async (t) => {
    const walk = dayLongWalk();
    const first = await renderTrackThumbnail(walk, format);
    await checkImage(t, first.data, format, 'walk');
    t.is(first.contentType, `image/${format}`);
    const again = await renderTrackThumbnail(walk, format);
    t.true(first.data.equals(again.data), 'deterministic bytes');
  });

  test(`pathological tracks render to a ${format} under 300 KB`, async (t) => {
    for (const [label, tr] of Object.entries(PATHOLOGICAL)) {
      const image = await renderTrackThumbnail(tr, format);
      await checkImage(t, image.data, format, label);
    }
  });
}

test('the track is drawn: pixels of the track colour where the line runs, none on an empty track', async (t) => {
  const orange = async (tr: Track) => {
    const { data, info } = await sharp((await renderTrackThumbnail(tr, 'png')).data)
      .removeAlpha()
      .raw()
      .toBuffer({ resolveWithObject: true });
    let n = 0;
    for (let i = 0; i < data.length; i += info.channels) {
      const [r, g, b] = [data[i] as number, data[i + 1] as number, data[i + 2] as number];
      if (r > 190 && g > 50 && g < 100 && b < 50) n++;
    }
    return n;
  };
  t.true((await orange(dayLongWalk())) > 2000);
  t.is(await orange(PATHOLOGICAL['no point'] as Track), 0);
});

test('different tracks give different thumbnails', async (t) => {
  const a = await renderTrackThumbnail(PATHOLOGICAL['crossing the antimeridian'] as Track);
  const b = await renderTrackThumbnail(dayLongWalk());
  t.false(a.data.equals(b.data));
});

test('longitudes are unwrapped across the antimeridian, so the drawing stays in one piece', (t) => {
  t.deepEqual(
    Array.from(unwrapLongitudes(Float64Array.from([179.9, -179.9, -179.7, 179.8]))),
    [179.9, 180.1, 180.3, 179.8],
  );
  const crossing = PATHOLOGICAL['crossing the antimeridian'] as Track;
  const { x } = projectTrack(crossing, { width: 600, height: 400, padding: 30 });
  // One continuous line: consecutive points stay close (no jump across the whole width).
  let largestStep = 0;
  for (let i = 1; i < x.length; i++)
    largestStep = Math.max(largestStep, Math.abs((x[i] as number) - (x[i - 1] as number)));
  t.true(largestStep < 5, `largest step ${largestStep}px`);
});

test('every projected point lies inside the viewport, poles and single points included', (t) => {
  for (const [label, tr] of Object.entries(PATHOLOGICAL)) {
    const { x, y } = projectTrack(tr, { width: 600, height: 400, padding: 30 });
    for (let i = 0; i < x.length; i++) {
      t.true((x[i] as number) >= 30 - 1e-9 && (x[i] as number) <= 570 + 1e-9, `${label} x ${x[i]}`);
      t.true((y[i] as number) >= 30 - 1e-9 && (y[i] as number) <= 370 + 1e-9, `${label} y ${y[i]}`);
    }
  }
  const single = projectTrack(PATHOLOGICAL['a single point'] as Track, { width: 600, height: 400, padding: 30 });
  t.deepEqual([single.x[0], single.y[0]], [300, 200]);
  const skipped = projectTrack(PATHOLOGICAL['points that are not coordinates'] as Track, {
    width: 600,
    height: 400,
    padding: 30,
  });
  t.is(skipped.x.length, 33);
});

test('simplification keeps both ends, drops what moves the line less than the tolerance', (t) => {
  const n = 10_000;
  const straight = {
    x: Float64Array.from({ length: n }, (_, i) => i / 20),
    y: Float64Array.from({ length: n }, (_, i) => 100 + (i % 2 ? 0.2 : -0.2)),
  };
  const simplified = simplifyPolyline(straight, 0.5);
  t.true(simplified.x.length <= 3, `${simplified.x.length} points`);
  t.is(simplified.x[0], 0);
  t.is(simplified.x[simplified.x.length - 1], (n - 1) / 20);

  // A corner survives.
  const corner = { x: Float64Array.from([0, 50, 100, 100, 100]), y: Float64Array.from([0, 0, 0, 50, 100]) };
  t.deepEqual(Array.from(simplifyPolyline(corner, 0.5).x), [0, 100, 100]);
  t.deepEqual(Array.from(simplifyPolyline(corner, 0.5).y), [0, 0, 100]);
  t.is(simplifyPolyline({ x: new Float64Array(0), y: new Float64Array(0) }, 0.5).x.length, 0);
});

test('the SVG of a track is the same text every time, and its line holds a bounded number of vertices', (t) => {
  const walk = dayLongWalk();
  const a = trackSvg(walk, { width: 600, height: 400, maxVertices: 500 });
  t.is(a, trackSvg(walk, { width: 600, height: 400, maxVertices: 500 }));
  const d = /<path d="(M[^"]+)" fill="none"/.exec(a)?.[1] ?? '';
  t.true(d.split('L').length <= 500);
  t.regex(a, /^<svg xmlns="http:\/\/www.w3.org\/2000\/svg" width="600" height="400"/);
});

test('each sport family has its own placeholder, under 300 KB, deterministic', async (t) => {
  const seen = new Set<string>();
  for (const family of SPORT_FAMILIES) {
    const image = await renderPlaceholder(family, 'png');
    await checkImage(t, image.data, 'png', family);
    t.true(image.data.equals((await renderPlaceholder(family, 'png')).data), `${family} deterministic`);
    seen.add(image.data.toString('base64'));
    await checkImage(t, (await renderPlaceholder(family, 'webp')).data, 'webp', `${family} webp`);
  }
  t.is(seen.size, SPORT_FAMILIES.length);
});

test('sport families follow the universes of the referential; unknown ones are "other"', (t) => {
  t.is(sportFamily(4), 'fitness');
  t.is(sportFamily(11), 'wheel');
  t.is(sportFamily(8), 'water');
  t.is(sportFamily(null), 'other');
  t.is(sportFamily(999), 'other');
});
