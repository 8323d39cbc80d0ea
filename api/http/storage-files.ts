import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import path from 'node:path';
import type { Context } from 'koa';
import { MEDIA_TYPES, resolveStoragePath } from '../../shared/media/storage.ts';
import { notFound } from './errors.ts';

/**
 * Answers a GET or HEAD with a file under STORAGE_DIR (pictures and thumbnails we stored). Only
 * plain relative paths to files we could have written are served (no `..`, no dot files, known
 * image extensions); anything else is a 404 in the format of the calling service. File names are
 * random and a name's content never changes, so responses are cacheable for a year.
 */
export async function sendStorageFile(ctx: Context, storageDir: string, relative: string): Promise<void> {
  const type = MEDIA_TYPES[path.extname(relative).toLowerCase()];
  const full = type ? resolveStoragePath(storageDir, relative) : undefined;
  const info = full ? await stat(full).catch(() => undefined) : undefined;
  if (!full || !info?.isFile()) throw notFound(`No media file at ${ctx.path}`);
  ctx.set('Cache-Control', 'public, max-age=31536000, immutable');
  ctx.set('ETag', `"${info.size.toString(16)}-${Math.floor(info.mtimeMs).toString(16)}"`);
  ctx.lastModified = info.mtime;
  ctx.type = type as string;
  ctx.status = 200; // ctx.fresh only compares validators on a 2xx response
  if (ctx.fresh) {
    ctx.status = 304;
    return;
  }
  if (ctx.method === 'HEAD') {
    ctx.length = info.size;
    return;
  }
  ctx.body = createReadStream(full);
  ctx.length = info.size;
}
