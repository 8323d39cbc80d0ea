import { z } from 'zod';
import type { AppContext } from '../context.ts';
import { errorResponse } from '../http/error-schemas.ts';
import { addOperation } from '../http/operation.ts';
import { ApiRouter } from '../http/route.ts';
import { sendStorageFile } from '../http/storage-files.ts';

/**
 * GET /media/<path>: the files under STORAGE_DIR (activity pictures and their thumbnails), 404 in
 * problem+json for anything we could not have written (api/http/storage-files.ts).
 */
export function mediaRouter(app: Pick<AppContext, 'config' | 'registry' | 'verifier' | 'db'>): ApiRouter {
  const router = new ApiRouter({
    prefix: '',
    errorFormat: 'problem',
    registry: app.registry,
    bodyLimitBytes: app.config.bodyLimitBytes,
    tag: 'places',
  });
  addOperation(router, app, {
    method: 'get',
    path: '/media/*path',
    params: z.object({ path: z.string().meta({ example: 'places/ab/cd/1-Ab12.jpg' }) }),
    access: 'public',
    success: { 200: { description: 'The image', alternates: { 'image/png': undefined, 'image/jpeg': undefined } } },
    writesResponse: true,
    spec: {
      summary: 'A stored activity picture or thumbnail',
      description:
        'The URLs of `image.url` and `image.thumbnail_url` (no credentials: their names are random). Cacheable for a year; ETag and Last-Modified answer conditional requests with 304.',
      responses: { 404: errorResponse('problem', 'No such file') },
      handler: ({ ctx, params }) => sendStorageFile(ctx, app.config.STORAGE_DIR, params.path),
    },
  });
  return router;
}
