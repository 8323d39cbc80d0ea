import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { crc32 } from 'node:zlib';
import test from 'ava';
import bmp from 'bmp-js';
import sharp from 'sharp';
import { MAX_INPUT_PIXELS, normalizeImage } from '../shared/media/image-input.ts';
import { storeUpload, TRACKING_STORAGE_ROOT } from '../shared/tracking/activities/uploads.ts';
import { startTrackingApi, type TrackingTestUser } from './helpers/tracking.ts';

const api = await startTrackingApi();
test.after.always(() => api.close());

const rgb = (width: number, height: number) =>
  sharp({ create: { width, height, channels: 3, background: { r: 200, g: 30, b: 60 } } });
const png = (w = 64, h = 48) => rgb(w, h).png().toBuffer();
const jpeg = (w = 80, h = 60) => rgb(w, h).jpeg().toBuffer();

/** A 24-bit BMP made with bmp-js (which takes A,B,G,R pixels). */
function bmpFile(width: number, height: number): Buffer {
  const data = Buffer.alloc(width * height * 4);
  for (let i = 0; i < data.length; i += 4) data.set([0, 240, 120, 10], i);
  return bmp.encode({ data, width, height }).data;
}

/** A valid PNG whose header claims `width` × `height` (a decompression bomb's header). */
async function pngClaiming(width: number, height: number): Promise<Buffer> {
  const file = Buffer.from(await png(8, 8));
  // Signature (8 bytes), then the IHDR chunk: length (4), type (4), width (4), height (4)...
  file.writeUInt32BE(width, 16);
  file.writeUInt32BE(height, 20);
  file.writeUInt32BE(crc32(file.subarray(12, 29)), 29);
  return file;
}

function form(parts: { field?: string; data: Buffer | string; name?: string; type?: string }[]): FormData {
  const body = new FormData();
  for (const p of parts) {
    if (typeof p.data === 'string' && !p.name) body.append(p.field ?? 'file', p.data);
    else body.append(p.field ?? 'file', new Blob([p.data], { type: p.type ?? 'application/octet-stream' }), p.name);
  }
  return body;
}

const upload = (u: TrackingTestUser | null, body: FormData | string, headers: Record<string, string> = {}) =>
  api.call('POST', '/upload', u, { raw: body, headers });

async function fetchUrl(url: string, init?: RequestInit) {
  return api.fetch(new URL(url).pathname, init);
}

test('a PNG answers 200 {url}: an absolute URL anyone can fetch, and a tracking_uploads row names its owner', async (t) => {
  const u = await api.user();
  const res = await upload(u, form([{ data: await png(), name: 'holiday.bmp', type: 'image/bmp' }]));
  t.is(res.status, 200);
  t.regex(res.headers.get('content-type') ?? '', /^application\/ld\+json/);
  t.deepEqual(Object.keys(res.body), ['url']);
  const url: string = res.body.url;
  t.regex(url, new RegExp(`^${api.config.PUBLIC_URL}/v2/media/uploads/[A-Za-z0-9_-]{2}/[A-Za-z0-9_-]+\\.png$`));

  const media = await fetchUrl(url); // no key, no token
  t.is(media.status, 200);
  t.is(media.headers.get('content-type'), 'image/png');
  t.regex(media.headers.get('cache-control') ?? '', /max-age=31536000/);
  const meta = await sharp(Buffer.from(await media.arrayBuffer())).metadata();
  t.deepEqual([meta.format, meta.width, meta.height], ['png', 64, 48]);

  const row = await api.database.db
    .selectFrom('tracking_uploads')
    .selectAll()
    .where('user_id', '=', u.ldid)
    .executeTakeFirstOrThrow();
  t.is(`${api.config.PUBLIC_URL}/v2/media/${row.path.replace(/^tracking\//, '')}`, url);
  t.is(row.content_type, 'image/png');
  t.true(existsSync(path.join(api.config.STORAGE_DIR, row.path)));
  t.is(row.bytes, Number(media.headers.get('content-length')));
});

