import { existsSync } from 'node:fs';
import path from 'node:path';
import test from 'ava';
import bmp from 'bmp-js';
import { sql } from 'kysely';
import sharp from 'sharp';
import { startTestApi } from './helpers/app.ts';

const ctx = await startTestApi(null);
test.after.always(ctx.close);

const SPORT = 121; // running
const auth: Record<string, string> = {};
test.before(async () => {
  const user = await ctx.account(['user']);
  auth.authorization = `Bearer ${user.token}`;
});

/** An approved place with one activity (sport 121); returns its uuid. */
async function placeWithActivity(status: 'approved' | 'pending' = 'approved'): Promise<string> {
  const n = Math.random().toString(36).slice(2, 8);
  const place = await ctx.database.db
    .insertInto('places')
    .values({
      slug: `track-${n}`,
      name: `Track ${n}`,
      geom: sql`ST_SetSRID(ST_MakePoint(2.35, 48.85), 4326)`,
      country: 'FR',
      status,
    })
    .returning(['id', 'uuid'])
    .executeTakeFirstOrThrow();
  await ctx.database.db.insertInto('place_activities').values({ place_id: place.id, sport_id: SPORT }).execute();
  return place.uuid;
}

const rgb = (width: number, height: number, color = { r: 200, g: 30, b: 60 }) =>
  sharp({ create: { width, height, channels: 3, background: color } });

const png = (w = 640, h = 480) => rgb(w, h).png().toBuffer();
const jpeg = (w = 800, h = 600) => rgb(w, h).jpeg().toBuffer();

/** A 24-bit BMP made with bmp-js (which takes A,B,G,R pixels). */
async function bmpFile(width: number, height: number, color = { r: 10, g: 120, b: 240 }): Promise<Buffer> {
  const data = Buffer.alloc(width * height * 4);
  for (let i = 0; i < data.length; i += 4) {
    data[i] = 0;
    data[i + 1] = color.b;
    data[i + 2] = color.g;
    data[i + 3] = color.r;
  }
  return bmp.encode({ data, width, height }).data;
}

function form(parts: { field?: string; data: Buffer | string; name?: string; type?: string }[]): FormData {
  const body = new FormData();
  for (const p of parts) {
    if (typeof p.data === 'string' && !p.name) body.append(p.field ?? 'file', p.data);
    else body.append(p.field ?? 'file', new Blob([p.data], { type: p.type ?? 'application/octet-stream' }), p.name);
  }
  return body;
}

const uploadPath = (place: string, sport: number | string = SPORT) => `/v1/places/${place}/activities/${sport}/images`;

function upload(place: string, body: FormData | Buffer | string, headers: Record<string, string> = auth) {
  return ctx.fetch(uploadPath(place), { method: 'POST', headers, body });
}

/** The fields the tests read from activity and problem+json bodies. */
interface Body {
  sport_id: number;
  image: { url: string; thumbnail_url: string | null };
  detail: string;
  errors: { path: string; message: string }[];
}
const json = (res: Response) => res.json() as Promise<Body>;

async function fetchMedia(url: string): Promise<Response> {
  const { pathname } = new URL(url);
  return ctx.fetch(pathname);
}

test('a PNG upload answers 201 with the activity and a fetchable image.url; a thumbnail job is stored', async (t) => {
  const place = await placeWithActivity();
  const res = await upload(place, form([{ data: await png(), name: 'holiday.bmp', type: 'image/bmp' }]));
  t.is(res.status, 201);
  const body = await json(res);
  t.is(body.sport_id, SPORT);
  t.regex(body.image.url, new RegExp(`^${ctx.config.PUBLIC_URL}/media/places/${place}/${SPORT}/[A-Za-z0-9_-]+\\.png$`));
  t.is(body.image.thumbnail_url, null);
  t.is(res.headers.get('location'), body.image.url);

  const media = await fetchMedia(body.image.url);
  t.is(media.status, 200);
  t.is(media.headers.get('content-type'), 'image/png');
  t.regex(media.headers.get('cache-control') ?? '', /max-age=31536000/);
  const meta = await sharp(Buffer.from(await media.arrayBuffer())).metadata();
  t.deepEqual([meta.format, meta.width, meta.height], ['png', 640, 480]);

  const row = await ctx.database.db
    .selectFrom('place_activities as a')
    .innerJoin('places as p', 'p.id', 'a.place_id')
    .select(['a.id', 'a.image_path'])
    .where('p.uuid', '=', place)
    .executeTakeFirstOrThrow();
  t.is(`${ctx.config.PUBLIC_URL}/media/${row.image_path}`, body.image.url);
  const job = await ctx.database.db
    .selectFrom('outbox')
    .select(['queue', 'job_name', 'job_id', 'payload'])
    .where('queue', '=', 'thumbnails')
    .where(sql<boolean>`payload->>'imagePath' = ${row.image_path}`)
    .executeTakeFirstOrThrow();
  t.is(job.job_name, 'activity-thumbnail');
  t.false(job.job_id.includes(':'));
  t.deepEqual(job.payload, { activityId: row.id, imagePath: row.image_path });
});

