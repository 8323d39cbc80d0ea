import { IncomingMessage } from 'node:http';
import { finished, type Readable } from 'node:stream';
import { createBrotliDecompress, createGunzip, createInflate } from 'node:zlib';
import type { Context } from 'koa';
import { badRequest, type HttpError, payloadTooLarge, unsupportedMediaType } from './errors.ts';

const DECOMPRESSORS: Record<string, () => NodeJS.ReadWriteStream> = {
  gzip: createGunzip,
  'x-gzip': createGunzip,
  deflate: createInflate,
  br: createBrotliDecompress,
};

export interface RawBodyOptions {
  /** Most bytes taken, after decompression: a small compressed body may not expand past it. */
  limit: number;
  /** The 413 to answer above the limit. */
  tooLarge?: () => HttpError;
  /** Accept gzip, deflate and br Content-Encoding (as the JSON body parser does); otherwise only identity. */
  decompress?: boolean;
}

/**
 * A request's body chunk by chunk, never more than `limit` bytes: a larger declared length is
 * refused unread, and the connection is closed rather than drained after a 413. Nothing is read
 * until the chunks are iterated (a large body goes to disk as it arrives).
 */
export async function* rawBodyChunks(ctx: Context, options: RawBodyOptions): AsyncGenerator<Buffer> {
  const { limit } = options;
  const refuse = () => {
    ctx.set('Connection', 'close');
    return options.tooLarge?.() ?? payloadTooLarge('The request body is larger than the limit');
  };
  const encoding = ctx.get('content-encoding').trim().toLowerCase() || 'identity';
  let source: Readable | NodeJS.ReadWriteStream = ctx.req;
  let corrupt = false;
  if (encoding !== 'identity') {
    const create = options.decompress ? DECOMPRESSORS[encoding] : undefined;
    if (!create)
      throw unsupportedMediaType(
        options.decompress
          ? `Content-Encoding ${encoding} is not accepted (gzip, deflate, br or none)`
          : `Send the body without Content-Encoding (${encoding} is not accepted)`,
      );
    const decompressor = create();
    decompressor.once('error', () => {
      corrupt = true;
    });
    // pipe() does not pass on the request's end: a client gone mid-body must end the reading too.
    finished(ctx.req, (error) => {
      if (error) (decompressor as unknown as Readable).destroy(error);
    });
    source = ctx.req.pipe(decompressor);
  } else if ((ctx.request.length ?? 0) > limit) {
    throw refuse();
  }
  let size = 0;
  try {
    for await (const chunk of source) {
      size += (chunk as Buffer).length;
      if (size > limit) throw refuse();
      yield chunk as Buffer;
    }
  } catch (error) {
    if (corrupt) throw badRequest(`The body is not valid ${encoding}`);
    throw error;
  }
}

/** A request's body as bytes, within `limit` (rawBodyChunks). */
export async function readRawBody(ctx: Context, options: RawBodyOptions): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of rawBodyChunks(ctx, options)) chunks.push(chunk);
  return Buffer.concat(chunks);
}

/**
 * A new request with `original`'s line and headers and no body yet, for a reader that comes
 * after the body was taken (a request stream can be read once): the caller pushes the bytes.
 */
export function requestCopy(original: IncomingMessage): IncomingMessage {
  const copy = new IncomingMessage(original.socket);
  copy.method = original.method;
  copy.url = original.url;
  copy.headers = original.headers;
  copy.rawHeaders = original.rawHeaders;
  copy.httpVersion = original.httpVersion;
  copy.httpVersionMajor = original.httpVersionMajor;
  copy.httpVersionMinor = original.httpVersionMinor;
  return copy;
}
