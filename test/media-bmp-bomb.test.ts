import { threadId as mainThreadId } from 'node:worker_threads';
import test from 'ava';
import bmp from 'bmp-js';
import { sql } from 'kysely';
import { BmpDecodePool } from '../shared/media/bmp-decode-pool.ts';
import { bmpLayout, decodeBmp, ImageInputError } from '../shared/media/image-input.ts';
import { startTrackingApi } from './helpers/tracking.ts';

// The attack: "A 60-byte BMP costs ~280 MB and a stalled event loop". bmp-js allocates
// width × height × 4 bytes from the header alone, on the thread that calls it.

const api = await startTrackingApi();
test.after.always(() => api.close());

/** A BMP as a writer would make it: pixel(x, y) is a palette index (up to 8 bits) or 0xRRGGBB. */
function bmpOf(o: {
  width: number;
  height: number;
  bpp: number;
  pixel: (x: number, y: number) => number;
  palette?: number[];
  headerSize?: number;
  compression?: number;
  /** Bytes between the palette and the pixels (bfOffBits says where the pixels are). */
  gap?: number;
  topDown?: boolean;
}): Buffer {
  const { width, height, bpp, headerSize = 40, gap = 0 } = o;
  const palette = o.palette ?? [];
  const stride = Math.ceil((width * bpp) / 32) * 4;
  const offset = 14 + headerSize + palette.length * 4 + gap;
  const file = Buffer.alloc(offset + stride * height);
  file.write('BM', 0, 'latin1');
  file.writeUInt32LE(file.length, 2);
  file.writeUInt32LE(offset, 10);
  file.writeUInt32LE(headerSize, 14);
  file.writeInt32LE(width, 18);
  file.writeInt32LE(o.topDown ? -height : height, 22);
  file.writeUInt16LE(1, 26);
  file.writeUInt16LE(bpp, 28);
  file.writeUInt32LE(o.compression ?? 0, 30);
  file.writeUInt32LE(stride * height, 34);
  file.writeUInt32LE(palette.length, 46);
  palette.forEach((rgb, i) => {
    file.writeUInt32LE(rgb & 0xffffff, 14 + headerSize + i * 4);
  });
  for (let y = 0; y < height; y++) {
    const row = offset + stride * (o.topDown ? y : height - 1 - y);
    for (let x = 0; x < width; x++) {
      const v = o.pixel(x, y);
      const [r, g, b] = [(v >> 16) & 0xff, (v >> 8) & 0xff, v & 0xff];
      if (bpp <= 8) {
        const bit = x * bpp;
        file[row + (bit >> 3)] = (file[row + (bit >> 3)] as number) | (v << (8 - bpp - (bit & 7)));
      } else if (bpp === 16) file.writeUInt16LE(((r >> 3) << 10) | ((g >> 3) << 5) | (b >> 3), row + x * 2);
      else file.set(bpp === 24 ? [b, g, r] : [b, g, r, 0], row + (x * bpp) / 8);
    }
  }
  return file;
}

/** The attack file: 8-bit RLE8 claiming 6324 × 6324, one palette entry, then "end of bitmap". */
function rleBomb(): Buffer {
  const file = bmpOf({ width: 1, height: 1, bpp: 8, palette: [0], compression: 1, pixel: () => 0 });
  const bomb = Buffer.concat([file.subarray(0, 58), Buffer.from([0x00, 0x01])]);
  bomb.writeUInt32LE(bomb.length, 2);
  bomb.writeInt32LE(6324, 18);
  bomb.writeInt32LE(6324, 22);
  bomb.writeUInt32LE(2, 34);
  return bomb;
}

/** A 24-bit BI_RGB file cut in half: its header claims twice the rows it holds. */
const truncatedRgb = () =>
  bmpOf({ width: 100, height: 100, bpp: 24, pixel: () => 0x336699 }).subarray(0, 54 + 150 * 100);

/** A 1-bit BI_RGB header claiming 6000 × 6000 (4.5 MB of rows, 144 MB decoded) in 70 bytes. */
function sparseOneBit(): Buffer {
  const file = bmpOf({ width: 8, height: 2, bpp: 1, palette: [0, 0xffffff], pixel: () => 1 });
  file.writeInt32LE(6000, 18);
  file.writeInt32LE(6000, 22);
  return file;
}

/** A 24-bit BMP made with bmp-js, as the other upload tests do. */
function bmpJsFile(width: number, height: number): Buffer {
  const data = Buffer.alloc(width * height * 4);
  for (let i = 0; i < data.length; i += 4) data.set([0, 240, 120, 10], i);
  return bmp.encode({ data, width, height }).data;
}