test('a JPEG stays JPEG (its metadata stripped), a BMP becomes PNG; each upload has its own URL', async (t) => {
  const u = await api.user();
  const withExif = await rgb(80, 60)
    .jpeg()
    .withExif({ IFD0: { Copyright: 'someone', Make: 'PhoneCo' } })
    .toBuffer();
  t.truthy((await sharp(withExif).metadata()).exif);
  const a = await upload(u, form([{ data: withExif, name: 'a.jpg' }]));
  t.is(a.status, 200);
  t.regex(a.body.url, /\.jpg$/);
  const stored = Buffer.from(await (await fetchUrl(a.body.url)).arrayBuffer());
  const meta = await sharp(stored).metadata();
  t.is(meta.format, 'jpeg');
  t.is(meta.exif, undefined);

  const b = await upload(u, form([{ data: bmpFile(20, 10), name: 'scan.bmp', type: 'image/bmp' }]));
  t.is(b.status, 200);
  t.regex(b.body.url, /\.png$/);
  const again = await upload(u, form([{ data: await jpeg(), name: 'a.jpg' }]));
  t.not(again.body.url, a.body.url);
});

test('not an image by its bytes is 415; a truncated or corrupt image is 422 naming file', async (t) => {
  const u = await api.user();
  const text = await upload(u, form([{ data: Buffer.from('hello, not a picture'), name: 'a.png', type: 'image/png' }]));
  t.is(text.status, 415);
  t.is(text.body['@type'], 'hydra:Error');
  t.regex(text.body['hydra:description'], /not a PNG, JPEG or BMP/);
  const gif = Buffer.from('R0lGODlhAQABAIAAAP///wAAACwAAAAAAQABAAACAkQBADs=', 'base64');
  t.is((await upload(u, form([{ data: gif, name: 'a.gif' }]))).status, 415);
  const cut = (await png(200, 200)).subarray(0, 100);
  const truncated = await upload(u, form([{ data: cut, name: 'a.png' }]));
  t.is(truncated.status, 422);
  t.is(truncated.body['@type'], 'ConstraintViolationList');
  t.is(truncated.body.violations[0].propertyPath, 'file');
});

test('decompression bombs are refused before decoding: a PNG or a BMP claiming too many pixels is 422', async (t) => {
  const u = await api.user();
  const side = Math.ceil(Math.sqrt(MAX_INPUT_PIXELS)) + 1;
  const bomb = await upload(u, form([{ data: await pngClaiming(side, side), name: 'a.png' }]));
  t.is(bomb.status, 422);
  t.regex(bomb.body.violations[0].message, new RegExp(`larger than ${MAX_INPUT_PIXELS} pixels`));
  const small = bmpFile(2, 2);
  small.writeInt32LE(60000, 18);
  small.writeInt32LE(60000, 22);
  const bmpBomb = await upload(u, form([{ data: small, name: 'a.bmp' }]));
  t.is(bmpBomb.status, 422);
  t.regex(bmpBomb.body.violations[0].message, /larger than/);
  t.is(
    await api.database.db.selectFrom('tracking_uploads').select('id').where('user_id', '=', u.ldid).executeTakeFirst(),
    undefined,
  );
});

test('missing or empty file, or a file in another field, is 400 (Missing file); several files 422; not multipart 415', async (t) => {
  const u = await api.user();
  const none = await upload(u, form([{ field: 'note', data: 'hello' }]));
  t.is(none.status, 400);
  t.is(none.body['@type'], 'hydra:Error');
  t.regex(none.body['hydra:description'], /No file was sent\nbody\.file: a file part named "file" is required/);
  const empty = await upload(u, form([{ data: Buffer.alloc(0), name: 'a.png' }]));
  t.is(empty.status, 400);
  t.regex(empty.body['hydra:description'], /the file is empty/);
  const elsewhere = await upload(u, form([{ field: 'image', data: await png(), name: 'a.png' }]));
  t.is(elsewhere.status, 400);
  t.regex(elsewhere.body['hydra:description'], /body\.image: unexpected file field/);
  const two = await upload(
    u,
    form([
      { data: await png(), name: 'a.png' },
      { data: await png(), name: 'b.png' },
    ]),
  );
  t.is(two.status, 422);
  t.deepEqual(two.body.violations, [{ propertyPath: 'file', message: 'exactly one file is allowed per request' }]);
  const json = await api.call('POST', '/upload', u, { body: { file: 'x' } });
  t.is(json.status, 415);
  t.is(json.body['@type'], 'hydra:Error');
  const nothing = await api.call('POST', '/upload', u);
  t.is(nothing.status, 415);
});