test('a JPEG is stored as JPEG, whatever its name and declared type', async (t) => {
  const place = await placeWithActivity();
  const res = await upload(place, form([{ field: 'image', data: await jpeg(), name: 'x.txt', type: 'text/plain' }]));
  t.is(res.status, 201);
  const body = await json(res);
  t.regex(body.image.url, /\.jpg$/);
  const media = await fetchMedia(body.image.url);
  t.is(media.headers.get('content-type'), 'image/jpeg');
  const meta = await sharp(Buffer.from(await media.arrayBuffer())).metadata();
  t.deepEqual([meta.format, meta.width, meta.height], ['jpeg', 800, 600]);
});

test('a BMP is converted to PNG with the same pixels', async (t) => {
  const place = await placeWithActivity();
  const res = await upload(place, form([{ data: await bmpFile(33, 17), name: 'scan.png', type: 'image/png' }]));
  t.is(res.status, 201);
  const body = await json(res);
  t.regex(body.image.url, /\.png$/);
  const media = await fetchMedia(body.image.url);
  const { data, info } = await sharp(Buffer.from(await media.arrayBuffer()))
    .raw()
    .toBuffer({ resolveWithObject: true });
  t.deepEqual([info.width, info.height], [33, 17]);
  t.deepEqual([...data.subarray(0, 3)], [10, 120, 240]);
});

test('text named .png is refused with 415, by content', async (t) => {
  const place = await placeWithActivity();
  const res = await upload(
    place,
    form([{ data: Buffer.from('not an image at all'), name: 'a.png', type: 'image/png' }]),
  );
  t.is(res.status, 415);
  t.is(res.headers.get('content-type'), 'application/problem+json');
  const body = await json(res);
  t.regex(body.detail, /PNG, JPEG or BMP/);
});

test('other image types (GIF) are 415; a truncated PNG is 422', async (t) => {
  const place = await placeWithActivity();
  const gif = await rgb(10, 10).gif().toBuffer();
  t.is((await upload(place, form([{ data: gif, name: 'a.png' }]))).status, 415);
  const cut = (await png()).subarray(0, 200);
  const res = await upload(place, form([{ data: cut, name: 'a.png' }]));
  t.is(res.status, 422);
  t.is((await json(res)).errors[0]?.path, 'body.file');
});

test('over the size limit is 413: a body declared too large, and a file just over the limit', async (t) => {
  const place = await placeWithActivity();
  const max = ctx.config.UPLOAD_MAX_BYTES;
  t.is(max, 3 * 1024 * 1024 - 1);
  const header = await png(8, 8);
  const huge = Buffer.concat([header, Buffer.alloc(8 * 1024 * 1024)]);
  const res = await upload(place, form([{ data: huge, name: 'big.png' }]));
  t.is(res.status, 413);
  t.regex((await json(res)).detail, /larger than the limit/);

  const justOver = Buffer.concat([header, Buffer.alloc(max + 1 - header.length)]);
  const res2 = await upload(place, form([{ data: justOver, name: 'big.png' }]));
  t.is(res2.status, 413);
  t.is(res2.headers.get('content-type'), 'application/problem+json');
});

test('a streamed upload without Content-Length is cut off at the limit', async (t) => {
  const place = await placeWithActivity();
  const boundary = 'xxBOUNDARYxx';
  const chunk = Buffer.alloc(256 * 1024, 1);
  let sent = 0;
  const stream = new ReadableStream<Uint8Array>({
    start(controller) {
      controller.enqueue(
        Buffer.from(
          `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="a.png"\r\nContent-Type: image/png\r\n\r\n`,
        ),
      );
    },
    pull(controller) {
      // 20 MB in total unless the server stops reading first.
      if (sent >= 20 * 1024 * 1024) {
        controller.enqueue(Buffer.from(`\r\n--${boundary}--\r\n`));
        controller.close();
        return;
      }
      sent += chunk.length;
      controller.enqueue(chunk);
    },
  });
  const res = await ctx.fetch(uploadPath(place), {
    method: 'POST',
    headers: { ...auth, 'content-type': `multipart/form-data; boundary=${boundary}` },
    body: stream,
    duplex: 'half',
  } as RequestInit);
  t.is(res.status, 413);
});