function form(data: Buffer, name = 'picture.bmp'): FormData {
  const body = new FormData();
  body.append('file', new Blob([new Uint8Array(data)], { type: 'image/bmp' }), name);
  return body;
}

const trackingUpload = async (data: Buffer) => {
  const u = await api.user();
  const res = await api.call('POST', '/upload', u, { raw: form(data) });
  return { ...res, user: u };
};

async function placeUpload(data: Buffer) {
  const n = Math.random().toString(36).slice(2, 8);
  const place = await api.database.db
    .insertInto('places')
    .values({
      slug: `bmp-${n}`,
      name: `Bmp ${n}`,
      geom: sql`ST_SetSRID(ST_MakePoint(2.35, 48.85), 4326)`,
      country: 'FR',
      status: 'approved',
    })
    .returning(['id', 'uuid'])
    .executeTakeFirstOrThrow();
  await api.database.db.insertInto('place_activities').values({ place_id: place.id, sport_id: 121 }).execute();
  const user = await api.user();
  const res = await api.fetch(`/v1/places/${place.uuid}/activities/121/images`, {
    method: 'POST',
    headers: { authorization: `Bearer ${user.token}` },
    body: form(data),
  });
  const image = await api.database.db
    .selectFrom('place_activities')
    .select('image_path')
    .where('place_id', '=', place.id)
    .executeTakeFirstOrThrow();
  return { res, imagePath: image.image_path };
}

test('the attack file is what the report says: 60 bytes claiming 6324 × 6324 in RLE8', (t) => {
  const bomb = rleBomb();
  t.is(bomb.length, 60);
  t.is(bomb.toString('latin1', 0, 2), 'BM');
  t.deepEqual(
    [bomb.readInt32LE(18), bomb.readInt32LE(22), bomb.readUInt16LE(28), bomb.readUInt32LE(30)],
    [6324, 6324, 8, 1],
  );
});

test('POST /v2/upload refuses the RLE8 bomb with 422 in Hydra form, and stores nothing', async (t) => {
  const res = await trackingUpload(rleBomb());
  t.is(res.status, 422);
  t.is(res.body['@type'], 'ConstraintViolationList');
  t.is(res.body.violations[0].propertyPath, 'file');
  t.regex(res.body.violations[0].message, /compressed BMP files \(RLE8\) are not accepted/);
  const row = await api.database.db
    .selectFrom('tracking_uploads')
    .select('id')
    .where('user_id', '=', res.user.ldid)
    .executeTakeFirst();
  t.is(row, undefined);
});

test('a place picture upload refuses the RLE8 bomb with 422 problem+json naming body.file, and stores nothing', async (t) => {
  const { res, imagePath } = await placeUpload(rleBomb());
  t.is(res.status, 422);
  t.is(res.headers.get('content-type'), 'application/problem+json');
  const body = (await res.json()) as { errors: { path: string; message: string }[] };
  t.is(body.errors[0]?.path, 'body.file');
  t.regex(body.errors[0]?.message ?? '', /compressed BMP files \(RLE8\) are not accepted/);
  t.is(imagePath, null);
});

test('a BI_RGB BMP with fewer bytes than its header claims is refused as truncated by both services', async (t) => {
  for (const file of [truncatedRgb(), sparseOneBit()]) {
    const tracking = await trackingUpload(file);
    t.is(tracking.status, 422);
    t.is(tracking.body['@type'], 'ConstraintViolationList');
    t.regex(tracking.body.violations[0].message, /the BMP file is truncated/);
    const { res, imagePath } = await placeUpload(file);
    t.is(res.status, 422);
    t.is(res.headers.get('content-type'), 'application/problem+json');
    t.regex(((await res.json()) as { errors: { message: string }[] }).errors[0]?.message ?? '', /truncated/);
    t.is(imagePath, null);
  }
});

test('a valid small BMP still uploads to both services', async (t) => {
  const tracking = await trackingUpload(bmpJsFile(20, 10));
  t.is(tracking.status, 200);
  t.regex(tracking.body.url, /\.png$/);
  const { res, imagePath } = await placeUpload(bmpJsFile(33, 17));
  t.is(res.status, 201);
  t.regex(imagePath ?? '', /\.png$/);
});

