import { createReadStream } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { z } from 'zod';
import type { AppContext } from '../context.ts';
import { errorResponse } from './error-schemas.ts';
import { addOperation } from './operation.ts';
import { ApiRouter } from './route.ts';

const require = createRequire(import.meta.url);
const assetsDir = path.dirname(require.resolve('swagger-ui-dist/package.json'));
const ASSETS: Record<string, string> = {
  'swagger-ui.css': 'text/css; charset=utf-8',
  'swagger-ui-bundle.js': 'application/javascript; charset=utf-8',
  'swagger-ui-standalone-preset.js': 'application/javascript; charset=utf-8',
  'favicon-32x32.png': 'image/png',
};

const PAGE = `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <title>Sports backend API</title>
  <link rel="stylesheet" href="/docs/assets/swagger-ui.css">
  <link rel="icon" href="/docs/assets/favicon-32x32.png">
</head>
<body>
  <div id="swagger-ui"></div>
  <script src="/docs/assets/swagger-ui-bundle.js"></script>
  <script src="/docs/assets/swagger-ui-standalone-preset.js"></script>
  <script src="/docs/init.js"></script>
</body>
</html>`;

// Kept out of the page so the Content-Security-Policy needs no inline script.
const INIT = `window.ui = SwaggerUIBundle({
  url: '/openapi.json', dom_id: '#swagger-ui', deepLinking: true,
  presets: [SwaggerUIBundle.presets.apis, SwaggerUIStandalonePreset], layout: 'StandaloneLayout'
});`;

/** /openapi.json and an interactive /docs page served from local swagger-ui assets (no CDN). */
export function docsRouter(app: Pick<AppContext, 'registry' | 'config' | 'verifier' | 'db'>): ApiRouter {
  const { config, registry } = app;
  const router = new ApiRouter({
    prefix: '',
    errorFormat: 'problem',
    registry,
    bodyLimitBytes: config.bodyLimitBytes,
    tag: 'documentation',
  });
  // Public files, written by their handlers.
  const file = (description: string, type: string) => ({
    access: 'public' as const,
    success: { 200: { description, alternates: { [type]: undefined } } },
    writesResponse: true,
  });
  addOperation(router, app, {
    method: 'get',
    path: '/openapi.json',
    ...file('The OpenAPI document', 'application/json'),
    spec: {
      summary: 'This OpenAPI 3.1 document: every operation of the services this process mounts',
      handler: ({ ctx }) => {
        ctx.body = registry.document(config.PUBLIC_URL);
      },
    },
  });
  addOperation(router, app, {
    method: 'get',
    path: '/docs',
    ...file('The page', 'text/html'),
    spec: {
      summary: 'The API documentation (Swagger UI) over /openapi.json',
      handler: ({ ctx }) => {
        ctx.type = 'text/html; charset=utf-8';
        ctx.body = PAGE;
      },
    },
  });
  addOperation(router, app, {
    method: 'get',
    path: '/docs/init.js',
    ...file('The script', 'application/javascript'),
    spec: {
      summary: 'The script of the documentation page',
      handler: ({ ctx }) => {
        ctx.type = 'application/javascript; charset=utf-8';
        ctx.body = INIT;
      },
    },
  });
  addOperation(router, app, {
    method: 'get',
    path: '/docs/assets/:file',
    params: z.object({ file: z.enum(Object.keys(ASSETS) as [string, ...string[]]) }),
    ...file('The asset', 'application/octet-stream'),
    spec: {
      summary: "The documentation page's styles, scripts and icon",
      responses: { 404: errorResponse('problem', 'No such asset') },
      handler: ({ ctx, params }) => {
        ctx.type = ASSETS[params.file] as string;
        ctx.set('Cache-Control', 'public, max-age=86400');
        ctx.body = createReadStream(path.join(assetsDir, params.file));
      },
    },
  });
  return router;
}