test('no file, an empty file, two files, a wrong field name, or no multipart body are 4xx', async (t) => {
  const place = await placeWithActivity();
  const none = await upload(place, form([{ field: 'note', data: 'hello' }]));
  t.is(none.status, 422);
  t.deepEqual((await json(none)).errors, [{ path: 'body.file', message: 'a file part named "file" is required' }]);

  const empty = await upload(place, form([{ data: Buffer.alloc(0), name: 'a.png' }]));
  t.is(empty.status, 422);
  t.deepEqual((await json(empty)).errors, [{ path: 'body.file', message: 'the file is empty' }]);

  const two = await upload(
    place,
    form([
      { data: await png(), name: 'a.png' },
      { data: await png(), name: 'b.png' },
    ]),
  );
  t.is(two.status, 422);
  t.regex((await json(two)).errors[0]?.message ?? '', /exactly one file/);

  const wrongField = await upload(place, form([{ field: 'photo', data: await png(), name: 'a.png' }]));
  t.is(wrongField.status, 422);
  t.is((await json(wrongField)).errors[0]?.path, 'body.photo');

  // A text field beside the picture is named, never silently dropped.
  const extra = await upload(
    place,
    form([
      { data: await png(), name: 'a.png' },
      { field: 'caption', data: 'hi' },
    ]),
  );
  t.is(extra.status, 422);
  t.is((await json(extra)).errors[0]?.path, 'body.caption');

  const notMultipart = await upload(place, JSON.stringify({ file: 'x' }), {
    ...auth,
    'content-type': 'application/json',
  });
  t.is(notMultipart.status, 415);
});

test('401 without or with a bad token, before any upload is read', async (t) => {
  const place = await placeWithActivity();
  const res = await upload(place, form([{ data: await png(), name: 'a.png' }]), {});
  t.is(res.status, 401);
  t.is(res.headers.get('content-type'), 'application/problem+json');
  const bad = await upload(place, form([{ data: await png(), name: 'a.png' }]), { authorization: 'Bearer nope' });
  t.is(bad.status, 401);
});

test('404 for an unknown place, an unknown activity, a malformed id, or a pending place of someone else', async (t) => {
  const place = await placeWithActivity();
  const file = await png();
  const send = (p: string) =>
    ctx.fetch(p, { method: 'POST', headers: auth, body: form([{ data: file, name: 'a.png' }]) });
  for (const p of [
    uploadPath('6f1c1b1e-0000-4000-8000-000000000000'),
    uploadPath(place, 10),
    uploadPath(place, 'running'),
    uploadPath('not-a-uuid'),
  ]) {
    const res = await send(p);
    t.is(res.status, 404, p);
    t.is(res.headers.get('content-type'), 'application/problem+json');
  }
  const pending = await placeWithActivity('pending');
  t.is((await send(uploadPath(pending))).status, 404);
  const staff = await ctx.account(['staff']);
  const asStaff = await ctx.fetch(uploadPath(pending), {
    method: 'POST',
    headers: { authorization: `Bearer ${staff.token}` },
    body: form([{ data: file, name: 'a.png' }]),
  });
  t.is(asStaff.status, 201);
});

test('a new picture replaces the previous one, whose file is removed', async (t) => {
  const place = await placeWithActivity();
  const first = await json(await upload(place, form([{ data: await png(), name: 'a.png' }])));
  const second = await json(await upload(place, form([{ data: await jpeg(), name: 'b.jpg' }])));
  t.not(first.image.url, second.image.url);
  t.is((await fetchMedia(first.image.url)).status, 404);
  t.is((await fetchMedia(second.image.url)).status, 200);
  const relative = new URL(first.image.url).pathname.replace('/media/', '');
  t.false(existsSync(path.join(ctx.config.STORAGE_DIR, relative)));
});

test('/media refuses traversal and unknown files with a problem+json 404', async (t) => {
  for (const p of [
    '/media/../package.json',
    '/media/%2e%2e/%2e%2e/etc/passwd',
    '/media/places/..%2F..%2Fetc%2Fpasswd',
    '/media/.hidden.png',
    '/media/places/none.png',
    '/media/places/a.txt',
  ]) {
    const res = await ctx.fetch(p);
    t.is(res.status, 404, p);
    t.is(res.headers.get('content-type'), 'application/problem+json', p);
  }
});

test('/media answers 304 to a conditional request and HEAD without a body', async (t) => {
  const place = await placeWithActivity();
  const { image } = await json(await upload(place, form([{ data: await png(), name: 'a.png' }])));
  const first = await fetchMedia(image.url);
  const etag = first.headers.get('etag') ?? '';
  await first.arrayBuffer();
  const again = await ctx.fetch(new URL(image.url).pathname, {
    // fetch adds `Cache-Control: no-cache` to conditional requests unless one is given.
    headers: { 'if-none-match': etag, 'cache-control': 'max-age=0' },
  });
  t.is(again.status, 304);
  const head = await ctx.fetch(new URL(image.url).pathname, { method: 'HEAD' });
  t.is(head.status, 200);
  t.is(head.headers.get('content-length'), first.headers.get('content-length'));
});

test('the upload route is in /openapi.json', async (t) => {
  const doc = (await (await ctx.fetch('/openapi.json')).json()) as {
    paths: Record<string, { post?: { responses: Record<string, unknown> } }>;
  };
  const op = doc.paths['/v1/places/{place_id}/activities/{activity_id}/images']?.post;
  t.truthy(op);
  t.deepEqual(Object.keys(op?.responses ?? {}).sort(), ['201', '401', '404', '413', '415', '422']);
});