test('refused before any decode: compressed, unsupported depths and headers, truncated (no thread is started)', async (t) => {
  const pool = new BmpDecodePool({ threads: 1 });
  t.teardown(() => pool.close());
  const px = () => 0;
  const refused: [Buffer, RegExp][] = [
    [rleBomb(), /RLE8/],
    [bmpOf({ width: 4, height: 4, bpp: 4, palette: [0, 1], compression: 2, pixel: px }), /RLE4/],
    [bmpOf({ width: 4, height: 4, bpp: 32, compression: 3, pixel: px }), /BITFIELDS/],
    [bmpOf({ width: 4, height: 4, bpp: 16, compression: 3, pixel: px }), /BITFIELDS/],
    [bmpOf({ width: 4, height: 4, bpp: 24, compression: 4, pixel: px }), /JPEG/],
    [bmpOf({ width: 4, height: 4, bpp: 2, palette: [0, 1, 2, 3], pixel: px }), /2 bits per pixel/],
    [bmpOf({ width: 4, height: 4, bpp: 0, pixel: px }), /0 bits per pixel/],
    [truncatedRgb(), /truncated/],
    [sparseOneBit(), /truncated/],
    [bmpOf({ width: 4, height: 4, bpp: 24, pixel: px }).subarray(0, 100), /truncated/],
  ];
  const os2 = bmpOf({ width: 4, height: 4, bpp: 24, pixel: px });
  os2.writeUInt32LE(12, 14);
  refused.push([os2, /OS\/2/]);
  const inHeader = bmpOf({ width: 4, height: 4, bpp: 24, pixel: px });
  inHeader.writeUInt32LE(20, 10);
  refused.push([inHeader, /starts inside its headers/]);
  for (const [file, message] of refused) {
    t.throws(() => bmpLayout(file), { instanceOf: ImageInputError, message });
    const error = await t.throwsAsync(decodeBmp(file, pool), { instanceOf: ImageInputError, message });
    t.is(error?.kind, 'undecodable');
  }
  t.deepEqual(pool.stats(), { threads: 0, busy: 0, queued: 0, completed: 0, failed: 0, threadIds: [] });
});

test('decodeBmp decodes in a worker thread of the pool, not on the main thread', async (t) => {
  const pool = new BmpDecodePool({ threads: 1 });
  t.teardown(() => pool.close());
  const decoded = await decodeBmp(bmpJsFile(5, 3), pool);
  t.deepEqual([decoded.width, decoded.height], [5, 3]);
  t.deepEqual([...decoded.pixels.subarray(0, 6)], [10, 120, 240, 10, 120, 240]);
  t.not(decoded.threadId, mainThreadId);
  t.true(decoded.threadId > 0);
  const stats = pool.stats();
  t.deepEqual([stats.threads, stats.completed, stats.threadIds], [1, 1, [decoded.threadId]]);
});

test('every accepted layout decodes to its pixels: depths 1 to 32, V5 headers, a gap before the pixels, top-down rows', async (t) => {
  const pool = new BmpDecodePool({ threads: 2 });
  t.teardown(() => pool.close());
  const colours = [0xf80008, 0x08f880, 0x4080f8, 0xf8f8f8];
  const width = 7;
  const height = 5;
  const index = (x: number, y: number) => (x * 3 + y) % 4;
  const rgbOf = (x: number, y: number) => colours[index(x, y)] as number;
  const cases = [
    { bpp: 1, palette: colours.slice(0, 2), pixel: (x: number, y: number) => index(x, y) % 2 },
    { bpp: 4, palette: colours, pixel: index },
    { bpp: 8, palette: colours, pixel: index, headerSize: 124, gap: 6 },
    { bpp: 16, pixel: rgbOf },
    { bpp: 24, pixel: rgbOf, headerSize: 108 },
    { bpp: 24, pixel: rgbOf, topDown: true },
    { bpp: 32, pixel: rgbOf, headerSize: 124 },
  ];
  for (const c of cases) {
    const decoded = await decodeBmp(bmpOf({ width, height, ...c }), pool);
    t.deepEqual([decoded.width, decoded.height], [width, height]);
    const expected: number[] = [];
    for (let y = 0; y < height; y++)
      for (let x = 0; x < width; x++) {
        const rgb = c.palette ? (c.palette[c.pixel(x, y)] as number) : c.pixel(x, y);
        expected.push((rgb >> 16) & 0xff, (rgb >> 8) & 0xff, rgb & 0xff);
      }
    t.deepEqual([...decoded.pixels], expected, `${c.bpp} bits, header ${c.headerSize ?? 40}`);
    t.not(decoded.threadId, mainThreadId);
  }
});