test('over the size limit is 413 in the Hydra format: declared too large, or just over the limit', async (t) => {
  const u = await api.user();
  const max = api.config.UPLOAD_MAX_BYTES;
  t.is(max, 3 * 1024 * 1024 - 1);
  const header = await png(8, 8);
  const huge = await upload(u, form([{ data: Buffer.concat([header, Buffer.alloc(8 * 1024 * 1024)]), name: 'a.png' }]));
  t.is(huge.status, 413);
  t.is(huge.body['@type'], 'hydra:Error');
  t.regex(huge.body['hydra:description'], /larger than the limit of 3145727 bytes/);
  const justOver = Buffer.concat([header, Buffer.alloc(max + 1 - header.length)]);
  t.is((await upload(u, form([{ data: justOver, name: 'a.png' }]))).status, 413);
  // At the limit, the size is fine (and the padding after IEND is dropped by the re-encoding).
  const atLimit = Buffer.concat([header, Buffer.alloc(max - header.length)]);
  const ok = await upload(u, form([{ data: atLimit, name: 'a.png' }]));
  t.is(ok.status, 200);
});

test('401 without the API key or the token, before the file is read', async (t) => {
  const u = await api.user();
  const noToken = await upload(null, form([{ data: await png(), name: 'a.png' }]));
  t.is(noToken.status, 401);
  t.is(noToken.body['@type'], 'hydra:Error');
  const noKey = await api.fetch('/v2/upload', {
    method: 'POST',
    headers: { authorization: `Bearer ${u.token}` },
    body: form([{ data: await png(), name: 'a.png' }]),
  });
  t.is(noKey.status, 401);
  t.is((await upload({ ...u, token: 'nope' }, form([{ data: await png(), name: 'a.png' }]))).status, 401);
});

test('/v2/media serves only stored tracking files: traversal, other folders, unknown names are 404 (Hydra)', async (t) => {
  const u = await api.user();
  const { url } = (await upload(u, form([{ data: await png(), name: 'a.png' }]))).body as { url: string };
  const pathname = new URL(url).pathname;
  const head = await api.fetch(pathname, { method: 'HEAD' });
  t.is(head.status, 200);
  const first = await api.fetch(pathname);
  await first.arrayBuffer();
  const conditional = await api.fetch(pathname, {
    headers: { 'if-none-match': first.headers.get('etag') ?? '', 'cache-control': 'max-age=0' },
  });
  t.is(conditional.status, 304);
  for (const p of [
    '/v2/media/uploads/zz/none.png',
    '/v2/media/../package.json',
    '/v2/media/uploads/..%2F..%2F..%2Fpackage.json',
    '/v2/media/%2e%2e/places/x.png',
    '/v2/media/.hidden.png',
    `${pathname.replace(/\.png$/, '.txt')}`,
  ]) {
    const res = await api.fetch(p);
    t.is(res.status, 404, p);
    t.regex(res.headers.get('content-type') ?? '', /^application\/ld\+json/, p);
  }
});

test('storeUpload (no HTTP) removes the written file when the row cannot be stored', async (t) => {
  const image = await normalizeImage(await png());
  const storage = mkdtempSync(path.join(tmpdir(), 'uploads-'));
  await t.throwsAsync(storeUpload(api.database.db, storage, 'no-such-user', image));
  const files = readdirSync(path.join(storage, TRACKING_STORAGE_ROOT), { recursive: true, withFileTypes: true });
  t.deepEqual(
    files.filter((f) => f.isFile()).map((f) => f.name),
    [],
  );
  rmSync(storage, { recursive: true, force: true });
});

test('/v2/upload and /v2/media are in /openapi.json with the multipart body and Hydra errors', async (t) => {
  const doc = (await (await api.fetch('/openapi.json')).json()) as {
    paths: Record<
      string,
      Record<string, { requestBody?: { content: Record<string, unknown> }; responses: Record<string, unknown> }>
    >;
  };
  const op = doc.paths['/v2/upload']?.post;
  t.truthy(op?.requestBody?.content['multipart/form-data']);
  t.deepEqual(Object.keys(op?.responses ?? {}).sort(), ['200', '400', '401', '409', '413', '415', '422']);
  t.truthy(doc.paths['/v2/media/{path}']?.get);
});
