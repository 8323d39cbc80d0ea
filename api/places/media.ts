import Router from '@koa/router';
import type { Config } from '../../shared/config.ts';
import { sendStorageFile } from '../http/storage-files.ts';

/**
 * GET /media/<path>: the files under STORAGE_DIR (activity pictures and their thumbnails), 404 in
 * problem+json for anything we could not have written (api/http/storage-files.ts).
 */
export function mediaRouter(config: Pick<Config, 'STORAGE_DIR'>): Router {
  const router = new Router();
  router.get('/media/*path', async (ctx) => {
    ctx.state.errorFormat = 'problem';
    await sendStorageFile(ctx, config.STORAGE_DIR, String(ctx.params.path ?? ''));
  });
  return router;
}
